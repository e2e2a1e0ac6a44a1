import PostgresNIO

/// A database problem, said so that the person who caused it can fix it:
/// a marketer's broken row, an operator's bad URL, a migration that changed.
public struct StoreError: Error, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case configuration
        case migration
        case database
        case notFound
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

    public static func configuration(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .configuration, message: message, underlying: underlying)
    }
    public static func migration(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .migration, message: message, underlying: underlying)
    }
    public static func database(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .database, message: message, underlying: underlying)
    }
    public static func notFound(_ message: String, underlying: (any Error)? = nil) -> Self {
        Self(code: .notFound, message: message, underlying: underlying)
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
    /// The server's own words for a failed statement: the message, the
    /// violated constraint's name (the schema names constraints as sentences),
    /// and the hint.
    public static func describe(_ error: any Error) -> String {
        guard let psql = error as? PSQLError else {
            return String(describing: error)
        }
        guard let info = psql.serverInfo else {
            return "database: \(psql.code)"
        }
        var text = info[.message] ?? "database error"
        if let hint = info[.hint] { text += " (\(hint))" }
        if let state = info[.sqlState] { text += " [SQLSTATE \(state)]" }
        return text
    }

    /// The constraint a statement violated, when the server named one.
    public static func constraint(of error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.constraintName]
    }

    /// The SQLSTATE of a failed statement.
    public static func sqlState(of error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }
}
