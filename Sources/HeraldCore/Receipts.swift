import ExtensionKit
import Foundation

/// The checks of contract 8 (delivery receipts) that need no database: the
/// body's shape, each receipt's fields and its token.
public enum ReceiptRules {
    public static let maxBodyBytes = 16 * 1024
    /// How far ahead of the server's clock an `arrived_at` may be.
    public static let maxClockAhead: TimeInterval = 300

    static let knownKeys: Set<String> = ["delivery", "token", "arrived_at", "sealed_opened", "media_attached"]

    /// Parses a request body strictly (`StrictJSON`): `{"receipts": [...]}`
    /// with 1 to `Receipt.maxPerRequest` receipts, each with known fields of
    /// the right types. Anything else is `malformed_json` naming the problem.
    public static func decode(_ bytes: some DataProtocol) throws(ReplyError) -> [Receipt] {
        guard bytes.count <= maxBodyBytes else { throw .tooLarge }
        let value: JSONValue
        do {
            value = try StrictJSON.parse(Array(bytes), limits: .init(maxDepth: 4, maxNumberLength: 24))
        } catch {
            throw .malformed("the body is not valid JSON: \(error.description)")
        }
        guard case .object(let top) = value, top.count == 1, case .array(let items)? = top["receipts"] else {
            throw .malformed("the body must be {\"receipts\": [...]}")
        }
        guard (1...Receipt.maxPerRequest).contains(items.count) else {
            throw .malformed("\"receipts\" must hold 1 to \(Receipt.maxPerRequest) receipts, not \(items.count)")
        }
        var receipts: [Receipt] = []
        receipts.reserveCapacity(items.count)
        for (i, item) in items.enumerated() {
            receipts.append(try receipt(item, index: i))
        }
        return receipts
    }

    static func receipt(_ item: JSONValue, index i: Int) throws(ReplyError) -> Receipt {
        guard case .object(let m) = item else { throw .malformed("receipts[\(i)] is not an object") }
        if let unknown = m.keys.sorted().first(where: { !knownKeys.contains($0) }) {
            throw .malformed("receipts[\(i)]: unknown key \(StrictJSON.quote(unknown))")
        }
        guard case .int(let delivery)? = m["delivery"] else { throw .malformed("receipts[\(i)].delivery must be an integer") }
        guard case .string(let token)? = m["token"], token.utf8.count <= ReplyRules.maxTokenBytes,
              token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformed("receipts[\(i)].token must be printable ASCII of at most \(ReplyRules.maxTokenBytes) characters")
        }
        guard case .string(let arrived)? = m["arrived_at"], arrived.utf8.count <= 64,
              let arrivedAt = Receipt.timestamp(arrived) else {
            throw .malformed("receipts[\(i)].arrived_at must be an RFC 3339 timestamp such as 2026-11-20T10:00:00.250Z")
        }
        func flag(_ key: String) throws(ReplyError) -> Bool? {
            switch m[key] {
            case nil, .null?: return nil
            case .bool(let b)?: return b
            default: throw .malformed("receipts[\(i)].\(key) must be true, false or null")
            }
        }
        return Receipt(delivery: delivery, token: token, arrivedAt: arrivedAt,
                       sealedOpened: try flag("sealed_opened"), mediaAttached: try flag("media_attached"))
    }

    /// Why one receipt is refused before the database, or nil.
    public static func problem(_ r: Receipt, tokens: ReplyTokens, now: Date) -> String? {
        guard tokens.verify(r.token, delivery: r.delivery) else { return "bad_token" }
        guard r.arrivedAt.timeIntervalSince(now) <= maxClockAhead else { return "bad_time" }
        return nil
    }
}
