import Crypto
import Foundation

/// The key of reply tokens (DESIGN contract 4): at least 32 random bytes,
/// configured base64-encoded as `HERALD_REPLY_SECRET`. Printing it shows no bytes.
public struct ReplySecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let minimumByteCount = 32

    let key: SymmetricKey

    /// The secret from its standard base64 text. Whitespace and line breaks
    /// (a trailing newline in a secrets file, `openssl rand -base64 64`'s
    /// wrapping) are ignored; anything else that is not base64 is refused.
    public init(base64 text: String) throws(ReplySecretError) {
        let compact = String(text.unicodeScalars.filter { !CharacterSet.whitespacesAndNewlines.contains($0) })
        guard let bytes = Data(base64Encoded: compact) else { throw .notBase64 }
        try self.init(bytes: bytes)
    }

    /// The secret from its raw bytes.
    public init(bytes: some DataProtocol) throws(ReplySecretError) {
        guard bytes.count >= Self.minimumByteCount else { throw .tooShort(byteCount: bytes.count) }
        key = SymmetricKey(data: Data(bytes))
    }

    private init(key: SymmetricKey) {
        self.key = key
    }

    /// A new secret of 32 bytes from the system's secure random generator.
    public static func generate() -> ReplySecret {
        ReplySecret(key: SymmetricKey(size: .bits256))
    }

    /// The secret as standard base64, for `HERALD_REPLY_SECRET`. Handle with care.
    public func base64EncodedString() -> String {
        key.withUnsafeBytes { Data($0).base64EncodedString() }
    }

    /// The secret's length in bytes.
    public var byteCount: Int { key.bitCount / 8 }

    public var description: String { "ReplySecret(<redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
