import ArgumentParser
import Demo
import Foundation
import HeraldCore
import Reporting
import Runner
import Store

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "The whole loop on DATABASE_URL's server: sample campaigns → APNs simulator → device replies → analyst views.",
        discussion: "Recreates the demo database, loads Sql/sample_data.sql, starts the APNs simulator and the reply intake in-process, lets the devices of Sql/sample_devices.tsv register themselves through PUT /v1/devices/{token}, runs the job half an hour before the campaigns (config refresh pushes) and at their send_at, lets a fleet of simulated devices answer, and prints the analyst report; writes it as an HTML page to .local/demo-report.html.")

    @Option(help: "The database to (re)create for the demo.")
    var database = "herald_demo"

    @Flag(help: "Only print the payloads each device would receive (no APNs, no replies).")
    var dryRun = false

    @OptionGroup var settings: ConfigFileOption

    func run() async throws {
        do {
            let config = try settings.load()
            var logger = makeLogger("herald", config)
            if config.logLevel == nil { logger.logLevel = .warning }
            let demo = try await DemoSetup(server: config.database, database: database,
                                           sqlFiles: config.sqlFiles, logger: logger).prepare()
            var demoConfig = config
            demoConfig.database = demo
            if demoConfig.replySecret == nil {
                demoConfig.replySecret = ReplySecret.generate()
                print("demo: HERALD_REPLY_SECRET is not set; using a new secret for this demo only")
            }
            print("demo: database \(demo) migrated and loaded with Sql/sample_data.sql")
            let work = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".local")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)

            if dryRun {
                let apps = try await DemoLoop(configuration: demoConfig, workDirectory: work, logger: logger).registerDevices()
                print(apps)
                let payloadsPath = work.appendingPathComponent("demo-payloads.jsonl").path
                let job = HeraldJob(configuration: demoConfig, logger: logger)
                let quiet = logger
                let summary = try await withPostgres(demo, logger: logger) { client in
                    try await DemoLoop.bringScheduledCampaignsDue(client, logger: quiet)
                    return try await job.dryRun(client: client, out: payloadsPath)
                }
                print(summary.report)
                try DemoSetup.printExamples(payloadsPath)
                print("demo: every payload is in \(payloadsPath)")
                return
            }

            let outcome = try await DemoLoop(configuration: demoConfig, workDirectory: work, logger: logger).execute()
            for (i, run) in outcome.runs.enumerated() {
                print(i == 0 ? "\n== the batch run half an hour before the campaigns (APNs simulator on 127.0.0.1, HTTP/2 + TLS)"
                             : "\n== the batch run at their send_at (the demo moves send_at to now instead of waiting)")
                print(run.report)
            }
            print("\n== the apps (PUT /v1/devices/{token} with their backend's JWT; on a refresh push, GET /v1/notification-config)")
            print(outcome.apps)
            print("\n== the devices (extension kit: open sealed fields, answer, POST /v1/replies)")
            print(outcome.fleet)
            print("shop: \(outcome.purchases) purchases reported to POST /v1/conversions")
            print("\n== later, the flash sale as a Live Activity (one run for its start, each update, its end; the demo moves its clock)")
            for run in outcome.saleRuns {
                print(run.report)
            }
            print(outcome.sale)
            print("\n== then a journey, \"After the order\" (three runs; the demo moves its clock two days before the last)")
            print(outcome.journey)
            print("\n== what analysts see (analyst.campaign_funnel, analyst.action_breakdown, analyst.feedback_text)")
            print(outcome.report)
            guard outcome.journey.matches else {
                throw ConfigurationError("the demo's journey took other paths than its devices' answers call for (above)")
            }
            let reportPath = work.appendingPathComponent("demo-report.html").path
            let reportLogger = logger
            let reportData = try await withPostgres(demo, logger: reportLogger) { client in
                try await AnalystReport(client: client, logger: reportLogger).data()
            }
            let reportFile = try LineFile(path: reportPath)
            try await reportFile.write(Array(ReportPage.html(reportData).utf8))
            try await reportFile.finish()
            print("\ndemo: notifications the simulator accepted are in \(outcome.acceptedLog)")
            print("demo: the analysts' report (charts, feedback search) is in \(reportPath)")
            print("demo: query it yourself: psql \"$(scripts/pg url)_demo\" -c 'SELECT * FROM analyst.campaign_funnel'")
        } catch {
            throw readable(error)
        }
    }
}
