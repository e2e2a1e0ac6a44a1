import Foundation
import Lifecycle
import Logging
import Store

/// How a batch run behaves.
public struct RunOptions: Sendable {
    /// The bundle id (`apns-topic`) of the app `default` (APNS_TOPIC).
    public var topic: String
    /// Each app's topic and credential; by default one app on `topic`.
    public var apps: AppRoutes
    /// Build and print the payloads instead of sending them.
    public var dryRun: Bool
    /// Deliveries claimed from the ledger at a time.
    public var batchSize: Int
    /// Notifications in flight at once.
    public var concurrency: Int
    /// Outcomes are written to the ledger at least every `recordEvery`
    /// notifications…
    public var recordEvery: Int
    /// …and at least every `recordInterval`.
    public var recordInterval: Duration
    public var host: String
    /// How long before a campaign's `send_at` its audience gets the config refresh push (contract 7).
    public var configRefreshLead: TimeInterval = 3600
    /// How long a claimed delivery belongs to this run without a renewal.
    public var lease: Duration
    /// The longest one notification can take in the APNs client, all its
    /// attempts and backoffs included: a send starts only when it will end
    /// before the run's leases can expire.
    public var sendSpan: Duration
    /// How long APNs may stay unreachable (the circuit breaker open) before
    /// the run stops with work left for the next one.
    public var outageBudget: Duration
    /// Consecutive transport failures (no connection, timeouts) to one APNs
    /// host that open its circuit breaker.
    public var breakerThreshold: Int
    /// How long one database call is retried through a restart, failover,
    /// deadlock or statement timeout before the run stops.
    public var databaseBudget: Duration
    /// How long a stopping run lets in-flight notifications finish.
    public var stopGrace: Duration
    /// A run waits for deliveries whose retry backoff ends within this time
    /// instead of leaving them to the next run.
    public var retryWait: Duration
    /// Asked to stop (SIGTERM, SIGINT): stop claiming, finish, record.
    /// The time the run goes by: every reading and every timed wait (tests give their own).
    public var clock: any HeraldClock = .system
    public var stop: StopSignal
    /// Device ids in a campaign's first audience slice; sending starts once
    /// it is written, while the next slices are (`campaigns.snapshot_through`).
    public var firstSnapshotSlice: Int64 = AudienceStore.defaultFirstSlice
    /// The next audience slice of a campaign without a pace starts only
    /// while at most this many rows written are not yet read by its claims
    /// (or when they found nothing to take): about 30 s of sending on 2 cores,
    /// where the largest slice (`AudienceStore` caps it at 1,000,000
    /// device ids) commits in about 17 s.
    public var snapshotLead = 600_000
    /// Journey members claimed, decided on and written in one transaction.
    public var journeyBatch = 500
    /// At most this many batches of journey members a run moves before it sends.
    public var journeyBatchesPerRun = 10_000
    /// Due campaigns sent at once (in `DueOrder`), sharing the run's
    /// concurrency and repeat bound; 1: one after another.
    public var campaignsAtOnce = 4
    /// Campaigns whose plan allows it (`CampaignPlan.sendsBySpans`) are written as batch rows and sent by
    /// ranges (docs/DESIGN.md, "The ledger by ranges"); false: every row by row, as the tests
    /// that compare the two ledgers on the same runs ask.
    public var spans = true

    public init(topic: String, dryRun: Bool = false, batchSize: Int = 1000, concurrency: Int = 200,
                recordEvery: Int = 1000, recordInterval: Duration = .milliseconds(250),
                host: String = ProcessInfo.processInfo.hostName,
                lease: Duration = .seconds(300), sendSpan: Duration = .seconds(185),
                outageBudget: Duration = .seconds(300), breakerThreshold: Int = 3,
                databaseBudget: Duration = .seconds(120), stopGrace: Duration = .seconds(20),
                retryWait: Duration = .seconds(60), stop: StopSignal = StopSignal()) {
        self.topic = topic
        self.apps = .single(topic: topic)
        self.dryRun = dryRun
        self.batchSize = batchSize
        self.concurrency = concurrency
        self.recordEvery = recordEvery
        self.recordInterval = recordInterval
        self.host = host
        self.lease = lease
        self.sendSpan = sendSpan
        self.outageBudget = outageBudget
        self.breakerThreshold = breakerThreshold
        self.databaseBudget = databaseBudget
        self.stopGrace = stopGrace
        self.retryWait = retryWait
        self.stop = stop
    }

    /// How often a run renews its leases.
    public var renewEvery: Duration { lease / 10 }

    /// The most notifications APNs can have accepted that the ledger does
    /// not show yet, at any moment: what a kill -9 can make the next run
    /// send again (docs/operators.md, "Reliability").
    public var repeatBound: Int { concurrency + recordEvery }
}

extension DatabaseRetry {
    /// A run's database calls: retried through transient faults for `HERALD_DB_OUTAGE_SECONDS`
    /// at most, on the run's clock.
    init(_ options: RunOptions, logger: Logger) {
        self.init(budget: options.databaseBudget, attemptTimeout: max(options.databaseBudget / 2, .seconds(5)),
                  logger: logger, clock: options.clock)
    }
}
