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

    /// One reply from the network. Refusals are values; only a database
    /// failure throws.
    public func submit(_ bytes: some DataProtocol, source: String = "api") async throws -> Result<Stored, ReplyError> {
        let body: ReplyBody
        do throws(ReplyError) {
            body = try ReplyRules.decode(bytes)
            try ReplyRules.checkToken(body, tokens: tokens)
        } catch {
            return .failure(error)
        }
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
        let stored = try await store.insert(
            [AcceptedReply(replyID: body.replyID, target: target, action: body.action, text: body.text, occurredAt: body.occurredAt)],
            source: source)
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
        while true {
            let chunk = try handle.read(upToCount: 1 << 16) ?? Data()
            if chunk.isEmpty { break }
            carry.append(contentsOf: chunk)
            var start = 0
            while let nl = carry[start...].firstIndex(of: UInt8(ascii: "\n")) {
                lineNumber += 1
                pending.append((lineNumber, Array(carry[start..<nl])))
                start = nl + 1
                if pending.count >= batch {
                    try await ingestBatch(pending, into: &report)
                    pending.removeAll(keepingCapacity: true)
                }
            }
            carry.removeFirst(start)
        }
        if !carry.isEmpty {
            lineNumber += 1
            pending.append((lineNumber, carry))
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
        var accepted: [AcceptedReply] = []
        for (line, body) in parsed {
            let target = targets[body.delivery]
            do throws(ReplyError) {
                try ReplyRules.check(body, target: target, actions: target?.categoryID.flatMap { actions[$0] } ?? [])
            } catch {
                report.bad.append((line, error))
                continue
            }
            if let target {
                accepted.append(AcceptedReply(replyID: body.replyID, target: target, action: body.action,
                                              text: body.text, occurredAt: body.occurredAt))
            }
        }
        let stored = try await store.insert(accepted, source: "ingest")
        report.stored += stored.count
        report.duplicates += accepted.count - stored.count
    }
}
