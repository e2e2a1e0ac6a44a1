import ExtensionKit
import Foundation

/// The checks of contract 4, shared by `POST /v1/replies` and `herald ingest`.
public enum ReplyRules {
    public static let maxTextCharacters = 2000
    public static let maxBodyBytes = 16 * 1024

    /// Longest `action` accepted, in UTF-8 bytes (category action ids are short).
    public static let maxActionBytes = 200
    /// Longest `token` accepted before the token check (a real one is 22 characters).
    public static let maxTokenBytes = 128

    static let knownKeys: Set<String> = ["delivery", "token", "action", "text", "occurred_at", "reply_id"]

    /// Parses one reply strictly (`StrictJSON`: no duplicate keys, no
    /// trailing commas, valid UTF-8, bounded numbers and depth); a field of the
    /// wrong type, a missing or unknown field, a control character in an
    /// identifier or bad JSON is `malformed_json` naming the problem. A body
    /// of the plain shape clients send is read by `PlainReply`, which finds
    /// the same fields without building a `JSONValue`.
    public static func decode(_ bytes: some DataProtocol) throws(ReplyError) -> ReplyBody {
        guard bytes.count <= maxBodyBytes else { throw .tooLarge }
        let array = Array(bytes)
        if let plain = PlainReply.scan(array) {
            return try body(plain)
        }
        return try body(strictFields(array))
    }

    /// The fields as `StrictJSON` reads them, or why they cannot be read.
    static func strictFields(_ bytes: [UInt8]) throws(ReplyError) -> ReplyFields {
        let value: JSONValue
        do {
            value = try StrictJSON.parse(bytes, limits: .init(maxDepth: 4, maxNumberLength: 24))
        } catch {
            throw .malformed("the body is not valid JSON: \(error.description)")
        }
        guard case .object(let members) = value else { throw .malformed("the body is not a JSON object") }
        if members.keys.contains(where: { !knownKeys.contains($0) }),
           let unknown = members.keys.sorted().first(where: { !knownKeys.contains($0) }) {
            throw .malformed("unknown key \(StrictJSON.quote(unknown))")
        }
        // Each member is looked up once (a lookup hashes its key).
        let fields = (delivery: members["delivery"], token: members["token"], action: members["action"],
                      occurred: members["occurred_at"], replyID: members["reply_id"], text: members["text"])
        for (key, field) in [("delivery", fields.delivery), ("token", fields.token), ("action", fields.action),
                             ("occurred_at", fields.occurred), ("reply_id", fields.replyID)] where field == nil {
            throw .malformed("\"\(key)\" is missing")
        }
        guard case .int(let delivery)? = fields.delivery else { throw .malformed("\"delivery\" must be an integer") }
        guard case .string(let token)? = fields.token else { throw .malformed("\"token\" must be a string") }
        guard case .string(let action)? = fields.action else { throw .malformed("\"action\" must be a string") }
        guard case .string(let occurred)? = fields.occurred else { throw .malformed("\"occurred_at\" must be a string") }
        guard case .string(let id)? = fields.replyID else { throw .malformed("\"reply_id\" must be a string") }
        let text: String?
        switch fields.text {
        case nil, .null?: text = nil
        case .string(let value)?: text = value
        default: throw .malformed("\"text\" must be a string")
        }
        return ReplyFields(delivery: delivery, token: token, action: action, occurredAt: occurred, replyID: id, text: text)
    }

    /// The reply, once its fields' own formats check out.
    static func body(_ fields: ReplyFields) throws(ReplyError) -> ReplyBody {
        let (token, action, occurred, id) = (fields.token, fields.action, fields.occurredAt, fields.replyID)
        guard token.utf8.count <= maxTokenBytes, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformed("\"token\" must be printable ASCII of at most \(maxTokenBytes) characters")
        }
        guard !action.isEmpty, action.utf8.count <= maxActionBytes else {
            throw .malformed("\"action\" must be 1 to \(maxActionBytes) bytes")
        }
        guard !action.unicodeScalars.contains(where: isControl) else {
            throw .malformed("\"action\" must not contain control characters")
        }
        for (key, s) in [("occurred_at", occurred), ("reply_id", id)]
        where s.utf8.count > 64 || s.unicodeScalars.contains(where: isControl) {
            throw .malformed("\"\(key)\" is not valid")
        }
        // The fields' own formats (RFC 3339 time, UUID) are read as
        // ExtensionKit's `ReplyBody` decoder reads them, straight from the
        // values proven strict above (no second parse of the bytes).
        guard let occurredAt = ReplyBody.timestamp(occurred) else {
            throw .malformed("\"occurred_at\" is not valid: expected an RFC 3339 timestamp such as 2026-11-20T10:00:00Z")
        }
        guard let replyID = UUIDText.parse(id) else {
            throw .malformed("\"reply_id\" is not valid: expected a UUID")
        }
        return ReplyBody(delivery: fields.delivery, token: token, action: action, text: fields.text,
                         occurredAt: occurredAt, replyID: replyID)
    }

    /// Control characters (Unicode general category Cc, plus the line and
    /// paragraph separators): never part of an identifier.
    /// Cc is exactly U+0000–U+001F and U+007F–U+009F (Unicode keeps the
    /// category stable), so the test needs no property lookup.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        return v < 0x20 || (0x7F...0x9F).contains(v) || v == 0x2028 || v == 0x2029
    }

    /// The token check, before anything is looked up (constant time).
    public static func checkToken(_ body: ReplyBody, tokens: ReplyTokens) throws(ReplyError) {
        guard tokens.verify(body.token, delivery: body.delivery) else { throw .badToken }
    }

    /// What is wrong with a reply's text whatever its delivery: a NUL, or
    /// more than `maxTextCharacters`, counted as PostgreSQL's char_length
    /// counts (code points), not as Swift's Character (grapheme clusters):
    /// "e" followed by 3,000 combining marks is one Character but 3,001 code
    /// points.
    public static func textProblem(_ text: String) -> ReplyError? {
        guard !text.utf8.contains(0) else { return .textInvalid }
        guard text.unicodeScalars.count <= maxTextCharacters else { return .textTooLong }
        return nil
    }
}
