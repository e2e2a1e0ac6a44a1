import Foundation
import PostgresNIO
import Testing
import TestSupport

/// Several live `herald run` processes share a campaign, none killed: no
/// device gets it twice, and no run declares another gone, also when each
/// runs in a PID namespace of its own on one host name (as containers on a
/// host network do), where every run is pid 1 (Sql/0034: a run is alive
/// while its own database session is).
extension FaultSuite {
    static let canUnshare = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
    /// Skipped (and said so) where PID namespaces cannot be made; CI runs it, and fails there without them.
    static let unshareOrCI = canUnshare || ProcessInfo.processInfo.environment["CI"] == "true"

    enum Namespaces: String, CaseIterable, CustomTestStringConvertible {
        case shared, ownPIDNamespaces
        var testDescription: String { rawValue }
    }

    @Test func liveRunsOnOneHostNeverDeclareEachOtherGone() async throws {
        try await Self.liveRuns(.shared)
    }

    @Test(.enabled(if: unshareOrCI, "needs root and /usr/bin/unshare for PID namespaces"))
    func liveRunsInSeparatePIDNamespacesNeverDeclareEachOtherGone() async throws {
        try #require(Self.canUnshare, "CI runs this scenario: it needs root and /usr/bin/unshare")
        try await Self.liveRuns(.ownPIDNamespaces)
    }

    /// Three live runs on one campaign, the third started once two are sending: all three send,
    /// none is declared gone, no device is sent twice.
    static func liveRuns(_ namespaces: Namespaces) async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 12_000
                let campaign = try await Self.campaign(client, devices: devices, name: "Shared", collapseID: "shared")
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "20"])
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "20", "HERALD_BATCH_SIZE": "200",
                ])
                let wrapper = namespaces == .ownPIDNamespaces ? ["/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"] : []
                func start(_ n: Int) throws -> Child {
                    try Child(name: "worker\(n)", arguments: ["run"], environment: env, directory: dir, wrapper: wrapper)
                }
                var workers = [try start(1), try start(2)]
                try await waitUntil("both runs sending", limit: .seconds(60)) { sim.acceptedCount() >= 500 }
                try await Task.sleep(for: .seconds(3))
                workers.append(try start(3))
                var codes: [Int32] = []
                for worker in workers { codes.append(try await worker.wait(limit: .seconds(180))) }
                try await sim.stop()
                let accepted = try sim.accepted()
                let tokens = Dictionary(grouping: accepted, by: \.token)
                let repeats = accepted.count - tokens.count
                let declaredGone = try await Self.count(client, "SELECT count(*) FROM runs WHERE status = 'failed'")
                let sentBy = try await Self.count(client, """
                    SELECT count(DISTINCT claimed_by) FROM delivery_status WHERE campaign_id = \(campaign) AND status = 'sent'
                    """)
                print("live runs (\(namespaces.rawValue)): \(devices) devices, \(accepted.count) accepted, \(repeats) repeats, "
                      + "\(declaredGone) runs declared gone, \(sentBy) runs sent, exit codes \(codes)")
                #expect(codes == [0, 0, 0], "\(workers.map { $0.tail(5) }.joined(separator: "\n--\n"))")
                #expect(repeats == 0)
                #expect(tokens.count == devices)
                #expect(declaredGone == 0)
                #expect(sentBy == 3, "each of the three runs sent")
                #expect(try await Self.status(client, campaign) == "completed")
            }
        }
    }
}
