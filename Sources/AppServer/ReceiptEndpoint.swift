import ExtensionKit
import Foundation
import HeraldCore
import Store

/// `POST /v1/receipts` (contract 8): checks each receipt's token and time,
/// stores the good ones once per delivery, and says which were refused.
struct ReceiptEndpoint: Sendable {
    let store: ReceiptStore
    let keys: ReplyKeys

    /// The answer's JSON body; a malformed body throws (400, 413).
    func submit(_ bytes: some DataProtocol, now: Date = Date()) async throws -> [UInt8] {
        let receipts: [Receipt]
        do throws(ReplyError) {
            receipts = try ReceiptRules.decode(bytes)
        } catch {
            throw AppServerError(error)
        }
        let tokens = keys.tokens
        var refused: [(index: Int, error: String)] = []
        var checked: [(index: Int, receipt: Receipt)] = []
        for (i, r) in receipts.enumerated() {
            if let problem = ReceiptRules.problem(r, tokens: tokens, now: now) {
                refused.append((i, problem))
            } else {
                checked.append((i, r))
            }
        }
        let result = try await store.store(checked.map(\.receipt))
        let unknown = checked.filter { result.unknown.contains($0.receipt.delivery) }
        refused += unknown.map { ($0.index, "unknown_delivery") }
        refused.sort { $0.index < $1.index }
        AppServerMetrics.receipts(stored: result.stored, refused: refused.count)
        var w = JSONWriter(capacity: 64 + 40 * refused.count)
        w.raw("{\"stored\":")
        w.int(Int64(result.stored))
        w.raw(",\"duplicates\":")
        w.int(Int64(checked.count - unknown.count - result.stored))
        w.raw(",\"refused\":[")
        for (n, r) in refused.enumerated() {
            if n > 0 { w.raw(",") }
            w.raw("{\"index\":")
            w.int(Int64(r.index))
            w.raw(",\"error\":")
            w.string(r.error)
            w.raw("}")
        }
        w.raw("]}")
        return w.bytes
    }
}
