import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// An app and a device language: a notification-config document is made for each.
public struct AppLocale: Sendable, Hashable {
    public var app: String
    public var locale: String

    public init(app: String, locale: String) {
        self.app = app
        self.locale = locale
    }
}
