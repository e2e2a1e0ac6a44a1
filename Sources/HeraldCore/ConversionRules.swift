import ExtensionKit
import Foundation

/// The checks of a conversion body, for `POST /v1/conversions` and
/// `herald ingest-conversions` alike.
public enum ConversionRules {
    public static let maxBodyBytes = 4 * 1024
    static let knownKeys: Set<String> = ["user", "event", "occurred_at", "amount", "currency", "idempotency_key"]

    /// Parses one conversion strictly; the error's code names the field
    /// (`malformed_json` for the shape, `bad_<field>` for a value).
    public static func decode(_ bytes: some DataProtocol) throws(ReplyError) -> Conversion {
        guard bytes.count <= maxBodyBytes else { throw .tooLarge }
        let value: JSONValue
        do {
            value = try StrictJSON.parse(Array(bytes), limits: .init(maxDepth: 2, maxNumberLength: 24))
        } catch {
            throw .malformed("the body is not valid JSON: \(error.description)")
        }
        guard case .object(let m) = value else { throw .malformed("the body is not a JSON object") }
        if let unknown = m.keys.sorted().first(where: { !knownKeys.contains($0) }) {
            throw .malformed("unknown key \(StrictJSON.quote(unknown))")
        }
        func text(_ key: String) throws(ReplyError) -> String {
            guard case .string(let s)? = m[key] else { throw .malformed("\"\(key)\" must be a string") }
            return s
        }
        let user = try text("user")
        let event = try text("event")
        let occurred = try text("occurred_at")
        let key = try text("idempotency_key")
        guard !user.isEmpty, user.utf8.count <= 200 else { throw .invalid("bad_user", "\"user\" must be 1 to 200 bytes") }
        guard (1...100).contains(event.utf8.count),
              event.utf8.allSatisfy({ isWordByte($0) }) else {
            throw .invalid("bad_event", "\"event\" must be 1 to 100 letters, digits or _ . : -")
        }
        guard occurred.utf8.count <= 64, let occurredAt = ReplyBody.timestamp(occurred) else {
            throw .invalid("bad_time", "\"occurred_at\" must be an RFC 3339 timestamp such as 2026-11-20T10:00:00Z")
        }
        guard (1...200).contains(key.utf8.count), !key.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw .invalid("bad_idempotency_key", "\"idempotency_key\" must be 1 to 200 bytes without control characters")
        }
        var amount: String?
        switch m["amount"] {
        case nil, .null?: amount = nil
        case .string(let s)?: amount = s
        case .int(let n)?: amount = String(n)
        default: throw .invalid("bad_amount", "\"amount\" must be a decimal string such as \"12.50\"")
        }
        if let a = amount, !isAmount(a) {
            throw .invalid("bad_amount", "\"amount\" must be a decimal string such as \"12.50\" (at most 12 digits and 2 decimals)")
        }
        var currency: String?
        switch m["currency"] {
        case nil, .null?: currency = nil
        case .string(let s)? where s.utf8.count == 3 && s.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }): currency = s
        default: throw .invalid("bad_currency", "\"currency\" must be an ISO 4217 code such as \"EUR\"")
        }
        if currency != nil, amount == nil { throw .invalid("bad_currency", "\"currency\" needs an \"amount\"") }
        return Conversion(user: user, event: event, occurredAt: occurredAt, amount: amount, currency: currency,
                          idempotencyKey: key)
    }

    static func isWordByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2E || b == 0x3A || b == 0x2D
    }

    static func isAmount(_ s: String) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, (1...12).contains(whole.count),
              whole.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
        if parts.count == 2 {
            return (1...2).contains(parts[1].count) && parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        }
        return true
    }
}
