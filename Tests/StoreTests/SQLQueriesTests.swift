import Foundation
import PostgresNIO
@testable import Store
import Testing
import TestSupport

/// The statements of `Sql/queries/`: read by name, their named parameters numbered in order
/// of first use, and each one a statement PostgreSQL prepares against the migrated schema.
@Suite("Statements filed in Sql/queries")
struct SQLQueriesTests {
    @Test("named parameters are numbered by first use; casts, quoted text and comments are left alone")
    func namedParametersBecomePositional() throws {
        let statements = try SQLQueries.parse(file: "demo", text: """
            -- A file's opening comment belongs to no statement.
            -- name: first
            -- Why it exists.
            SELECT :b::int8, ':not', "odd:name", :a -- :nor
            WHERE x = :b AND {{rule}};

            -- name: second
            SELECT 1
            """)
        #expect(statements.map(\.name) == ["demo/first", "demo/second"])
        let first = try #require(statements.first)
        #expect(first.parameters == ["b", "a"])
        #expect(first.fragments == ["rule"])
        #expect(first.text.hasSuffix("WHERE x = $1 AND {{rule}}"))
        #expect(first.text.contains(#"SELECT $1::int8, ':not', "odd:name", $2 -- :nor"#))
        let query = try first.query(["a": .value(Int64(7)), "b": .value(Int64(8))], fragments: ["rule": "$3 > 0"]) {
            $0.append(Int64(9))
        }
        #expect(query.binds.count == 3)
        #expect(query.sql.hasSuffix("WHERE x = $1 AND $3 > 0"))
        // A missing or unknown parameter, or a fragment left unfilled, is refused.
        #expect(throws: StoreError.self) { try first.query(["a": .value(Int64(7))], fragments: ["rule": "true"]) }
        #expect(throws: StoreError.self) {
            try first.query(["a": .value(Int64(7)), "b": .value(Int64(8)), "c": .value(true)], fragments: ["rule": "true"])
        }
        #expect(throws: StoreError.self) { try first.query(["a": .value(Int64(7)), "b": .value(Int64(8))]) }
        // A fragment that names a parameter, given after numbering, is refused: it would reach
        // PostgreSQL as `:c`.
        #expect(throws: StoreError.self) {
            try first.query(["a": .value(Int64(7)), "b": .value(Int64(8))], fragments: ["rule": ":c > 0"])
        }
        // A fragment filled before numbering may name parameters of its own.
        let filled = try first.filling(["rule": ":c"])
        #expect(filled.parameters == ["b", "a", "c"])
        #expect(filled.fragments.isEmpty)
    }

    /// What a test fills each fragment with: the simplest text code gives it.
    static let neutralFragments = [
        "capped": "SELECT NULL::bigint AS user_id WHERE false",
        "users": "JOIN users u ON u.id = dv.user_id",
        "conflict": "",
        "segment": "true",
        "given_back": DeliveryLedger.givenBack("d"),
        "which_series": "true",
        "test_columns": "id",
        "claimable_window": "true",
        "claimable": "true",
        "not_of_apps": "true",
        "ended": "false",
        "token_join": "",
        "token_column": "NULL::text",
        "personal_joins": "",
        "personal_returning": "",
        "personal_selected": "",
        "partitions": "true",
        "cancelled": "false",
        "columns": "",
        "recipients": "",
        "codes": "",
        "key_set": "",
        "enabled": "true",
        "segment_cases": "",
    ]

    @Test("every statement of Sql/queries prepares against the migrated schema")
    func everyStatementPrepares() async throws {
        let statements = try SQLQueries.load(.directory(TestDatabase.sqlDirectory))
        #expect(!statements.isEmpty)
        #expect(Set(statements.keys) == Set(try SQLQueries.all.get().keys), "the binary carries the files of Sql/queries")
        try await TestDatabase.with { client, _ in
            for (index, (name, statement)) in statements.sorted(by: { $0.key < $1.key }).enumerated() {
                var text = statement.text
                for fragment in statement.fragments {
                    let fill = try #require(Self.neutralFragments[fragment], "\(name): no neutral fill for {{\(fragment)}}")
                    text = text.replacingOccurrences(of: "{{\(fragment)}}", with: fill)
                }
                do {
                    try await client.exec("PREPARE checked_\(index) AS \(text)")
                } catch {
                    Issue.record("\(name) does not prepare: \(String(reflecting: error))")
                }
            }
        }
    }
}
