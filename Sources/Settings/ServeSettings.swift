import APNs
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HeraldCore
import Logging
import Store

/// What `herald serve` is told (docs/operators.md, "Configuration" and "Security"). A
/// value left nil keeps the app server's own default (`AppServerLimits`); a value
/// given but not valid is refused, naming its variable.
public struct ServeSettings: Sendable, CustomStringConvertible {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Requests a second from one client address, and the burst allowed.
    public var ratePerAddress: Int?
    public var rateAddressBurst: Int?
    /// Replies a minute to one delivery; requests a minute about one device.
    public var ratePerDelivery: Int?
    public var ratePerDevice: Int?
    public var maxConnections: Int?
    public var maxConnectionsPerAddress: Int?
    public var headerTimeout: Duration?
    public var bodyTimeout: Duration?
    public var maxHeaderBytes: Int?
    /// Addresses of reverse proxies whose `X-Forwarded-For` is believed.
    public var trustedProxies: [String] = []
    /// The PEM public key that verifies the app backend's registration
    /// tokens, and where it came from (for messages). Not a secret, but
    /// not printed either.
    public var appJWTPublicKeyPEM: String?
    public var appJWTPublicKeySource: String?

    public init() {}

    public init(environment env: [String: String]) throws {
        try self.init(source: ConfigurationSource(environment: env))
    }

    public init(source: ConfigurationSource) throws {
        if let host = source.text(.httpHost) { self.host = host.text }
        port = try source.number(.httpPort)
        ratePerAddress = try source.int(.rateAddress)
        rateAddressBurst = try source.int(.rateAddressBurst)
        ratePerDelivery = try source.int(.rateDelivery)
        ratePerDevice = try source.int(.rateDevice)
        maxConnections = try source.int(.httpMaxConnections)
        maxConnectionsPerAddress = try source.int(.httpMaxConnectionsPerAddress)
        headerTimeout = try source.int(.httpHeaderTimeout).map { .seconds($0) }
        bodyTimeout = try source.int(.httpBodyTimeout).map { .seconds($0) }
        maxHeaderBytes = try source.int(.httpMaxHeaderBytes)
        if let list = source.text(.trustedProxies) {
            for item in list.text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
                guard Self.isIPAddress(item) else {
                    throw ConfigurationError(
                        "\(list.label) must list IP addresses separated by commas; \"\(item)\" is not one")
                }
                trustedProxies.append(item)
            }
        }
        if let pem = source.text(.appJWTPublicKey) {
            // A PEM passed through an environment file often has its line breaks written as \n.
            appJWTPublicKeyPEM = pem.text.replacingOccurrences(of: "\\n", with: "\n")
            appJWTPublicKeySource = pem.label
        } else if let path = source.text(.appJWTPublicKeyFile) {
            guard let data = FileManager.default.contents(atPath: path.text) else {
                throw ConfigurationError("\(path.label): cannot read \(path.text)")
            }
            appJWTPublicKeyPEM = String(decoding: data, as: UTF8.self)
            appJWTPublicKeySource = "\(path.label) (\(path.text))"
        }
    }

    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    public var description: String {
        "\(host):\(port) app-jwt-key=\(appJWTPublicKeySource ?? "none")"
    }
}
