import ExtensionKit
import Foundation
import HeraldCore
import Logging
import Store

/// Contract 4: checks a reply and stores it once. `POST /v1/replies` and
/// `herald ingest` both go through here.
public struct ReplyIntake: Sendable {
    public enum Stored: Sendable, Hashable {
        /// 202: stored now.
        case stored
        /// 200: this `reply_id` was stored before; nothing stored twice.
        case duplicate
    }

    public let store: ReplyStore
    /// The secrets tokens are checked with (replaced by `herald serve`'s reload).
    public let keys: ReplyKeys
    public let logger: Logger
    let batcher: ReplyBatcher

    public var tokens: ReplyTokens { keys.tokens }

    /// `batching`: how concurrent `submit` calls are stored together.
    public init(store: ReplyStore, keys: ReplyKeys, logger: Logger, batching: ReplyBatching = .init()) {
        self.store = store
        self.keys = keys
        self.logger = logger
        self.batcher = ReplyBatcher(store: store, logger: logger, batching: batching)
    }

    public init(store: ReplyStore, tokens: ReplyTokens, logger: Logger, batching: ReplyBatching = .init()) {
        self.init(store: store, keys: ReplyKeys(tokens), logger: logger, batching: batching)
    }

    /// One reply from the network. Refusals are values; a database fault
    /// throws, and so does `admit`, which sees the delivery once its token
    /// checked out and before anything is looked up (the HTTP side's
    /// per-delivery rate limit).
    ///
    /// Replies submitted at the same time are looked up and stored together
    /// (`ReplyBatching`); each call still gets its own answer, and only once
    /// its reply is committed.
    public func submit(
        _ bytes: some DataProtocol, source: String = "api", admit: (Int64) throws -> Void = { _ in }
    ) async throws -> Result<Stored, ReplyError> {
        let body: ReplyBody
        do throws(ReplyError) {
            body = try ReplyRules.decode(bytes)
            try ReplyRules.checkToken(body, tokens: tokens)
        } catch {
            return .failure(error)
        }
        try admit(body.delivery)
        return try await batcher.submit(body, source: source)
    }

    /// Replies taken in by `submit` and not answered yet: queued for a
    /// batch or being stored.
    var repliesWaiting: Int { batcher.outstanding }

    /// What `herald ingest` did with a file.
    public struct IngestReport: Sendable {
        public var lines = 0
        public var stored = 0
        public var duplicates = 0
        public var bad: [(line: Int, error: ReplyError)] = []
    }

    /// Checks and stores a JSON-lines file, `batch` lines at a time: each
    /// batch is parsed and its tokens checked as it is read, then looked up,
    /// checked against its deliveries and stored by one statement that
    /// commits (`ReplyStore.storeTakingApart`), up to `writers` batches at once (on as
    /// many connections) while the next batches are read. A batch that
    /// shares a reply (a delivery and `reply_id`) with one still being
    /// stored waits for it, so the first line of a reply is the one stored,
    /// as if the file were read in one go. Memory stays flat whatever the
    /// file's size (`writers` + 1 batches at most). Blank lines are ignored.
    public func ingest(file path: String, batch: Int = 5000, writers: Int = 3) async throws -> IngestReport {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw InputError("cannot read \(path)")
        }
        defer { try? handle.close() }
        var reader = LineReader(handle: handle)
        var report = IngestReport()
        let writers = max(1, writers)
        try await withThrowingTaskGroup(of: (Int, Written).self) { group in
            // The replies of the batches being stored, by batch number.
            var storing: [Int: Set<ReplyKey>] = [:]
            var number = 0
            while true {
                let lines = try reader.next(max(1, batch))
                if lines.isEmpty { break }
                let parsed = parse(lines, into: &report)
                guard !parsed.isEmpty else { continue }
                let keys = Set(parsed.map { ReplyKey(delivery: $0.body.delivery, replyID: $0.body.replyID) })
                while storing.count >= writers || storing.values.contains(where: { !$0.isDisjoint(with: keys) }),
                      case let (done, written)? = try await group.next() {
                    storing[done] = nil
                    report.add(written)
                }
                number += 1
                storing[number] = keys
                let this = number
                group.addTask { (this, try await self.write(parsed[...])) }
            }
            while case let (_, written)? = try await group.next() { report.add(written) }
        }
        return report
    }

    /// What identifies a reply: its delivery and the client's `reply_id`.
    struct ReplyKey: Hashable {
        var delivery: Int64
        var replyID: UUID
    }

    /// Parses a batch of lines and checks their tokens; what passes, with its line number.
    private func parse(_ lines: [LineReader.Line], into report: inout IngestReport) -> [(line: Int, body: ReplyBody)] {
        var parsed: [(line: Int, body: ReplyBody)] = []
        parsed.reserveCapacity(lines.count)
        for line in lines {
            let bytes: [UInt8]
            switch line.content {
            case .tooLong:
                report.lines += 1
                report.bad.append((line.number, .tooLarge))
                continue
            case .bytes(let b):
                bytes = b
            }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            report.lines += 1
            do throws(ReplyError) {
                let body = try ReplyRules.decode(bytes)
                try ReplyRules.checkToken(body, tokens: tokens)
                parsed.append((line.number, body))
            } catch {
                report.bad.append((line.number, error))
            }
        }
        return parsed
    }

    /// What storing one batch did.
    struct Written: Sendable {
        var stored = 0
        var duplicates = 0
        var bad: [(line: Int, error: ReplyError)] = []
    }

    /// Stores a batch and says why each refused line was refused; a line
    /// whose values the database itself refuses sinks no other
    /// (`ReplyStore.storeTakingApart`).
    private func write(_ rows: ArraySlice<(line: Int, body: ReplyBody)>) async throws -> Written {
        let batch = try await store.storeTakingApart(rows.map { Self.incoming($0.body) }, source: "ingest")
        var written = Written(stored: batch.stored, duplicates: batch.duplicates.count)
        let row = { (position: Int) in rows[rows.startIndex + position] }
        written.bad = batch.refusals.map { (row($0.position).line, Self.reason($0, of: row($0.position).body)) }
            + batch.refusedByDatabase.map { (row($0.position).line, Self.refusal($0)) }
        return written
    }

    /// A reply as `ReplyStore.store` takes it.
    static func incoming(_ body: ReplyBody) -> ReplyStore.IncomingReply {
        ReplyStore.IncomingReply(replyID: body.replyID, deliveryID: body.delivery, action: body.action, text: body.text,
                                 occurredAt: body.occurredAt,
                                 textProblem: body.text.flatMap(ReplyRules.textProblem))
    }

    /// The refusal the database decided on, said as contract 4 says it.
    static func reason(_ refusal: ReplyStore.Refusal, of body: ReplyBody) -> ReplyError {
        switch refusal.reason {
        case .unknownDelivery: .unknownDelivery
        case .actionNotAllowed: .actionNotAllowed(body.action, category: refusal.category)
        case .textNotAllowed: .textNotAllowed
        case .textRefused: refusal.textProblem ?? .textInvalid
        }
    }

    /// A statement the database refused for the values it carried: the
    /// request's fault (a 4xx), never a transient one.
    static func isRefusal(_ error: any Error) -> Bool {
        DatabaseFault(error) == .refusedValues
    }

    static func refusal(_ refused: ReplyStore.RefusedByDatabase) -> ReplyError {
        .refusedByDatabase("the database refused the reply: \(StrictJSON.quote(refused.reason, max: 120))")
    }
}

extension ReplyIntake.IngestReport {
    mutating func add(_ written: ReplyIntake.Written) {
        stored += written.stored
        duplicates += written.duplicates
        bad += written.bad
    }
}
