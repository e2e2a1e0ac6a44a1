/// Which of a multi-host `DATABASE_URL`'s servers a process uses, with no I/O (`Database`
/// checks the servers and reports here).
///
/// The rule, libpq's: the first server in the URL's order that fits `target_session_attrs`.
/// Once one is in use it stays in use while it fits; when it stops answering, or no longer
/// fits (a primary demoted, or a standby beside a promoted one), none is in use until a check
/// of every server finds the first that fits (a failover: the promoted standby).
struct ServerChoice: Equatable {
    /// What a check of one server found.
    struct Found: Equatable {
        var reachable: Bool
        var inRecovery = false
        var readOnly = false

        static let unreachable = Found(reachable: false)
        static let primary = Found(reachable: true)
        static let standby = Found(reachable: true, inRecovery: true, readOnly: true)

        func fits(_ target: DatabaseConfiguration.TargetSession) -> Bool {
            switch target {
            case .any: reachable
            case .readWrite: reachable && !readOnly
            case .primary: reachable && !inRecovery
            }
        }
    }

    enum State: Equatable {
        /// No server checked yet: calls wait for the first check.
        case starting
        /// None fits: calls fail at once with a transient error.
        case none
        /// This server is in use.
        case using(Int)
    }

    enum Action: Equatable {
        case none
        /// Put this server in use (a pool of its own), and hand it to the waiting calls.
        case use(Int)
        /// Stop using this server: its pool closes, and calls waiting for it fail.
        case drop(Int)
        /// No server fits: the waiting calls fail.
        case failWaiting
    }

    let target: DatabaseConfiguration.TargetSession
    private(set) var state = State.starting

    init(target: DatabaseConfiguration.TargetSession) {
        self.target = target
    }

    /// The server in use was checked.
    mutating func checked(_ found: Found) -> Action {
        guard case .using(let server) = state, !found.fits(target) else { return .none }
        state = .none
        return .drop(server)
    }

    /// Every server was checked (in the URL's order), when none is in use.
    mutating func checkedAll(_ found: [Found]) -> Action {
        if case .using = state { return .none }
        guard let first = found.firstIndex(where: { $0.fits(target) }) else {
            state = .none
            return .failWaiting
        }
        state = .using(first)
        return .use(first)
    }
}
