import Foundation
import HeraldCore
import Logging
import NIOSSL
import PostgresNIO

/// Where the database is: parsed from `DATABASE_URL`, a URL as libpq writes it:
/// `postgres://user:password@host:port/database?sslmode=…&target_session_attrs=…`, with one
/// host or several (`host1:port1,host2:port2`, tried in order, as libpq does).
public struct DatabaseConfiguration: Sendable, CustomStringConvertible {
    /// One server of the URL.
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int = 5432) {
            self.host = host
            self.port = port
        }

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// Which of several servers a process uses (libpq's `target_session_attrs`, the values that
    /// make sense for a process that writes or only reads).
    public enum TargetSession: String, Sendable, CaseIterable {
        /// The first server that accepts a connection (libpq's default).
        case any
        /// The first server that takes writes: not a standby, not `default_transaction_read_only`.
        case readWrite = "read-write"
        /// The first server that is not in recovery.
        case primary
    }

    public var endpoints: [Endpoint]
    public var username: String
    public var password: String?
    public var database: String
    public var sslMode: String
    public var targetSession: TargetSession
    public var maxConnections: Int
    /// `application_name` of the connections: what the audit of campaign
    /// status changes (and `pg_stat_activity`) shows.
    public var applicationName = "herald"

    /// The first server of the URL.
    public var host: String { endpoints[0].host }
    public var port: Int { endpoints[0].port }

    static let shape = "DATABASE_URL must look like postgres://user@host:port/database (several servers: host1:port1,host2:port2)"

    public init(url: String, maxConnections: Int = 10) throws(ConfigurationError) {
        // URLComponents takes one host only: the authority is read here, the rest by it.
        guard let schemeEnd = url.range(of: "://"),
              ["postgres", "postgresql"].contains(url[..<schemeEnd.lowerBound].lowercased())
        else { throw ConfigurationError(Self.shape, key: "DATABASE_URL") }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let (userInfo, hostList): (Substring?, Substring) = authority.lastIndex(of: "@").map {
            (authority[..<$0], authority[authority.index(after: $0)...])
        } ?? (nil, authority)
        guard let components = URLComponents(string: "postgres://h" + rest[authorityEnd...]) else {
            throw ConfigurationError(Self.shape, key: "DATABASE_URL")
        }
        self.endpoints = try Self.endpoints(hostList)
        let user = userInfo.map { $0.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false) }
        self.username = user?.first.flatMap { String($0).removingPercentEncoding }.flatMap { $0.isEmpty ? nil : $0 } ?? "postgres"
        self.password = user.flatMap { $0.count > 1 ? String($0[1]).removingPercentEncoding : nil }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.database = path.removingPercentEncoding.flatMap { $0.isEmpty ? nil : $0 } ?? self.username
        let query = components.queryItems ?? []
        self.sslMode = query.first(where: { $0.name == "sslmode" })?.value ?? Self.defaultSSLMode(endpoints)
        guard ["disable", "prefer", "require"].contains(sslMode) else {
            throw ConfigurationError("DATABASE_URL sslmode must be disable, prefer or require, not \(sslMode)", key: "DATABASE_URL")
        }
        let target = query.first(where: { $0.name == "target_session_attrs" })?.value ?? "any"
        guard let targetSession = TargetSession(rawValue: target) else {
            let known = TargetSession.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError("DATABASE_URL target_session_attrs must be one of \(known), not \(target)", key: "DATABASE_URL")
        }
        self.targetSession = targetSession
        self.maxConnections = maxConnections
    }

    /// `host`, `host:port`, `[v6]:port`, separated by commas.
    private static func endpoints(_ list: Substring) throws(ConfigurationError) -> [Endpoint] {
        var endpoints: [Endpoint] = []
        for item in list.split(separator: ",", omittingEmptySubsequences: false) {
            var host = item
            var port: Substring?
            if item.hasPrefix("["), let close = item.firstIndex(of: "]") {
                host = item[item.index(after: item.startIndex)..<close]
                let after = item[item.index(after: close)...]
                if after.hasPrefix(":") { port = after.dropFirst() } else if !after.isEmpty { throw ConfigurationError(Self.shape, key: "DATABASE_URL") }
            } else if let colon = item.lastIndex(of: ":") {
                host = item[..<colon]
                port = item[item.index(after: colon)...]
            }
            guard !host.isEmpty else { throw ConfigurationError(Self.shape, key: "DATABASE_URL") }
            let number = try port.map { (text: Substring) throws(ConfigurationError) -> Int in
                guard let n = Int(text), (1...65535).contains(n) else {
                    throw ConfigurationError("DATABASE_URL port must be a number from 1 to 65535, not \(text)", key: "DATABASE_URL")
                }
                return n
            } ?? 5432
            endpoints.append(Endpoint(host: String(host).removingPercentEncoding ?? String(host), port: number))
        }
        return endpoints
    }

    private static func defaultSSLMode(_ endpoints: [Endpoint]) -> String {
        endpoints.allSatisfy { ["127.0.0.1", "localhost", "::1"].contains($0.host) } ? "disable" : "prefer"
    }

    /// The same servers, another database.
    public func with(database: String) -> DatabaseConfiguration {
        var c = self
        c.database = database
        return c
    }

    /// The URL without the password: what a child process is given as `DATABASE_URL` when it
    /// logs in without one.
    public var description: String {
        var query: [String] = []
        if sslMode != Self.defaultSSLMode(endpoints) { query.append("sslmode=\(sslMode)") }
        if targetSession != .any { query.append("target_session_attrs=\(targetSession.rawValue)") }
        let hosts = endpoints.map(\.description).joined(separator: ",")
        return "postgres://\(username)@\(hosts)/\(database)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    var tls: PostgresClient.Configuration.TLS {
        switch sslMode {
        case "disable": .disable
        case "require": .require(.makeClientConfiguration())
        default: .prefer(.makeClientConfiguration())
        }
    }

    /// A pool's configuration for one of the servers.
    func clientConfiguration(_ endpoint: Endpoint) -> PostgresClient.Configuration {
        var c = PostgresClient.Configuration(host: endpoint.host, port: endpoint.port, username: username,
                                             password: password, database: database, tls: tls)
        c.options.maximumConnections = maxConnections
        c.options.minimumConnections = 0
        c.options.additionalStartupParameters = [("application_name", applicationName)]
        return c
    }

    /// One connection's configuration for one of the servers (the check of which server to use).
    func connectionConfiguration(_ endpoint: Endpoint) throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS = switch sslMode {
        case "disable": .disable
        case "require": .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var c = PostgresConnection.Configuration(host: endpoint.host, port: endpoint.port, username: username,
                                                 password: password, database: database, tls: tls)
        c.options.connectTimeout = .seconds(3)
        c.options.additionalStartupParameters = [("application_name", applicationName)]
        return c
    }

    public func makeClient(logger: Logger) -> Database {
        Database(configuration: self, logger: logger)
    }
}
