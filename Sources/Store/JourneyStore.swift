import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Journeys as a run moves their members (DESIGN, contract 11): each batch of due members is
/// claimed, decided on and written in one transaction, so a kill, a restart or a failover
/// neither skips a step nor takes one twice.
public struct JourneyStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The messages of the running journeys' send steps: each gets its ledger partition
    /// before a move writes its rows.
    public func messages() async throws -> [Int64] {
        var out: [Int64] = []
        for try await id in try await client.query(try SQLQueries.named("journeys/messages").query([:]), logger: logger)
            .decode(Int64.self) { out.append(id) }
        return out
    }

    /// Enters the users of each running journey's segment, for journeys entered by a segment
    /// (`journeys/enter-segment`); answers how many entered. A journey whose rule does not
    /// compile enters nobody, said in the log with its reason.
    public func enterBySegments() async throws -> Int {
        var journeys: [(Int64, String)] = []
        for try await row in try await client.query(try SQLQueries.named("journeys/segment-entries").query([:]), logger: logger)
            .decode((Int64, String).self) { journeys.append(row) }
        var entered = 0
        for (journey, rule) in journeys {
            let statement = try SQLQueries.named("journeys/enter-segment")
            let segment: CompiledSegment
            do {
                segment = try Self.compile(rule: rule, from: statement.parameters.count + 1)
            } catch {
                logger.error("a journey's entry segment does not compile: nobody enters", metadata: [
                    "journey": "\(journey)", "reason": "\(error)",
                ])
                continue
            }
            let query = try statement.query(["journey": .value(journey)], fragments: ["segment": segment.sql]) {
                $0.append(segment: segment)
            }
            for try await n in try await client.query(query, logger: logger).decode(Int64.self) { entered += Int(n) }
        }
        return entered
    }

    /// Enters the users each running journey's entry campaign was sent to, for journeys
    /// entered by a campaign (`journeys/enter-campaigns`); answers how many entered.
    public func enterByCampaigns() async throws -> Int {
        var entered = 0
        for try await n in try await client.query(try SQLQueries.named("journeys/enter-campaigns").query([:]), logger: logger)
            .decode(Int64.self) { entered += Int(n) }
        return entered
    }

    /// Claims up to `limit` due members, decides each with `decide` and writes what it
    /// decided (moves, where each rests, the rows of its sends), all in one transaction.
    public func advanceBatch(run: Int64, limit: Int,
                             decide: @Sendable (JourneyClaimedMember, JourneyVersion, Date) -> JourneyAdvance) async throws -> JourneyBatch {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { conn in
            var batch = JourneyBatch()
            let (claimed, now) = try await Self.claim(limit: limit, on: conn, logger: logger)
            batch.claimed = claimed.count
            guard !claimed.isEmpty else { return batch }

            var versions: [JourneyVersion.Key: JourneyVersion] = [:]
            for member in claimed where versions[member.key] == nil {
                versions[member.key] = try await Self.version(member.key, on: conn, logger: logger)
            }
            var rest = RestColumns()
            var moves = MoveColumns()
            var sends: (members: [Int64], messages: [Int64]) = ([], [])
            for member in claimed {
                guard let version = versions[member.key] else { continue }
                let advance = decide(member, version, now)
                var seq = member.moves
                var last = member.facts.step
                for move in advance.moves {
                    seq += 1
                    moves.append(member: member, seq: seq, move: move, run: run)
                    last = move.to ?? move.from
                }
                for step in advance.sends {
                    if let message = version.messages[step] {
                        sends.members.append(member.id)
                        sends.messages.append(message)
                    }
                }
                switch advance.rest {
                case .at(let step, let reachedAt, let due, let waiting):
                    rest.append(member.id, step: step, state: "active", reached: reachedAt, due: due, waiting: waiting, moves: seq)
                case .left(let exit):
                    let state: String
                    switch exit {
                    case .done: state = "done"
                    case .goal: state = "goal"
                    case .stuck(let why):
                        state = "exited"
                        batch.stuck += 1
                        logger.warning("a journey member could not go on", metadata: [
                            "journey": "\(member.journey)", "member": "\(member.id)", "reason": "\(why)",
                        ])
                    }
                    rest.append(member.id, step: last, state: state, reached: member.facts.reachedAt, due: now, waiting: false, moves: seq)
                    batch.left += 1
                }
            }
            if !moves.members.isEmpty {
                try await conn.query(try SQLQueries.named("journeys/record-transitions").query([
                    "members": .value(moves.members), "seqs": .value(moves.seqs), "journeys": .value(moves.journeys),
                    "froms": .value(moves.froms), "positions": .value(moves.positions), "kinds": .value(moves.kinds),
                    "tos": .value(moves.tos), "runs": .value(moves.runs),
                ]), logger: logger)
            }
            if !sends.members.isEmpty {
                let written = try await conn.query(try SQLQueries.named("journeys/write-sends").query([
                    "members": .value(sends.members), "messages": .value(sends.messages),
                ]), logger: logger)
                for try await n in written.decode(Int64.self) { batch.rowsWritten += Int(n) }
            }
            try await conn.query(try SQLQueries.named("journeys/move-members").query([
                "ids": .value(rest.ids), "steps": .value(rest.steps), "states": .value(rest.states),
                "reached": .value(rest.reached), "due": .value(rest.due), "waiting": .value(rest.waiting),
                "moves": .value(rest.moves),
            ]), logger: logger)
            batch.moves = moves.members.count
            batch.sends = sends.members.count
            return batch
        }
    }

    /// The claim of due members, with the segments its segment edges name compiled into it
    /// (a segment whose rule does not compile leaves its edges unknown: they do not hold).
    /// Claims up to `limit` due members (`journeys/claim-members`), each with what its
    /// decision reads, and the transaction's time.
    static func claim(limit: Int, on conn: PostgresConnection, logger: Logger) async throws -> (members: [JourneyClaimedMember], now: Date) {
        var claimed: [JourneyClaimedMember] = []
        var now = Date()
        let rows = try await conn.query(try await Self.claimMembers(limit: limit, on: conn, logger: logger), logger: logger)
        for try await row in rows {
            var cells = RowCells(row)
            let id = try cells.next(Int64.self), journey = try cells.next(Int64.self), version = try cells.next(Int32.self)
            let step = try cells.next(String.self), reached = try cells.next(Date.self), moves = try cells.next(Int32.self)
            let zone = try cells.next(String.self), goal = try cells.next(Bool.self), holds = try cells.next([String].self)
            now = try cells.next(Date.self)
            let bestHour = try cells.next(Int32?.self)
            let held = Set(holds.compactMap { text -> JourneyEdge.ID? in
                guard let colon = text.lastIndex(of: ":"), let position = Int(text[text.index(after: colon)...]) else { return nil }
                return JourneyEdge.ID(from: String(text[..<colon]), position: position)
            })
            claimed.append(JourneyClaimedMember(
                id: id, journey: journey, version: Int(version), moves: Int(moves),
                facts: JourneyMemberFacts(step: step, reachedAt: reached, holds: held, goalReached: goal,
                                          zone: TimeZone(identifier: zone) ?? .gmt, bestHour: bestHour.map(Int.init))))
        }
        return (claimed, now)
    }

    static func claimMembers(limit: Int, on conn: PostgresConnection, logger: Logger) async throws -> PostgresQuery {
        let statement = try SQLQueries.named("journeys/claim-members")
        var cases: [String] = []
        var compiled: [CompiledSegment] = []
        var next = statement.parameters.count + 1
        for try await (id, rule) in try await conn.query(try SQLQueries.named("journeys/edge-segments").query([:]), logger: logger)
            .decode((Int64, String).self) {
            do {
                let segment = try Self.compile(rule: rule, from: next)
                next += segment.binds.count
                compiled.append(segment)
                cases.append("""
                    WHEN e.rule->>'segment_id' = '\(id)' THEN EXISTS (
                        SELECT 1 FROM users u JOIN devices dv ON dv.user_id = u.id
                        WHERE u.id = m.user_id AND dv.invalidated_at IS NULL AND (\(segment.sql)))
                    """)
            } catch {
                logger.error("a segment a journey branches on does not compile: its edges do not hold", metadata: [
                    "segment": "\(id)", "reason": "\(error)",
                ])
            }
        }
        return try statement.query(["limit": .value(limit)], fragments: ["segment_cases": cases.joined(separator: "\n")]) { binds in
            for segment in compiled { binds.append(segment: segment) }
        }
    }

    /// A segment's rule (`segments.rule` as text) compiled over devices `dv` and users `u`,
    /// its binds numbered from `first`.
    static func compile(rule: String, from first: Int) throws -> CompiledSegment {
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(rule.utf8))
        return try SegmentCompiler(firstPlaceholder: first, deviceAlias: "dv", userAlias: "u").compile(json)
    }

    /// One version of a journey as its decisions read it.
    static func version(_ key: JourneyVersion.Key, on conn: PostgresConnection, logger: Logger) async throws -> JourneyVersion {
        var first = ""
        for try await f in try await conn.query(try SQLQueries.named("journeys/journey").query(["journey": .value(key.journey)]),
                                                logger: logger).decode(String.self) {
            first = f
        }
        var steps: [JourneyStep] = []
        var messages: [String: Int64] = [:]
        let binds: [String: NamedQuery.Bind] = ["journey": .value(key.journey), "version": .value(Int32(key.version))]
        for try await row in try await conn.query(try SQLQueries.named("journeys/steps").query(binds), logger: logger) {
            var cells = RowCells(row)
            let key = try cells.next(String.self), kindText = try cells.next(String.self)
            let waitFor = try cells.next(Double?.self), hour = try cells.next(Int32?.self), minute = try cells.next(Int32?.self)
            let best = try cells.next(Bool.self), timeout = try cells.next(Double?.self), campaign = try cells.next(Int64?.self)
            guard let kind = JourneyStep.Kind(rawValue: kindText) else {
                throw StoreError.database("journey step \(key): unknown kind \(kindText)")
            }
            let wait: JourneyWait? = if let waitFor { .duration(waitFor) }
                else if let hour, let minute { .localTime(hour: Int(hour), minute: Int(minute)) }
                else if best { .bestHour } else { nil }
            steps.append(JourneyStep(key: key, kind: kind, wait: wait, timeout: timeout))
            if let campaign { messages[key] = campaign }
        }
        var edges: [JourneyEdge] = []
        for try await (from, position, kindText, to) in try await conn.query(try SQLQueries.named("journeys/edges").query(binds), logger: logger)
            .decode((String, Int32, String, String?).self) {
            guard let kind = JourneyEdge.Kind(rawValue: kindText) else {
                throw StoreError.database("journey edge \(from) \(position): unknown kind \(kindText)")
            }
            edges.append(JourneyEdge(from: from, position: Int(position), kind: kind, to: to))
        }
        return JourneyVersion(graph: JourneyGraph(first: first, steps: steps, edges: edges), messages: messages)
    }

    private struct RestColumns {
        var ids: [Int64] = [], steps: [String] = [], states: [String] = [], reached: [Double] = [], due: [Double] = []
        var waiting: [Bool] = [], moves: [Int32] = []

        mutating func append(_ id: Int64, step: String, state: String, reached: Date, due: Date, waiting: Bool, moves: Int) {
            ids.append(id)
            steps.append(step)
            states.append(state)
            self.reached.append(reached.timeIntervalSince1970)
            self.due.append(due.timeIntervalSince1970)
            self.waiting.append(waiting)
            self.moves.append(Int32(clamping: moves))
        }
    }

    private struct MoveColumns {
        var members: [Int64] = [], seqs: [Int32] = [], journeys: [Int64] = [], froms: [String] = []
        // No position (the goal) is -1, no step (out) is "": arrays of the statement hold no NULLs.
        var positions: [Int32] = [], kinds: [String] = [], tos: [String] = [], runs: [Int64] = []

        mutating func append(member: JourneyClaimedMember, seq: Int, move: JourneyMove, run: Int64) {
            members.append(member.id)
            seqs.append(Int32(clamping: seq))
            journeys.append(member.journey)
            froms.append(move.from)
            positions.append(move.position.map { Int32(clamping: $0) } ?? -1)
            kinds.append(move.kind)
            tos.append(move.to ?? "")
            runs.append(run)
        }
    }
}

/// A member a run claimed, with what its decision reads.
public struct JourneyClaimedMember: Sendable, Hashable {
    public var id: Int64
    public var journey: Int64
    public var version: Int
    public var moves: Int
    public var facts: JourneyMemberFacts

    var key: JourneyVersion.Key { JourneyVersion.Key(journey: journey, version: version) }
}

/// One version of a journey: its graph and the message (campaign) of each send step.
public struct JourneyVersion: Sendable, Hashable {
    public struct Key: Sendable, Hashable {
        public var journey: Int64
        public var version: Int
    }

    public var graph: JourneyGraph
    public var messages: [String: Int64]
}

/// What one batch of moves did.
public struct JourneyBatch: Sendable, Hashable {
    public var claimed = 0
    public var moves = 0
    public var sends = 0
    public var rowsWritten = 0
    public var left = 0
    public var stuck = 0
    /// Users a run entered by their journey's segment or campaign.
    public var entered = 0

    public init() {}

    public mutating func add(_ other: JourneyBatch) {
        claimed += other.claimed
        moves += other.moves
        sends += other.sends
        rowsWritten += other.rowsWritten
        left += other.left
        stuck += other.stuck
        entered += other.entered
    }
}
