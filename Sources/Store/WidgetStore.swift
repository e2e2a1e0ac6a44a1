import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Widget pushes (`widget_tokens`, `herald_widget_push`; DESIGN, contract 10, "Widget pushes"): each device's widget token,
/// and a campaign's widget push, a campaign row of its own made when the campaign starts, whose
/// audience is the campaign's devices with a widget token.
public struct WidgetStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Makes the widget push of `campaign`, due now, once. Returns its id when this call made it.
    public func makeWidgetPush(campaign: Int64) async throws -> Int64? {
        for try await id in try await client.query("SELECT herald_widget_push(\(campaign))", logger: logger).decode(Int64?.self) {
            return id
        }
        return nil
    }

    /// The widget push's audience, written once (its row, locked, says whether it was): the
    /// devices of its campaign's ledger that the campaign reaches (not held out, skipped or
    /// cancelled) and that registered a widget token. Nil while the campaign's own audience is
    /// still being written: the push waits for it.
    public func snapshot(_ push: Int64, of campaign: Int64, start: Bool) async throws -> SnapshotResult? {
        _ = try await AudienceStore(client: client, logger: logger).ensurePartition(campaign: push)
        return try await client.withTransaction(logger: logger) { conn -> SnapshotResult? in
            var pending = false
            for try await fresh in try await conn.query(try SQLQueries.named("widgets/lock-push").query(["push": .value(push)]),
                                                        logger: logger).decode(Bool.self) { pending = fresh }
            guard pending, start else { return SnapshotResult() }
            var written = false
            for try await done in try await conn.query(
                try SQLQueries.named("widgets/campaign-written").query(["campaign": .value(campaign)]),
                logger: logger).decode(Bool.self) { written = done }
            guard written else { return nil }
            var inserted = 0
            for try await n in try await conn.query(
                try SQLQueries.named("widgets/snapshot").query(["push": .value(push), "campaign": .value(campaign)]),
                logger: logger).decode(Int64.self) { inserted = Int(n) }
            try await conn.query(try SQLQueries.named("widgets/start-push").query(["push": .value(push)]), logger: logger)
            return SnapshotResult(inserted: inserted, queued: inserted)
        }
    }

    public enum Registered: Sendable, Hashable {
        case stored(created: Bool)
        /// The device token is not registered to that user and app.
        case unknownDevice
    }

    /// The device's widget token (one per device; a new one replaces it).
    public func register(device token: String, user: String, app: String, widgetToken: String) async throws -> Registered {
        let query = try SQLQueries.named("widgets/register").query([
            "token": .value(token), "user": .value(user), "app": .value(app), "widget_token": .value(widgetToken),
        ])
        for try await created in try await client.query(query, logger: logger).decode(Bool.self) {
            return .stored(created: created)
        }
        return .unknownDevice
    }
}
