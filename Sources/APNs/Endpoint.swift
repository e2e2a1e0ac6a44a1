import Foundation

/// A host and port to connect to.
struct Endpoint: Hashable, Sendable {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `https://host[:port]` (a trailing slash is allowed; IPv6 in brackets).
    init?(url: String) {
        var rest = Substring(url)
        if rest.hasPrefix("https://") { rest = rest.dropFirst("https://".count) } else { return nil }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/") else { return nil }
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            self.host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if after.isEmpty {
                self.port = 443
            } else if after.hasPrefix(":"), let port = Int(after.dropFirst()), (1...65535).contains(port) {
                self.port = port
            } else {
                return nil
            }
        } else if let colon = rest.lastIndex(of: ":") {
            guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port) else { return nil }
            self.host = String(rest[..<colon])
            self.port = port
        } else {
            self.host = String(rest)
            self.port = 443
        }
        guard !host.isEmpty else { return nil }
    }

    /// The `:authority` pseudo-header value.
    var authority: String {
        let shownHost = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return port == 443 ? shownHost : "\(shownHost):\(port)"
    }

    /// True for IPv4/IPv6 literals, which cannot go into SNI.
    var isIPAddress: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
