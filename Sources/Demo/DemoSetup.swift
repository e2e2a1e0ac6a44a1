import Foundation
import HeraldCore
import Logging
import PostgresNIO
import Store

/// A fresh database with the schema and the sample data, for the demo.
public struct DemoSetup: Sendable {
    public let server: DatabaseConfiguration
    public let database: String
    public let sqlFiles: SQLFiles
    public let logger: Logger

    public init(server: DatabaseConfiguration, database: String, sqlFiles: SQLFiles, logger: Logger) {
        self.server = server
        self.database = database
        self.sqlFiles = sqlFiles
        self.logger = logger
    }

    /// Drops and recreates the demo database, migrates it and loads the sample data.
    public func prepare() async throws -> DatabaseConfiguration {
        guard database.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }), !database.isEmpty else {
            throw ConfigurationError("the demo database name may hold only letters, digits and _")
        }
        let logger = self.logger
        let name = database
        try await withPostgres(server, logger: logger) { client in
            try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"), logger: logger)
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        }
        let target = server.with(database: database)
        let files = sqlFiles
        try await withPostgres(target, logger: logger) { client in
            try await Migrator(files: files).migrate(client: client, logger: logger)
            try await SQLScript.run("sample_data.sql", in: files, on: client, logger: logger)
        }
        return target
    }

    /// One payload of each campaign, pretty enough to read.
    public static func printExamples(_ path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { return }
        var seen = Set<Int>()
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                  let campaign = object["campaign"] as? Int, object["payload"] != nil, !seen.contains(campaign) else { continue }
            seen.insert(campaign)
            let pretty = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            print("\nexample payload of campaign \(campaign):")
            print(String(decoding: pretty, as: UTF8.self))
        }
    }
}
