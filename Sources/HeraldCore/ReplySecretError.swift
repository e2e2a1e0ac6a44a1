import Crypto
import Foundation

/// Why a reply secret was refused. The description never contains the secret.
public struct ReplySecretError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case notBase64
        case tooShort(byteCount: Int)
    }

    private let code: Code

    /// The text is not standard base64.
    public static let notBase64 = Self(code: .notBase64)
    /// The secret decodes to fewer than ``ReplySecret/minimumByteCount`` bytes.
    public static func tooShort(byteCount: Int) -> Self { Self(code: .tooShort(byteCount: byteCount)) }

    public var description: String {
        switch code {
        case .notBase64:
            "reply secret (HERALD_REPLY_SECRET) is not valid base64; generate one with `herald keys reply-secret`"
        case .tooShort(let byteCount):
            "reply secret (HERALD_REPLY_SECRET) decodes to \(byteCount) bytes; at least \(ReplySecret.minimumByteCount) random bytes are required (`herald keys reply-secret`)"
        }
    }
}
