import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// Where the database is: parsed from `DATABASE_URL`
/// (`postgres://user:password@host:port/database?sslmode=disable|prefer|require`).
public struct DatabaseConfiguration: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var sslMode: String
    public var maxConnections: Int
    /// `application_name` of the connections: what the audit of campaign
    /// status changes (and `pg_stat_activity`) shows.
    public var applicationName = "herald"

    public init(url: String, maxConnections: Int = 10) throws(StoreError) {
        guard let components = URLComponents(string: url),
              components.scheme == "postgres" || components.scheme == "postgresql",
              let host = components.host, !host.isEmpty
        else {
            throw StoreError.configuration("DATABASE_URL must look like postgres://user@host:port/database")
        }
        self.host = host
        self.port = components.port ?? 5432
        self.username = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        self.password = components.password.flatMap { $0.removingPercentEncoding }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.database = path.isEmpty ? self.username : path
        let isLocal = host == "127.0.0.1" || host == "localhost" || host == "::1"
        self.sslMode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? (isLocal ? "disable" : "prefer")
        guard ["disable", "prefer", "require"].contains(sslMode) else {
            throw StoreError.configuration("DATABASE_URL sslmode must be disable, prefer or require, not \(sslMode)")
        }
        self.maxConnections = maxConnections
    }

    /// The same server, another database.
    public func with(database: String) -> DatabaseConfiguration {
        var c = self
        c.database = database
        return c
    }

    /// Never shows the password.
    public var description: String {
        "postgres://\(username)@\(host):\(port)/\(database)"
    }

    public var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "require": tls = .require(.makeClientConfiguration())
        default: tls = .prefer(.makeClientConfiguration())
        }
        var c = PostgresClient.Configuration(host: host, port: port, username: username,
                                             password: password, database: database, tls: tls)
        c.options.maximumConnections = maxConnections
        c.options.minimumConnections = 0
        c.options.additionalStartupParameters = [("application_name", applicationName)]
        return c
    }

    public func makeClient(logger: Logger) -> PostgresClient {
        PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
    }
}
