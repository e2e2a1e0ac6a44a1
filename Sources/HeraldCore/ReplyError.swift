import ExtensionKit
import Foundation

/// A refused reply (DESIGN, contract 4): a stable code and a message for the
/// app developer. The message never holds the token or the text. Which HTTP
/// status a code is answered with is the HTTP module's business
/// (`ReplyIntake`'s `IntakeError`), so `herald ingest` and the server share
/// these without HTTP leaking into the domain.
public struct ReplyError: Error, Hashable, CustomStringConvertible {
    /// The stable code of the contract (`malformed_json`, `bad_token`, …).
    public let code: String
    public let message: String

    init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// The body is not the JSON object of contract 4 (bad JSON, a missing or
    /// unknown field, a wrong type, a control character in an identifier).
    public static func malformed(_ message: String) -> Self { Self(code: "malformed_json", message: message) }
    public static let badToken = Self(code: "bad_token", message: "the reply token does not belong to this delivery")
    public static let unknownDelivery = Self(code: "unknown_delivery", message: "no such delivery")
    public static func actionNotAllowed(_ action: String, category: String?) -> Self {
        Self(code: "action_not_allowed",
             message: "action \(StrictJSON.quote(action, max: 64)) is not an action of the campaign's category \(category.map { StrictJSON.quote($0, max: 64) } ?? "(none)")")
    }
    public static let textNotAllowed = Self(code: "text_not_allowed", message: "text is only accepted for a text-input action")
    public static let textTooLong = Self(code: "text_too_long",
                                         message: "text is longer than \(ReplyRules.maxTextCharacters) characters (Unicode code points, as the database counts them)")
    public static let textInvalid = Self(code: "text_invalid", message: "text must not contain NUL characters")
    public static let tooLarge = Self(code: "body_too_large", message: "the body is larger than \(ReplyRules.maxBodyBytes) bytes")
    /// The database refused a reply that passed every check here (a rule of
    /// the schema this code does not know); never a transient fault.
    public static func refusedByDatabase(_ message: String) -> Self { Self(code: "reply_refused", message: message) }

    /// Every code, for documentation and tests.
    static let allCodes = ["malformed_json", "bad_token", "unknown_delivery", "action_not_allowed",
                                  "text_not_allowed", "text_too_long", "text_invalid", "body_too_large", "reply_refused"]
}

extension ReplyError {
    /// A value the contract refuses, under its own code (answered 422).
    public static func invalid(_ code: String, _ message: String) -> Self { Self(code: code, message: message) }
}
