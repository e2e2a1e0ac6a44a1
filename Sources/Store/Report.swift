import Foundation
import Logging
import PostgresNIO

/// The analyst views, read back for a person at a terminal (`herald report`,
/// the end of the demo).
public struct AnalystReport: Sendable {
    public let client: PostgresClient
    public let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// One block per campaign: the funnel, replies by action, a few typed answers.
    public func render(campaign: Int64? = nil, samples: Int = 3) async throws -> String {
        var out: [String] = []
        let funnel = try await client.query("""
            SELECT campaign_id, name, kind, status, coalesce(failure_reason, ''), targeted, sent, invalid, failed,
                   expired, skipped, queued + in_flight, replies, responding_devices, coalesce(response_rate_pct, 0)::float8
            FROM analyst.campaign_funnel
            WHERE \(campaign)::bigint IS NULL OR campaign_id = \(campaign)
            ORDER BY campaign_id
            """, logger: logger)
        var campaigns: [(Int64, String)] = []
        for try await row in funnel {
            let r = row.makeRandomAccess()
            let id = try r[0].decode(Int64.self)
            let name = try r[1].decode(String.self)
            campaigns.append((id, name))
            var line = "campaign \(id) \"\(name)\" [\(try r[2].decode(String.self))] \(try r[3].decode(String.self))"
            let reason = try r[4].decode(String.self)
            if !reason.isEmpty { line += " (\(reason))" }
            out.append(line)
            out.append(String(format: "  targeted %d  sent %d  invalid %d  failed %d  expired %d  skipped %d  pending %d  replies %d from %d devices (%.1f%% of sent)",
                              try r[5].decode(Int64.self), try r[6].decode(Int64.self), try r[7].decode(Int64.self),
                              try r[8].decode(Int64.self), try r[9].decode(Int64.self), try r[10].decode(Int64.self),
                              try r[11].decode(Int64.self), try r[12].decode(Int64.self), try r[13].decode(Int64.self),
                              try r[14].decode(Double.self)))
            var actions: [String] = []
            for try await (title, action, n, share) in try await client.query("""
                SELECT coalesce(action_title, action), action, replies, share_pct::float8
                FROM analyst.action_breakdown WHERE campaign_id = \(id) ORDER BY replies DESC, action
                """, logger: logger).decode((String, String, Int64, Double).self) {
                _ = action
                actions.append("\(title) \(n) (" + String(format: "%.0f%%", share) + ")")
            }
            if !actions.isEmpty { out.append("  by action: " + actions.joined(separator: ", ")) }
            for v in try await variants(campaign: id) {
                let rate = v.responseRatePct.map { String(format: "%.1f%%", $0) } ?? "–"
                var line = "  variant \(v.name) (\(v.sharePct)%): sent \(v.sent), answered \(v.respondingDevices) (\(rate)), opened \(v.opened)"
                if v.position > 1, let z = v.z { line += "; vs \(v.baseline) " + String(format: "z = %.2f", z) }
                line += ": \(v.verdict)"
                out.append(line)
            }
            for try await (text, locale) in try await client.query("""
                SELECT text, locale FROM analyst.feedback_text WHERE campaign_id = \(id)
                ORDER BY received_at, text LIMIT \(samples)
                """, logger: logger).decode((String, String).self) {
                out.append("  feedback [\(locale)]: \(text)")
            }
        }
        if campaigns.isEmpty { out.append("no campaigns") }
        return out.joined(separator: "\n")
    }
}
