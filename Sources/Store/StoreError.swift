import HeraldCore
import PostgresNIO

/// A problem of the database or of what it holds, said so that the person
/// who caused it can fix it: a marketer's broken row, a migration that
/// changed, a row that is not there. (A bad setting is a
/// `ConfigurationError`, a file a command cannot use an `InputError`.)
public struct StoreError: Error, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case migration
        case database
        case notFound
        case query
    }

    private let code: Code
    public let message: String
    /// What caused it (a server error, a decoding error), for logs; never
    /// part of `description`, which stays safe to show.
    public let underlying: (any Error)?

    private init(code: Code, message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String { message }

    public static func migration(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .migration, message: message, underlying: underlying)
    }
    public static func database(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .database, message: message, underlying: underlying)
    }
    public static func notFound(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .notFound, message: message, underlying: underlying)
    }
    /// A statement of `Sql/queries/` that does not read, or was called with the wrong binds: a
    /// bug of this build, which its tests catch.
    public static func query(_ name: String, _ problem: String) -> Self {
        Self(code: .query, message: "statement \(name) of Sql/queries: \(problem)")
    }

    /// Equal when they say the same thing; the cause is not compared.
    public static func == (a: Self, b: Self) -> Bool { a.code == b.code && a.message == b.message }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }

    var isMigrationError: Bool { code == .migration }
}

extension StoreError {
    /// The constraint a statement violated, when the server named one.
    public static func constraint(of error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.constraintName]
    }

    /// The SQLSTATE of a failed statement.
    public static func sqlState(of error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }
}
