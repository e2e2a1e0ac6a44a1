import Settings
import Foundation
import Runner
import Testing
import TestSupport

/// `HERALD_METRICS_TEXTFILE`: the run's figures for node exporter.
@Suite("Run metrics")
struct RunMetricsTests {
    @Test func aRunsFiguresParseAsPrometheusTextAndMatchTheSummary() async throws {
        try await TestDatabase.with { client, database in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 30))
            try await client.exec(Fixtures.campaign(name: "Metered"))
            try await withSimulator { sim in
                var configuration = try HeraldConfiguration(environment: [
                    "DATABASE_URL": "postgres://unused@127.0.0.1/unused", "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
                    "HERALD_METRICS_TEXTFILE": "/var/lib/node-exporter/herald.prom",
                ])
                #expect(configuration.metricsTextfile == "/var/lib/node-exporter/herald.prom")
                configuration.database = database
                configuration.replySecret = .generate()
                let summary = try await HeraldJob(configuration: configuration, logger: TestDatabase.logger)
                    .send(client: client, apns: sim.clientConfiguration)
                let samples = try PrometheusExposition.parse(summary.prometheusText(exitStatus: summary.exitStatus))
                let campaign = try #require(summary.campaigns.first).id
                #expect(samples["herald_run_notifications{outcome=\"sent\"}"] == 30)
                #expect(samples["herald_run_campaign_notifications{campaign=\"\(campaign)\",outcome=\"sent\"}"] == 30)
                #expect(samples["herald_run_campaign_notifications{campaign=\"\(campaign)\",outcome=\"targeted\"}"] == 30)
                #expect(samples["herald_run_exit_status"] == 0)
                #expect(samples["herald_run_campaigns"] == 1)
                #expect((samples["herald_run_duration_seconds"] ?? 0) > 0)
            }
        }
    }

    @Test func theTextfileSettingNamesItsKey() {
        #expect {
            try HeraldConfiguration(environment: [
                "DATABASE_URL": "postgres://u@127.0.0.1/db", "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
                "HERALD_METRICS_TEXTFILE": "/tmp/herald.txt",
            ])
        } throws: { "\($0)".contains("HERALD_METRICS_TEXTFILE") }
    }
}
