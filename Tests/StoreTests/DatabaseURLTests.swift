@testable import Store
import Testing

/// `DATABASE_URL` as libpq writes it, one server or several, and which server of several a
/// process uses (`ServerChoice`), on plain values.
@Suite("DATABASE_URL and the choice of server")
struct DatabaseURLTests {
    @Test("URLs as libpq writes them", arguments: [
        ("postgres://herald@127.0.0.1:5433/herald", ["127.0.0.1:5433"], "herald", "herald", nil, "disable", "any"),
        ("postgresql://app:s%40cret@db.internal/campaigns?sslmode=require", ["db.internal:5432"], "app", "campaigns", "s@cret", "require", "any"),
        ("postgres://herald@10.0.0.1:5432,10.0.0.2:5433/herald?target_session_attrs=read-write",
         ["10.0.0.1:5432", "10.0.0.2:5433"], "herald", "herald", nil, "prefer", "read-write"),
        ("postgres://u:p@[::1]:6000,localhost/d?target_session_attrs=primary", ["[::1]:6000", "localhost:5432"], "u", "d", "p", "disable", "primary"),
        ("postgres://db", ["db:5432"], "postgres", "postgres", nil, "prefer", "any"),
    ] as [(String, [String], String, String, String?, String, String)])
    func parses(url: String, servers: [String], user: String, database: String, password: String?, ssl: String, target: String) throws {
        let c = try DatabaseConfiguration(url: url)
        #expect(c.endpoints.map(\.description) == servers)
        #expect(c.username == user && c.database == database && c.password == password)
        #expect(c.sslMode == ssl && c.targetSession.rawValue == target)
    }

    @Test("a bad URL is refused naming what is wrong, never the password", arguments: [
        ("mysql://u@h/d", "must look like postgres://"),
        ("postgres://u:hunter2@h1:5432,:5433/d", "must look like postgres://"),
        ("postgres://u:hunter2@h1:99999/d", "port must be a number from 1 to 65535, not 99999"),
        ("postgres://u:hunter2@h1,h2/d?target_session_attrs=prefer-standby", "target_session_attrs must be one of any, read-write, primary, not prefer-standby"),
        ("postgres://u:hunter2@h1/d?sslmode=verify-full", "sslmode must be disable, prefer or require, not verify-full"),
    ])
    func refuses(url: String, says: String) {
        #expect {
            _ = try DatabaseConfiguration(url: url)
        } throws: { error in
            "\(error)".contains(says) && !"\(error)".contains("hunter2")
        }
    }

    @Test("the URL a child process is given keeps every server and the target, never the password")
    func describesEveryServer() throws {
        let c = try DatabaseConfiguration(url: "postgres://job:secret@127.0.0.1:5001,127.0.0.1:5002/herald?target_session_attrs=read-write")
        #expect(c.description == "postgres://job@127.0.0.1:5001,127.0.0.1:5002/herald?target_session_attrs=read-write")
        let again = try DatabaseConfiguration(url: c.description)
        #expect(again.endpoints == c.endpoints && again.targetSession == .readWrite && again.password == nil)
        #expect(try DatabaseConfiguration(url: "postgres://a@db/x?sslmode=require").description == "postgres://a@db:5432/x?sslmode=require")
    }

    @Test("the first server that fits is used, kept while it fits, and chosen again after a failover")
    func choosesAsLibpqDoes() {
        var choice = ServerChoice(target: .readWrite)
        #expect(choice.state == .starting)
        // The first server is a standby: the second, the primary, is used.
        #expect(choice.checkedAll([.standby, .primary]) == .use(1))
        #expect(choice.checked(.primary) == .none)
        #expect(choice.state == .using(1))
        // The primary dies: dropped; while the standby is not promoted, none fits.
        #expect(choice.checked(.unreachable) == .drop(1))
        #expect(choice.state == .none)
        #expect(choice.checkedAll([.standby, .unreachable]) == .failWaiting)
        // Promoted: used.
        #expect(choice.checkedAll([.primary]) == .use(0))
        // A server that turns read-only (default_transaction_read_only) no longer fits read-write…
        #expect(choice.checked(.init(reachable: true, readOnly: true)) == .drop(0))
        // …but fits `primary`, and anything reachable fits `any`.
        var primary = ServerChoice(target: .primary)
        #expect(primary.checkedAll([.unreachable, .init(reachable: true, readOnly: true)]) == .use(1))
        var any = ServerChoice(target: .any)
        #expect(any.checkedAll([.unreachable, .standby]) == .use(1))
        #expect(any.checked(.standby) == .none)
    }
}
