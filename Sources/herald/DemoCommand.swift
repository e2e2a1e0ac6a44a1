import ArgumentParser
import Foundation
import HeraldCore
import Runner
import Store

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Make a fresh demo database on DATABASE_URL's server, load the sample campaigns and run the job.")

    @Option(help: "The database to (re)create for the demo.")
    var database = "herald_demo"

    func run() async throws {
        let logger = makeLogger()
        do {
            let config = try HeraldConfiguration()
            let demo = try await DemoSetup(server: config.database, database: database, sqlDirectory: config.sqlDirectory, logger: logger)
                .prepare()
            var demoConfig = config
            demoConfig.database = demo
            if demoConfig.replySecret == nil {
                demoConfig.replySecret = ReplySecret.generate()
                print("demo: HERALD_REPLY_SECRET is not set; using a new secret for this demo only")
            }
            print("demo: database \(demo) migrated and loaded with Sql/sample_data.sql")
            let payloadsPath = FileManager.default.currentDirectoryPath + "/.local/demo-payloads.jsonl"
            try? FileManager.default.createDirectory(atPath: FileManager.default.currentDirectoryPath + "/.local",
                                                     withIntermediateDirectories: true)
            let job = HeraldJob(configuration: demoConfig, logger: logger)
            let summary = try await withPostgres(demo, logger: logger) { client in
                try await job.dryRun(client: client, out: payloadsPath)
            }
            print(summary.report)
            try DemoSetup.printExamples(payloadsPath)
            print("demo: every payload is in \(payloadsPath)")
        } catch {
            throw readable(error)
        }
    }
}
