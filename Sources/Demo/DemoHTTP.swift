import AsyncHTTPClient
import ExtensionKit
import Foundation
import NIOCore
import NIOHTTP1

/// The demo's devices and apps talk to `herald serve` through this one call.
enum DemoHTTP {
    struct Response: Sendable {
        var status: Int
        var body: Data
        var etag: String?
    }

    /// The largest answer read (a notification config is a few kB).
    static let maxBody = 4 << 20

    static func send(_ request: ReplyHTTPRequest) async throws -> Response {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if !request.body.isEmpty { outgoing.body = .bytes(ByteBuffer(bytes: request.body)) }
        let response = try await HTTPClient.shared.execute(outgoing, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: maxBody)
        return Response(status: Int(response.status.code), body: Data(body.readableBytesView), etag: response.headers.first(name: "ETag"))
    }
}
