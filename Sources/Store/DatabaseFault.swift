import Lifecycle
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import PostgresNIO

/// What a failed database call says, decided in one place: every caller
/// (the run's retries, the campaign that fails alone, the intake's 503 and
/// 422, pruning) asks this and restates none of its rules.
public enum DatabaseFault: Sendable, Hashable {
    /// A server going away, coming back, failing over or shedding load, a
    /// lost connection, or a statement that was fine but lost a race (a
    /// deadlock, a serialization failure, a lock or statement timeout):
    /// worth the same call again a little later. The intake answers 503.
    case transient
    /// The values a statement carried: a bad value, a violated constraint, a
    /// trigger's RAISE, a row that does not decode. A campaign's own data
    /// fails that campaign; a request's fails that request with a 4xx.
    case refusedValues
    /// The text of a statement, refused by the server (a syntax error, an
    /// unknown column or function): a campaign's segment rule compiled to
    /// SQL, or otherwise a bug in Herald's own SQL.
    case refusedStatement
    /// Anything else: a bug (or a cancellation, which its caller sees first).
    case bug

    public init(_ error: any Error) {
        self = Self.classify(error)
    }

    /// True for what a campaign's own row, rule or data can cause: it fails
    /// that campaign, never the run.
    public var isCampaignsOwn: Bool { self == .refusedValues || self == .refusedStatement }

    /// SQLSTATEs of a server that is going away, coming back, failing over
    /// or shedding load, and of statements that lost a race.
    static let transientStates: Set<String> = [
        "57P01",  // admin_shutdown (a restart, a failover)
        "57P02",  // crash_shutdown
        "57P03",  // cannot_connect_now (starting up, recovering)
        "57P05",  // idle_session_timeout
        "40001",  // serialization_failure
        "40P01",  // deadlock_detected
        "57014",  // query_canceled (statement_timeout)
        "25006",  // read_only_sql_transaction (a standby after failover)
        "55P03",  // lock_not_available (lock_timeout)
    ]
    /// Whole SQLSTATE classes that are transient: 08 connection exception,
    /// 53 insufficient resources (too many connections, out of memory).
    static let transientClasses: Set<String> = ["08", "53"]
    /// Classes of a statement's values: 22 data exception, 23 integrity
    /// constraint, P0 a PL/pgSQL RAISE.
    static let valueClasses: Set<String> = ["22", "23", "P0"]
    /// Classes of a statement's text: 42 syntax or access rule, 2F and 39 a
    /// routine's own exceptions.
    static let statementClasses: Set<String> = ["42", "2F", "39"]

    private static func classify(_ error: any Error) -> Self {
        if let transaction = error as? PostgresTransactionError {
            // The first thing that failed in a transaction decides; a failed
            // rollback after it says nothing more.
            guard let cause = transaction.beginError ?? transaction.closureError ?? transaction.commitError else { return .bug }
            return classify(cause)
        }
        // Herald's own: a call past its deadline, or no server of the URL
        // that fits (a failover under way).
        if error is DatabaseCallTimedOut || error is DatabaseServerUnavailable { return .transient }
        if error is PostgresDecodingError || error is DecodingError { return .refusedValues }
        if let psql = error as? PSQLError {
            if let state = psql.serverInfo?[.sqlState] {
                let kind = String(state.prefix(2))
                if transientStates.contains(state) || transientClasses.contains(kind) { return .transient }
                if valueClasses.contains(kind) { return .refusedValues }
                if statementClasses.contains(kind) { return .refusedStatement }
                return .bug
            }
            switch psql.code {
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .queryCancelled,
                 .sslUnsupported, .failedToAddSSLHandler:
                return .transient
            default:
                return .bug
            }
        }
        // A socket that could not connect or broke, before PostgresNIO wrapped it.
        if error is IOError || error is ChannelError || error is NIOSSLError { return .transient }
        return .bug
    }
}
