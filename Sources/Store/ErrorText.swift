import HeraldCore
import PostgresNIO

/// The one place an error becomes a line for a person: Herald's own errors
/// say their message; a statement the server refused, its own words (the
/// message, the violated constraint's name, the hint, the SQLSTATE); a
/// failed transaction, what failed in it first. Never a secret: a
/// `DATABASE_URL`'s password is in none of these.
public enum ErrorText {
    public static func describe(_ error: any Error) -> String {
        switch error {
        case let e as StoreError: return e.message
        case let e as ConfigurationError: return e.message
        case let e as InputError: return e.message
        case let e as PostgresTransactionError:
            guard let cause = e.beginError ?? e.closureError ?? e.commitError else { return "database: the transaction failed" }
            return describe(cause)
        case let psql as PSQLError:
            guard let info = psql.serverInfo else { return "database: \(psql.code)" }
            var text = info[.message] ?? "database error"
            if let hint = info[.hint] { text += " (\(hint))" }
            if let state = info[.sqlState] { text += " [SQLSTATE \(state)]" }
            return text
        default:
            return String(describing: error)
        }
    }
}
