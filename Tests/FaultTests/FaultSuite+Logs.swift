import Foundation
import PostgresNIO
import Store
import TestSupport

/// Reading the simulator's accepted log against the ledger.
extension FaultSuite {
    /// The most entries of `times` (milliseconds) in any window of `window` milliseconds.
    static func mostInAnyWindow(_ times: [Int64], window: Int64 = 10_000) -> Int {
        let sorted = times.sorted()
        var most = 0
        var start = 0
        for end in sorted.indices {
            while sorted[end] - sorted[start] >= window { start += 1 }
            most = max(most, end - start + 1)
        }
        return most
    }

    /// A paced send leaves within 250 ms of its slot or gives it up (SendingSession.missedSlot):
    /// at most this many more than the pace in a window of arrivals (one more where a window's
    /// edges cut a millisecond).
    static func lateSends(perMinute: Int) -> Int {
        Int((Double(perMinute) / 60 * 0.25).rounded(.up)) + 1
    }

    /// The devices APNs accepted a notification for whose delivery the
    /// ledger does not show as sent and run `run` still holds (in flight):
    /// what a kill -9 of that run leaves for the next run to send again.
    static func acceptedNotRecorded(_ client: Database, tokens: Set<String>, campaign: Int64,
                                    heldBy run: Int64) async throws -> Set<String> {
        var out: Set<String> = []
        let list = Array(tokens)
        let rows = try await client.query("""
            SELECT dv.token FROM delivery_status d JOIN devices dv ON dv.id = d.device_id
            WHERE d.campaign_id = \(campaign) AND d.status = 'in_flight' AND d.claimed_by = \(run)
              AND dv.token = ANY(\(list))
            """, logger: TestDatabase.logger)
        for try await token in rows.decode(String.self) { out.insert(token) }
        return out
    }

    /// The run a `herald run` process registered (nil before it did).
    static func runID(_ client: Database, pid: Int32) async throws -> Int64? {
        try await client.scalar("SELECT max(id) FROM runs WHERE pid = \(Int(pid))", as: Int64?.self) ?? nil
    }

    /// The run of a `herald run` process once it has recorded outcomes of `campaign`: polled
    /// for at most `limit`, then whatever run it registered (nil before it did).
    static func recordingRun(_ client: Database, pid: Int32, campaign: Int64, limit: Duration) async throws -> Int64? {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while clock.now < end {
            if let run = try await runID(client, pid: pid),
               try await client.scalar("""
                   SELECT count(*) FROM delivery_status
                   WHERE campaign_id = \(campaign) AND claimed_by = \(run) AND status <> 'in_flight'
                   """, as: Int64.self) ?? 0 > 0 {
                return run
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await runID(client, pid: pid)
    }

    /// A duration in seconds, one decimal, for the printed figures.
    static func seconds(_ d: Duration) -> String {
        String(format: "%.1f", Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }

    /// Each line of the attempts log: its `at` (milliseconds), the status it was answered, and
    /// what authenticated it (`key KID` or `certificate SERIAL`).
    static func attemptsAt(_ path: String) throws -> [(at: Int64, status: Int, credential: String?)] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return try data.split(separator: UInt8(ascii: "\n")).compactMap { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                  let at = (object["at"] as? NSNumber)?.int64Value, let status = (object["status"] as? NSNumber)?.intValue
            else { return nil }
            return (at, status, object["credential"] as? String)
        }
    }

    /// Each line of the accepted log: its `at` (milliseconds) and the delivery its payload names.
    static func acceptedAt(_ path: String) throws -> [(at: Int64, delivery: Int64?)] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return try data.split(separator: UInt8(ascii: "\n")).compactMap { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                  let at = (object["at"] as? NSNumber)?.int64Value else { return nil }
            let herald = (object["payload"] as? [String: Any])?["herald"] as? [String: Any]
            return (at, (herald?["d"] as? NSNumber)?.int64Value)
        }
    }
}
