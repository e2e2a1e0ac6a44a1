import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What `herald preview --journey` reads of a journey (DESIGN, contract 11): its rows as
/// written, the problems it would be refused for, where its members are, and the path a
/// sample of them would take now, decided as a run decides in a transaction rolled back.
public struct JourneyPreviewData: Sendable {
    public struct Step: Sendable {
        public var key: String
        public var kind: String
        public var message: (id: Int64, name: String, kind: String)?
        public var wait: String?
        public var timeout: String?
        public var listensTo: String?
        /// Each locale's title and body of its message, as written.
        public var texts: [(locale: String, title: String, body: String)] = []
        public var edges: [(position: Int, kind: String, rule: String, to: String?)] = []
    }

    public struct Sample: Sendable {
        public var user: String
        public var step: String
        public var reachedAt: Date
        public var advance: JourneyAdvance
    }

    public var id: Int64
    public var name: String
    public var status: String
    public var version: Int
    public var firstStep: String
    public var entry: String
    public var reentry: String
    public var goal: String?
    public var holdoutPct: Int
    public var apps: String
    /// In the order a member meets them: from the first step, edge by edge; then any other.
    public var steps: [Step] = []
    public var problems: [(step: String?, problem: String)] = []
    /// Active members (and of them, waiting) by step.
    public var at: [(step: String, active: Int, waiting: Int)] = []
    public var entered = 0
    public var left = 0
    public var heldOut = 0
    public var samples: [Sample] = []
    /// Why there are no samples, when there are none.
    public var samplesNote: String?
    /// The transaction's time, the samples' now.
    public var now = Date()
}

extension JourneyStore {
    public func preview(journey id: Int64, sample: Int = 5,
                        decide: @escaping @Sendable (JourneyClaimedMember, JourneyVersion, Date) -> JourneyAdvance) async throws -> JourneyPreviewData {
        let journey = ["journey": NamedQuery.Bind.value(id)]
        var data: JourneyPreviewData?
        for try await row in try await client.query(try SQLQueries.named("journeys/preview-journey").query(journey), logger: logger) {
            var c = RowCells(row)
            data = JourneyPreviewData(
                id: id, name: try c.next(String.self), status: try c.next(String.self), version: Int(try c.next(Int32.self)),
                firstStep: try c.next(String.self), entry: try c.next(String.self), reentry: try c.next(String.self),
                goal: try c.next(String?.self), holdoutPct: Int(try c.next(Int32.self)), apps: try c.next(String.self))
        }
        guard var data else { throw InputError("journey \(id) does not exist") }
        let binds: [String: NamedQuery.Bind] = ["journey": .value(id), "version": .value(Int32(data.version))]
        var steps: [String: JourneyPreviewData.Step] = [:]
        for try await row in try await client.query(try SQLQueries.named("journeys/preview-steps").query(binds), logger: logger) {
            var c = RowCells(row)
            let key = try c.next(String.self), kind = try c.next(String.self)
            let message = try c.next(Int64?.self), name = try c.next(String?.self), messageKind = try c.next(String?.self)
            steps[key] = .init(key: key, kind: kind, message: message.map { ($0, name ?? "", messageKind ?? "") },
                               wait: try c.next(String?.self), timeout: try c.next(String?.self), listensTo: try c.next(String?.self))
        }
        for try await (from, position, kind, rule, to) in try await client.query(
            try SQLQueries.named("journeys/preview-edges").query(binds), logger: logger).decode((String, Int32, String, String, String?).self) {
            steps[from]?.edges.append((Int(position), kind, rule, to))
        }
        for try await (step, locale, title, body) in try await client.query(
            try SQLQueries.named("journeys/preview-texts").query(binds), logger: logger).decode((String, String, String, String).self) {
            steps[step]?.texts.append((locale, title, body))
        }
        // The steps in the order a member meets them.
        var order: [String] = []
        var queue = [data.firstStep]
        while let key = queue.first {
            queue.removeFirst()
            guard !order.contains(key), let step = steps[key] else { continue }
            order.append(key)
            queue += step.edges.compactMap(\.to)
        }
        data.steps = order.compactMap { steps[$0] } + steps.keys.sorted().filter { !order.contains($0) }.compactMap { steps[$0] }

        for try await (step, problem) in try await client.query(
            "SELECT step, problem FROM herald_journey_problems(\(id), \(Int32(data.version)))", logger: logger
        ).decode((String?, String).self) {
            data.problems.append((step, problem))
        }
        for try await (step, active, waiting, entered, left, heldOut) in try await client.query(
            try SQLQueries.named("journeys/preview-at-steps").query(journey), logger: logger
        ).decode((String, Int64, Int64, Int64, Int64, Int64).self) {
            if active > 0 { data.at.append((step, Int(active), Int(waiting))) }
            data.entered += Int(entered)
            data.left += Int(left)
            data.heldOut += Int(heldOut)
        }
        guard data.at.contains(where: { $0.active > 0 }) else {
            data.samplesNote = "no member is in it now"
            return data
        }
        // The sample's paths: the run's own claim and decision, in a transaction rolled back.
        struct Decided: Error, @unchecked Sendable { let samples: [JourneyPreviewData.Sample]; let now: Date }
        let logger = self.logger
        do {
            try await client.withTransaction(logger: logger) { conn in
                var users: [Int64: String] = [:]
                for try await (member, user) in try await conn.query(try SQLQueries.named("journeys/preview-sample").query([
                    "journey": .value(id), "sample": .value(Int32(sample)),
                ]), logger: logger).decode((Int64, String).self) { users[member] = user }
                let (claimed, now) = try await Self.claim(limit: users.count, on: conn, logger: logger)
                var versions: [JourneyVersion.Key: JourneyVersion] = [:]
                var samples: [JourneyPreviewData.Sample] = []
                for member in claimed {
                    guard let user = users[member.id] else { continue }
                    if versions[member.key] == nil { versions[member.key] = try await Self.version(member.key, on: conn, logger: logger) }
                    guard let version = versions[member.key] else { continue }
                    samples.append(.init(user: user, step: member.facts.step, reachedAt: member.facts.reachedAt,
                                         advance: decide(member, version, now)))
                }
                throw Decided(samples: samples.sorted { $0.user < $1.user }, now: now)
            }
        } catch {
            let cause = (error as? PostgresTransactionError).flatMap { $0.closureError ?? $0.beginError } ?? error
            if let decided = cause as? Decided {
                data.samples = decided.samples
                data.now = decided.now
            } else if StoreError.sqlState(of: cause) == "42501" {
                data.samplesNote = "the sample's paths need the rights of herald_job (the run's own statements): this login has not them"
            } else {
                throw cause
            }
        }
        return data
    }
}
