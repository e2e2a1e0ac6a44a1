// herald-bench replies: writes distinct, valid reply bodies (DESIGN contract 4), one JSON
// object a line, for the reply intake's and `herald ingest`'s benchmarks (scripts/bench-replies).
//
//   herald-bench replies --deliveries FILE [--from I] [--count N] [--per-delivery R] --out FILE
//
// FILE lists deliveries as `id<TAB>category` (psql -At -F $'\t' of deliveries joined to
// campaigns). Tokens are made with HERALD_REPLY_SECRET (base64), as `herald run` makes them.
// Each reply answers its delivery with an action of the category (text for a text input),
// with a fresh random reply_id; deliveries from line I (0-based), N of them (default: all),
// R replies each (default 1).
import Foundation
import HeraldCore

#if canImport(Glibc)
import Glibc
#endif

enum RepliesCommand {
    struct Options {
        var deliveriesPath = ""
        var outPath = ""
        var from = 0
        var count = Int.max
        var perDelivery = 1

        static func parse(_ arguments: [String]) -> Options? {
            var options = Options()
            var iterator = arguments.makeIterator()
            while let argument = iterator.next() {
                guard let value = iterator.next() else { return nil }
                switch argument {
                case "--deliveries": options.deliveriesPath = value
                case "--out": options.outPath = value
                case "--from": guard let v = Int(value), v >= 0 else { return nil }; options.from = v
                case "--count": guard let v = Int(value), v > 0 else { return nil }; options.count = v
                case "--per-delivery": guard let v = Int(value), v > 0 else { return nil }; options.perDelivery = v
                default: return nil
                }
            }
            guard !options.deliveriesPath.isEmpty, !options.outPath.isEmpty else { return nil }
            return options
        }
    }

    /// The actions a reply may carry per category of the benchmark's catalogue
    /// (scripts/bench-replies makes it), and whether they take text.
    static let actions: [String: [(id: String, text: Bool)]] = [
        "poster.v1": [("love_it", false), ("dont_care", false), ("com.apple.UNNotificationDefaultActionIdentifier", false)],
        "feedback.v1": [("comment", true), ("dont_care", false)],
    ]

    static let texts = [
        "Loved the autumn collection!", "La caja llegó dañada.", "とても良かったです！", "Too many notifications\nplease",
        "Tab\tseparated \\ and \"quoted\"", "très bien 👍 — 谢谢",
    ]

    static func run(_ arguments: [String]) -> Int32 {
        guard let options = Options.parse(arguments) else {
            FileHandle.standardError.write(Data("usage: herald-bench replies --deliveries FILE [--from I] [--count N] [--per-delivery R] --out FILE\n".utf8))
            return 2
        }
        guard let encoded = ProcessInfo.processInfo.environment["HERALD_REPLY_SECRET"],
              let secret = try? ReplySecret(base64: encoded) else {
            FileHandle.standardError.write(Data("herald-bench replies: HERALD_REPLY_SECRET must hold the reply secret (base64)\n".utf8))
            return 2
        }
        let tokens = ReplyTokens(secret: secret)
        guard let list = FileManager.default.contents(atPath: options.deliveriesPath) else {
            FileHandle.standardError.write(Data("herald-bench replies: cannot read \(options.deliveriesPath)\n".utf8))
            return 1
        }
        guard FileManager.default.createFile(atPath: options.outPath, contents: nil),
              let out = FileHandle(forWritingAtPath: options.outPath) else {
            FileHandle.standardError.write(Data("herald-bench replies: cannot write \(options.outPath)\n".utf8))
            return 1
        }
        defer { try? out.close() }
        var random = SystemRandomNumberGenerator()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        var index = 0
        var written = 0
        var skipped = 0
        for line in list.split(separator: UInt8(ascii: "\n")) {
            defer { index += 1 }
            guard index >= options.from else { continue }
            guard index - options.from < options.count else { break }
            let fields = line.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
            guard fields.count == 2, let delivery = Int64(String(decoding: fields[0], as: UTF8.self)),
                  let choices = actions[String(decoding: fields[1], as: UTF8.self)] else {
                skipped += 1
                continue
            }
            let token = tokens.token(delivery: delivery)
            for _ in 0..<options.perDelivery {
                let action = choices[Int(random.next() % UInt64(choices.count))]
                var w = JSONWriter(capacity: 256)
                w.raw("{\"delivery\":")
                w.int(delivery)
                w.raw(",\"token\":")
                w.string(token)
                w.raw(",\"action\":")
                w.string(action.id)
                if action.text {
                    w.raw(",\"text\":")
                    w.string(texts[Int(random.next() % UInt64(texts.count))])
                }
                w.raw(",\"occurred_at\":\"2026-11-20T10:00:00Z\",\"reply_id\":")
                w.string(UUID().uuidString.lowercased())
                w.raw("}\n")
                buffer.append(contentsOf: w.bytes)
                written += 1
            }
            if buffer.count >= 1 << 20 {
                out.write(Data(buffer))
                buffer.removeAll(keepingCapacity: true)
            }
        }
        out.write(Data(buffer))
        FileHandle.standardError.write(Data("herald-bench replies: \(written) replies written to \(options.outPath)\(skipped > 0 ? " (\(skipped) lines of the delivery list skipped)" : "")\n".utf8))
        return 0
    }
}
