import Settings
import ArgumentParser
import Foundation
import Runner
import Store

struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Drop the ledger of finished campaigns older than an age; their figures and replies stay for analysts.",
        discussion: """
            A campaign goes when it is completed, cancelled, failed or archived, has nothing queued or \
            in flight, and its last activity (completion, last ledger write) is older than --older-than \
            and than settings.frequency_window. In one transaction per campaign what the analyst views \
            read of its ledger is kept (its deliveries counted by status, reason, app and variant; its test \
            sends; the deliveries a receipt or a reply refers to; its sends per minute; each user's arm \
            when it held users out), so every view reads as before, and its ledger partition is detached \
            and dropped. \
            Replies are kept. Running campaigns are never touched; a second prune finds nothing to do. \
            Connect as the schema owner (the role that ran herald migrate): herald_job may not drop \
            tables. Exit status: 0 done; 75 a campaign's lock was busy (run it again later); 1 an error.
            """)

    @Option(name: .customLong("older-than"), help: "Prune campaigns whose last activity is older than this: 90d, 12h, 30m, 2w.")
    var olderThan: String

    @Flag(help: "List what would be pruned; write nothing.")
    var dryRun = false

    @Option(help: "Before dropping, write each campaign's ledger rows to DIR/deliveries_c<ID>.jsonl (one JSON object a line).")
    var export: String?

    @OptionGroup var settings: ConfigFileOption

    func validate() throws {
        do {
            _ = try PruneAge.parse(olderThan)
        } catch {
            throw ValidationError(error.message)
        }
        if let export {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: export, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--export \(export): no such directory")
            }
        }
    }

    func run() async throws {
        let busy: Bool
        do {
            let age = try PruneAge.parse(olderThan)
            let config = try settings.load()
            let logger = makeLogger("herald", config)
            let exportDirectory = export.map { URL(fileURLWithPath: $0, isDirectory: true) }
            busy = try await withPostgres(config.database, logger: logger) { client in
                let store = PruneStore(client: client, logger: logger)
                let candidates = try await store.candidates(olderThan: age)
                if candidates.isEmpty {
                    print("prune: no finished campaign older than \(olderThan) has a ledger left to prune")
                    return false
                }
                var busy = false
                var total: Int64 = 0
                var pruned = 0
                for c in candidates {
                    let what = "campaign \(c.campaignID) \"\(c.name)\" [\(c.status), last activity \(c.lastActivity.formatted(.iso8601))]"
                    if dryRun {
                        print("would prune \(what): \(c.deliveries) deliveries (\(c.partition ?? "in deliveries_default"))")
                        continue
                    }
                    switch try await store.prune(c, exportDirectory: exportDirectory) {
                    case .pruned(let done):
                        pruned += 1
                        total += done.deliveries
                        var line = "pruned \(what): \(done.deliveries) deliveries dropped (\(c.partition ?? "moved out of deliveries_default"))"
                        if let file = done.exportedTo { line += ", exported to \(file.path)" }
                        print(line)
                    case .left(let reason):
                        print("left \(what): \(reason)")
                    case .busy:
                        busy = true
                        print("left \(what): a lock on the ledger was busy; run herald prune again later")
                    }
                }
                if dryRun {
                    print("prune --dry-run: \(candidates.count) campaigns would be pruned; nothing was written")
                } else {
                    print("prune: \(pruned) campaigns pruned, \(total) deliveries dropped; their figures and replies stay for analysts")
                }
                return busy
            }
        } catch {
            throw readable(error)
        }
        if busy { throw ExitCode(JobLifecycle.tempFail) }
    }
}
