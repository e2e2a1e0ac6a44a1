import Foundation

/// An HTTP request as plain values: the extension turns it into a `URLRequest`
/// (`urlRequest`, on Apple platforms), tests read it directly.
///
/// ``ReplyRequestBuilder`` and ``AppRequestBuilder`` both make these.
public struct ReplyHTTPRequest: Sendable {
    /// The full URL.
    public var url: URL
    /// The HTTP method: `POST`, `PUT`, `DELETE` or `GET`.
    public var method: String
    /// The headers, in order.
    public var headers: [(name: String, value: String)]
    /// The body; empty for `GET` and `DELETE`.
    public var body: Data

    /// A request from its parts.
    public init(url: URL, method: String, headers: [(name: String, value: String)], body: Data) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }

    /// The first header named `name`, compared case-insensitively.
    public func value(forHeader name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

#if !canImport(FoundationNetworking)
extension ReplyHTTPRequest {
    /// The request for `URLSession`.
    public var urlRequest: URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for header in headers {
            request.addValue(header.value, forHTTPHeaderField: header.name)
        }
        request.httpBody = body
        return request
    }
}
#endif
