import Foundation
import HeraldCore
import PostgresNIO
import Store
import TestSupport
import Testing

/// The commands of docs/operators.md ("Database roles") as the processes an
/// operator starts, each logged in as a member of its documented role:
/// `herald ingest` and `herald ingest-conversions` as herald_intake,
/// `herald report` as herald_analyst. (`herald run` and `herald serve` run so
/// in every scenario of the fault suite.)
@Suite("Commands as their documented roles")
struct CommandsAsTheirRolesTests {
    @Test func ingestAndReportRunAsTheirRoles() async throws {
        try await TestDatabase.with { client, database in
            let deliveries = try await sentDeliveries(client, devices: 3)
            let secret = replySecret()
            let tokens = ReplyTokens(secret: try ReplySecret(base64: secret))
            try await withScratch { dir in
                let replies = dir.appendingPathComponent("replies.jsonl")
                try Data(deliveries.map { delivery in
                    """
                    {"delivery": \(delivery), "token": "\(tokens.token(delivery: delivery))", "action": "love_it", \
                    "occurred_at": "2026-11-20T10:00:00Z", "reply_id": "\(UUID().uuidString)"}
                    """
                }.joined(separator: "\n").utf8).write(to: replies)
                let conversions = dir.appendingPathComponent("conversions.jsonl")
                try Data("""
                    {"user": "u1", "event": "purchase", "occurred_at": "2026-11-20T11:00:00Z", "amount": "5.00", "currency": "EUR", "idempotency_key": "order-1"}
                    """.utf8).write(to: conversions)

                func run(_ arguments: [String], as group: String) async throws -> (Int32, String) {
                    var env = ProcessInfo.processInfo.environment
                    env["DATABASE_URL"] = try await TestDatabase.member(of: group, database).description
                    env["HERALD_REPLY_SECRET"] = secret
                    env["LOG_LEVEL"] = "warning"
                    let child = try Child(name: arguments[0], arguments: arguments, environment: env, directory: dir)
                    let code = try await child.wait(limit: .seconds(60))
                    return (code, child.text())
                }
                let (ingested, ingestOut) = try await run(["ingest", replies.path], as: "herald_intake")
                #expect(ingested == 0, "\(ingestOut)")
                #expect(ingestOut.contains("3 stored"), "\(ingestOut)")
                let (converted, convertOut) = try await run(["ingest-conversions", conversions.path], as: "herald_intake")
                #expect(converted == 0, "\(convertOut)")
                #expect(convertOut.contains("1 stored"), "\(convertOut)")
                let (reported, report) = try await run(["report"], as: "herald_analyst")
                #expect(reported == 0, "\(report)")
                #expect(report.contains("\"Poster\"") && report.contains("replies 3 from 3 devices"), "\(report)")
                // Each role still cannot do the other's part.
                let (refused, refusal) = try await run(["ingest", replies.path], as: "herald_analyst")
                #expect(refused == 1 && refusal.contains("permission denied"), "\(refusal)")
            }
            #expect(try await client.scalar("SELECT count(*) FROM replies", as: Int64.self) == 3)
            #expect(try await client.scalar("SELECT count(*) FROM conversions", as: Int64.self) == 1)
        }
    }
}
