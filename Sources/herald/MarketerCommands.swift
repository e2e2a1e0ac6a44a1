import ArgumentParser
import Foundation
import HeraldCore
import Lifecycle
import Runner
import Store

struct PreviewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview",
        abstract: "Show what a run would do with a campaign (any status), writing nothing to the database.",
        discussion: """
            Prints each content locale's payload (per-device fields as samples) with its size and \
            APNs headers, the audience a run would snapshot now (queued, skipped by reason, deferred \
            by quiet hours; counted with the run's own statement in a transaction that is rolled back) \
            and the problems a run would fail the campaign for. Exit status: 0 the campaign could go \
            out; 1 it could not (the problems are listed), or an error.
            """)

    @Argument(help: "The campaign's id (campaigns.id).")
    var campaign: Int64?

    @Option(help: "Preview a journey instead (journeys.id): its graph, what each step sends per locale, the problems it would be refused for, where its members are, and the path a sample of them would take now (exit status 1: it has problems).")
    var journey: Int64?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @OptionGroup var settings: ConfigFileOption

    func validate() throws {
        guard (campaign == nil) != (journey == nil) else {
            throw ValidationError("give a campaign's id, or --journey and a journey's id (one of them)")
        }
        if journey != nil, json { throw ValidationError("--json is for a campaign's preview") }
    }

    func run() async throws {
        if let journey {
            let preview: JourneyPreview
            do {
                let config = try settings.load()
                let logger = makeLogger("herald", config)
                preview = try await withPostgres(config.database, logger: logger) { client in
                    try await JourneyPreview.make(client: client, journey: journey, logger: logger)
                }
            } catch {
                throw readable(error)
            }
            print(preview.text)
            if !preview.canRun { throw ExitCode.failure }
            return
        }
        guard let campaign else { return }
        let preview: CampaignPreview
        do {
            let config = try settings.load()
            let logger = makeLogger("herald", config)
            preview = try await withPostgres(config.database, logger: logger) { client in
                try await HeraldJob(configuration: config, logger: logger).preview(client: client, campaign: campaign)
            }
        } catch {
            throw readable(error)
        }
        if json {
            FileHandle.standardOutput.write(Data(preview.json))
        } else {
            print(preview.text)
        }
        if !preview.canGoOut { throw ExitCode.failure }
    }
}

struct SendTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send-test",
        abstract: "Send one real notification of a campaign to a named device (or every device of a user), recorded as a test.",
        discussion: """
            The notification is built, sealed and sent exactly as a run would, and recorded in the \
            ledger as a delivery of kind 'test': left out of the campaign's figures and the analyst \
            views, it changes neither the campaign's status nor its real delivery to that device. \
            A campaign with A/B variants sends the text of --variant NAME (default: the first by name), \
            recorded on the test delivery. Prints what APNs answered per device. A transient answer (429, 5xx, no connection) is \
            retried as a run would, for at most 30 s. Exit status: 0 every device accepted it; 75 APNs \
            or the database could not be reached in time (or SIGTERM), nothing refused: try again; 1 otherwise.
            """)

    @Argument(help: "The campaign's id (campaigns.id).")
    var campaign: Int64

    @Option(help: "The device's APNs token.")
    var device: String?

    @Option(help: "The app's user id (users.external_id): every valid device of that user.")
    var user: String?

    @Option(help: "For a campaign with A/B variants: the variant whose text to send (default: the first by name).")
    var variant: String?

    func validate() throws {
        if (device == nil) == (user == nil) {
            throw ValidationError("name exactly one recipient: --device TOKEN or --user EXTERNAL_ID")
        }
    }

    @OptionGroup var settings: ConfigFileOption

    func run() async throws {
        let recipient: TestSendRecipient = if let device { .device(token: device) } else { .user(externalID: user ?? "") }
        let answers: [TestSendAnswer]
        do {
            let config = try settings.load()
            let logger = makeLogger("herald", config)
            let apns = try config.apnsConfiguration()
            let stop = StopSignal()
            let (campaign, variant) = (campaign, variant)
            answers = try await JobLifecycle.run(database: config.database, stop: stop, logger: logger) { client in
                try await HeraldJob(configuration: config, logger: logger)
                    .sendTest(client: client, apns: apns, campaign: campaign, to: recipient, variant: variant, stop: stop)
            }
        } catch let outage as DatabaseUnavailable {
            FileHandle.standardError.write(Data("herald: \(outage.description); try again\n".utf8))
            throw ExitCode(JobLifecycle.tempFail)
        } catch {
            throw readable(error)
        }
        for a in answers { print(a.line) }
        if answers.contains(where: { $0.status != "sent" && $0.status != "unsent" }) { throw ExitCode.failure }
        if answers.contains(where: { $0.status == "unsent" }) { throw ExitCode(JobLifecycle.tempFail) }
    }
}
