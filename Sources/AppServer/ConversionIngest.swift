import Foundation
import HeraldCore
import Logging
import Store

/// `herald ingest-conversions FILE.jsonl`: conversions collected elsewhere,
/// one `POST /v1/conversions` body per line, checked by the same rules and
/// stored `batch` lines at a time (one statement each). A re-run is safe:
/// an idempotency key stored before is not stored twice.
public struct ConversionIngest: Sendable {
    public let store: ConversionStore

    public init(store: ConversionStore) {
        self.store = store
    }

    public struct Report: Sendable {
        public var lines = 0
        public var stored = 0
        public var duplicates = 0
        /// Line number and why (a malformed line, a bad value, an unknown user).
        public var bad: [(line: Int, code: String, message: String)] = []
    }

    public func ingest(file path: String, batch: Int = 2000) async throws -> Report {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw InputError("cannot read \(path)")
        }
        defer { try? handle.close() }
        var reader = LineReader(handle: handle)
        var report = Report()
        while true {
            let lines = try reader.next(max(1, batch))
            if lines.isEmpty { break }
            var parsed: [(line: Int, conversion: Conversion)] = []
            for line in lines {
                guard case .bytes(let bytes) = line.content else {
                    report.lines += 1
                    report.bad.append((line.number, ReplyError.tooLarge.code, ReplyError.tooLarge.message))
                    continue
                }
                if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                report.lines += 1
                do throws(ReplyError) {
                    parsed.append((line.number, try ConversionRules.decode(bytes)))
                } catch {
                    report.bad.append((line.number, error.code, error.message))
                }
            }
            let outcomes = try await store.store(parsed.map(\.conversion), source: "ingest")
            for (entry, outcome) in zip(parsed, outcomes) {
                switch outcome {
                case .stored: report.stored += 1
                case .duplicate: report.duplicates += 1
                case .unknownUser: report.bad.append((entry.line, "unknown_user", "no user with this external id"))
                }
            }
        }
        return report
    }
}
