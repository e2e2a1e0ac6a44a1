import Foundation
import Runner
import Settings
import Testing
import TestSupport

/// The settings' defaults (`ConfigurationKey`, what `herald config keys` and
/// docs/operators.md list) are the authority; `RunOptions`' own defaults, which
/// the library's callers and the tests use, are held to them here.
@Suite("Run options' defaults")
struct RunOptionsDefaultsTests {
    @Test func runOptionsDefaultToTheSettingsDefaults() throws {
        let settings = try HeraldConfiguration(environment: [
            "DATABASE_URL": "postgres://herald@127.0.0.1:5432/herald",
            "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
        ])
        let options = RunOptions(topic: settings.topic)
        #expect(options.batchSize == settings.batchSize)
        #expect(options.concurrency == settings.concurrency)
        #expect(options.campaignsAtOnce == settings.campaignsAtOnce)
        #expect(options.recordEvery == settings.recordEvery)
        #expect(options.recordInterval == settings.recordInterval)
        #expect(options.firstSnapshotSlice == Int64(settings.snapshotSlice))
        #expect(options.lease == settings.lease)
        #expect(options.outageBudget == settings.outageBudget)
        #expect(options.databaseBudget == settings.databaseBudget)
        #expect(options.stopGrace == settings.stopGrace)
        #expect(options.retryWait == settings.retryWait)
        #expect(options.configRefreshLead == TimeInterval(settings.configRefreshLeadMinutes * 60))
        #expect(options.repeatBound == settings.concurrency + settings.recordEvery)
    }
}
