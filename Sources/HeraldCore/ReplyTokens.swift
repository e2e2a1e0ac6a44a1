import Crypto
import Foundation

/// Makes and checks reply tokens (DESIGN contract 4): the first 16 bytes of
/// `HMAC-SHA256(secret, "v1:<delivery>")`, base64url without padding (22 characters).
///
/// Making a token costs one HMAC over a few bytes: the keyed HMAC state is
/// computed once here and copied per token, and the message is written without
/// string formatting.
public struct ReplyTokens: Sendable {
    /// Bytes of the MAC kept in a token.
    public static let macByteCount = 16
    /// Characters of a token: base64url of 16 bytes, without padding.
    public static let tokenLength = 22

    private let keyed: HMAC<SHA256>
    /// The secret tokens were made with before the current one, accepted
    /// until `previousUntil` (a rotation's grace period: notifications sent
    /// before it still carry tokens of the old secret).
    private let previous: HMAC<SHA256>?
    public let previousUntil: Date?

    public init(secret: ReplySecret) {
        keyed = HMAC<SHA256>(key: secret.key)
        previous = nil
        previousUntil = nil
    }

    /// Tokens are made with `secret`; those made with `previous` still verify
    /// until `until`.
    public init(secret: ReplySecret, previous: ReplySecret?, until: Date?) {
        keyed = HMAC<SHA256>(key: secret.key)
        if let previous, let until {
            self.previous = HMAC<SHA256>(key: previous.key)
            previousUntil = until
        } else {
            self.previous = nil
            previousUntil = nil
        }
    }

    /// The token that goes out with delivery `delivery` as `herald.r`.
    public func token(delivery: Int64) -> String {
        withMAC(delivery: delivery) { Base64URL.encode($0) }
    }

    /// Whether `token` is the token of `delivery`. The comparison takes the same
    /// time wherever the first difference is; a token of the wrong length or
    /// alphabet is simply not valid. The expected token is written to the
    /// stack, not made a String (a String per token costs too much at
    /// `herald ingest`'s rate). A token of the previous secret verifies
    /// before `previousUntil` (at `now`, the clock's time when nil).
    public func verify(_ token: String, delivery: Int64, now: Date? = nil) -> Bool {
        guard token.utf8.count == Self.tokenLength else { return false }
        if Self.matches(token, keyed: keyed, delivery: delivery) { return true }
        guard let previous, let previousUntil, now ?? Date() < previousUntil else { return false }
        return Self.matches(token, keyed: previous, delivery: delivery)
    }

    private static func matches(_ token: String, keyed: HMAC<SHA256>, delivery: Int64) -> Bool {
        withMAC(keyed, delivery: delivery) { mac in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.tokenLength) { expected in
                let length = Base64URL.encode(mac, into: expected)
                var token = token
                return token.withUTF8 { given in
                    var difference: UInt8 = 0
                    for index in 0..<length {
                        difference |= expected[index] ^ given[index]
                    }
                    return difference == 0 && length == given.count
                }
            }
        }
    }

    /// Calls `body` with the first `macByteCount` bytes of the MAC of `delivery`.
    private func withMAC<R>(delivery: Int64, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        Self.withMAC(keyed, delivery: delivery, body)
    }

    private static func withMAC<R>(_ keyed: HMAC<SHA256>, delivery: Int64, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var hmac = keyed
        Self.withMessage(delivery: delivery) { hmac.update(data: $0) }
        let mac = hmac.finalize()
        return mac.withUnsafeBytes { bytes in body(UnsafeRawBufferPointer(rebasing: bytes.prefix(Self.macByteCount))) }
    }

    /// Calls `body` with the UTF-8 bytes of `"v1:<delivery>"`, built on the stack.
    private static func withMessage<R>(delivery: Int64, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        // "v1:" + an optional "-" + up to 19 digits.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
            buffer[0] = UInt8(ascii: "v")
            buffer[1] = UInt8(ascii: "1")
            buffer[2] = UInt8(ascii: ":")
            var count = 3
            if delivery < 0 {
                buffer[count] = UInt8(ascii: "-")
                count += 1
            }
            var magnitude = delivery.magnitude
            var digits = 0
            repeat {
                // Written backwards, then reversed in place.
                buffer[count + digits] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                digits += 1
            } while magnitude > 0
            var low = count
            var high = count + digits - 1
            while low < high {
                buffer.swapAt(low, high)
                low += 1
                high -= 1
            }
            count += digits
            return body(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[0..<count])))
        }
    }
}
