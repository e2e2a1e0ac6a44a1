import ExtensionKit
import Foundation

/// A conversion (docs/analysts.md, "Did it work?"): something a user did
/// that a campaign wants to move, as the app's backend reports it.
public struct Conversion: Sendable, Hashable {
    /// The user's `external_id`.
    public var user: String
    /// `purchase`, `app_open`, `sign_up`…: letters, digits and `_ . : -`.
    public var event: String
    public var occurredAt: Date
    /// A decimal amount as written (`"12.50"`), with its ISO 4217 currency.
    public var amount: String?
    public var currency: String?
    /// The sender's id for it: a retry with the same key is stored once.
    public var idempotencyKey: String

    public init(user: String, event: String, occurredAt: Date, amount: String? = nil, currency: String? = nil,
                idempotencyKey: String) {
        self.user = user
        self.event = event
        self.occurredAt = occurredAt
        self.amount = amount
        self.currency = currency
        self.idempotencyKey = idempotencyKey
    }
}
