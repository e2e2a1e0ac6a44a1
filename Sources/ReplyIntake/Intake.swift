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
    public let tokens: ReplyTokens
    public let logger: Logger

    public init(store: ReplyStore, tokens: ReplyTokens, logger: Logger) {
        self.store = store
        self.tokens = tokens
        self.logger = logger
    }

    /// One reply from the network. Refusals are values; a database fault
    /// throws, and so does `admit`, which sees the delivery once its token
    /// checked out and before anything is looked up (the HTTP side's
    /// per-delivery rate limit).
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
        let target = try await store.targets([body.delivery])[body.delivery]
        var actions: [CategoryAction] = []
        if let category = target?.categoryID {
            actions = try await store.categoryActions()[category] ?? []
        }
        do throws(ReplyError) {
            try ReplyRules.check(body, target: target, actions: actions)
        } catch {
            return .failure(error)
        }
        guard let target else { return .failure(.unknownDelivery) }
        let stored: Set<UUID>
        do {
            stored = try await store.insert(
                [AcceptedReply(replyID: body.replyID, target: target, action: body.action, text: body.text, occurredAt: body.occurredAt)],
                source: source)
        } catch let error where Self.isRefusal(error) {
            return .failure(Self.refusal(error))
        }
        if stored.isEmpty { return .success(.duplicate) }
        logger.debug("reply stored", metadata: ["delivery": "\(body.delivery)", "campaign": "\(target.campaignID)"])
        return .success(.stored)
    }

    /// What `herald ingest` did with a file.
    public struct IngestReport: Sendable {
        public var lines = 0
        public var stored = 0
        public var duplicates = 0
        public var bad: [(line: Int, error: ReplyError)] = []
    }

    /// Checks and stores a JSON-lines file, `batch` lines at a time (memory
    /// stays flat whatever the file's size). Blank lines are ignored.
    public func ingest(file path: String, batch: Int = 1000) async throws -> IngestReport {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw StoreError.configuration("cannot read \(path)")
        }
        defer { try? handle.close() }
        var report = IngestReport()
        var pending: [(line: Int, bytes: [UInt8])] = []
        var carry: [UInt8] = []
        var lineNumber = 0
        // A line longer than a request body may be is refused without being
        // kept in memory: its bytes are dropped up to its newline.
        var overlong = false
        let longest = ReplyRules.maxBodyBytes + 1
        func finish(_ bytes: [UInt8]) {
            lineNumber += 1
            if overlong {
                report.lines += 1
                report.bad.append((lineNumber, .tooLarge))
                overlong = false
            } else {
                pending.append((lineNumber, bytes))
            }
        }
        while true {
            let chunk = try handle.read(upToCount: 1 << 16) ?? Data()
            if chunk.isEmpty { break }
            carry.append(contentsOf: chunk)
            var start = 0
            while let nl = carry[start...].firstIndex(of: UInt8(ascii: "\n")) {
                finish(Array(carry[start..<nl]))
                start = nl + 1
                if pending.count >= batch {
                    try await ingestBatch(pending, into: &report)
                    pending.removeAll(keepingCapacity: true)
                }
            }
            carry.removeFirst(start)
            if carry.count > longest {
                overlong = true
                carry.removeAll(keepingCapacity: true)
            }
        }
        if !carry.isEmpty || overlong {
            finish(carry)
        }
        try await ingestBatch(pending, into: &report)
        return report
    }

    private func ingestBatch(_ lines: [(line: Int, bytes: [UInt8])], into report: inout IngestReport) async throws {
        var parsed: [(line: Int, body: ReplyBody)] = []
        for (line, bytes) in lines {
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            report.lines += 1
            do throws(ReplyError) {
                let body = try ReplyRules.decode(bytes)
                try ReplyRules.checkToken(body, tokens: tokens)
                parsed.append((line, body))
            } catch {
                report.bad.append((line, error))
            }
        }
        guard !parsed.isEmpty else { return }
        let targets = try await store.targets(Array(Set(parsed.map(\.body.delivery))))
        let actions = try await store.categoryActions()
        var accepted: [(line: Int, reply: AcceptedReply)] = []
        for (line, body) in parsed {
            let target = targets[body.delivery]
            do throws(ReplyError) {
                try ReplyRules.check(body, target: target, actions: target?.categoryID.flatMap { actions[$0] } ?? [])
            } catch {
                report.bad.append((line, error))
                continue
            }
            if let target {
                accepted.append((line, AcceptedReply(replyID: body.replyID, target: target, action: body.action,
                                                      text: body.text, occurredAt: body.occurredAt)))
            }
        }
        do {
            let stored = try await store.insert(accepted.map(\.reply), source: "ingest")
            report.stored += stored.count
            report.duplicates += accepted.count - stored.count
        } catch let error where Self.isRefusal(error) {
            // One line the database refuses must not sink the others: store
            // this batch line by line and report the refused ones.
            for (line, reply) in accepted {
                do {
                    let stored = try await store.insert([reply], source: "ingest")
                    report.stored += stored.count
                    report.duplicates += 1 - stored.count
                } catch let error where Self.isRefusal(error) {
                    report.bad.append((line, Self.refusal(error)))
                }
            }
        }
    }

    /// A statement the database refused for its data (SQLSTATE classes 22
    /// data exception and 23 integrity constraint): the reply's fault, never
    /// a transient one.
    static func isRefusal(_ error: any Error) -> Bool {
        guard let state = StoreError.sqlState(of: error) else { return false }
        return state.hasPrefix("22") || state.hasPrefix("23")
    }

    static func refusal(_ error: any Error) -> ReplyError {
        let reason = StoreError.constraint(of: error) ?? StoreError.describe(error)
        return .refusedByDatabase("the database refused the reply: \(StrictJSON.quote(reason, max: 120))")
    }
}
