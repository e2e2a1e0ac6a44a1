import APNs
import Foundation
import HeraldCore
import NIOConcurrencyHelpers
import Store

extension CampaignRun {
    /// A dry run of one campaign: its queued deliveries go through the same
    /// engine and are built by the campaign's plan as a run builds them
    /// (each device's own app's topic and credential, its payload and reply
    /// token), then written to the sink as JSON lines instead of sent.
    /// Nothing is claimed or recorded; the ledger is only read.
    func printPayloads(_ plan: any CampaignPlan, summary: inout CampaignSummary) async throws {
        guard let sink else { return }
        let printer = DryRunPrinter(prepared: plan.prepared, sink: sink)
        let source = DryRunClaims(ledger: stores.ledger, db: db, plan: plan, options: options,
                                  personalizer: personalizer, printer: printer)
        let engine = SendingEngine(transport: DryRunTransport(printer: printer), options: options, leases: nil, logger: logger)
        var tally = SendTally()
        _ = try await engine.send(source, breakers: RunBreakers(threshold: options.breakerThreshold), tally: &tally)
        try printer.check()
        summary.printed += tally.sent
        summary.skipped += tally.skipped
    }
}

/// What a dry run has read and where its lines go: the campaign's
/// deliveries by `apns-id`, until each is printed.
final class DryRunPrinter: Sendable {
    let prepared: PreparedCampaign
    let sink: any PayloadSink
    private let state = NIOLockedValueBox<(targets: [UUID: DeliveryTarget], error: (any Error)?)>(([:], nil))

    init(prepared: PreparedCampaign, sink: any PayloadSink) {
        self.prepared = prepared
        self.sink = sink
    }

    func read(_ targets: [DeliveryTarget]) {
        state.withLockedValue { s in
            for t in targets { s.targets[t.apnsID] = t }
        }
    }

    private func take(apnsID: UUID) -> DeliveryTarget? {
        state.withLockedValue { $0.targets.removeValue(forKey: apnsID) }
    }

    /// A skip is rare: a search of what is read (one batch at most) finds it.
    private func take(delivery: Int64) -> DeliveryTarget? {
        state.withLockedValue { s in
            guard let t = s.targets.values.first(where: { $0.deliveryID == delivery }) else { return nil }
            return s.targets.removeValue(forKey: t.apnsID)
        }
    }

    /// The line of one notification, as APNs would receive it.
    func print(_ n: APNsNotification) async {
        guard let target = take(apnsID: n.apnsID) else { return }
        let headers = PushHeaders(topic: n.topic ?? "", pushType: n.pushType, priority: n.priority, expiration: n.expiration,
                                  collapseID: n.collapseID ?? "", apnsID: n.apnsID)
        await write(DryRunLine.payload(prepared, target, headers: headers, payload: n.payload))
    }

    /// The line of a device no notification could be built for, with why.
    func printSkipped(delivery: Int64, reason: String) async {
        guard let target = take(delivery: delivery) else { return }
        await write(DryRunLine.skipped(prepared, target, reason: reason))
    }

    private func write(_ line: [UInt8]) async {
        do {
            try await sink.write(line)
        } catch {
            state.withLockedValue { s in if s.error == nil { s.error = error } }
        }
    }

    /// Throws the first error of the sink (a closed pipe, a full disk).
    func check() throws {
        if let error = state.withLockedValue({ $0.error }) { throw error }
    }
}

/// A dry run's deliveries: the campaign's queued rows read in order, never
/// claimed, built by the campaign's plan exactly as a run builds them.
struct DryRunClaims: ClaimSource {
    let ledger: DeliveryLedger
    let db: DatabaseRetry
    let plan: any CampaignPlan
    let options: RunOptions
    let personalizer: any DeliveryPersonalizer
    let printer: DryRunPrinter

    func claim(after cursor: Int64, excludingApps: [String]) async throws -> ClaimBatch<ClaimedDelivery> {
        let (ledger, prepared, limit) = (ledger, plan.prepared, options.batchSize)
        let campaign = prepared.campaign.id
        var rows = try await db("read queued deliveries") {
            try await ledger.peekQueued(campaign: campaign, afterID: cursor, limit: limit)
        }
        try await CampaignClaims.readPersonalValues(&rows, prepared: prepared, ledger: ledger, db: db)
        printer.read(rows.map(\.target))
        return ClaimBatch(items: rows, end: rows.last?.target.deliveryID ?? cursor)
    }

    func notification(for item: ClaimedDelivery) -> Result<APNsNotification, CampaignProblem> {
        plan.notification(for: item.target, apps: options.apps, personalizer: personalizer)
    }

    /// Nothing goes to the ledger; a device skipped gets its line.
    func record(_ outcomes: [DeliveryOutcome]) async throws {
        for outcome in outcomes where outcome.status == .skipped {
            await printer.printSkipped(delivery: outcome.deliveryID, reason: outcome.error ?? "skipped")
        }
        try printer.check()
    }

    func nextDue(excludingApps: [String]) async throws -> Duration? { nil }

    /// One at a time: the lines come out in the ledger's order.
    var concurrencyLimit: Int? { 1 }
}

/// Writes each notification a dry run would send to its sink, and answers
/// as APNs would accept it.
struct DryRunTransport: PushTransport {
    let printer: DryRunPrinter

    func send(_ notification: APNsNotification) async -> APNsResult {
        await printer.print(notification)
        return APNsResult(outcome: .sent(apnsID: notification.apnsID), attempts: 1, retried: 0)
    }

    func shutdown() async {}
}

/// The JSON lines of a dry run: one per device, with the headers and the
/// exact payload bytes APNs would receive.
enum DryRunLine {
    static func payload(_ p: PreparedCampaign, _ t: DeliveryTarget, headers: PushHeaders, payload: [UInt8]) -> [UInt8] {
        var w = head(p, t)
        w.raw(",\"headers\":")
        w.stringObject(headers.fields)
        w.raw(",\"bytes\":")
        w.int(Int64(payload.count))
        w.raw(",\"payload\":")
        w.raw(payload)
        w.raw("}\n")
        return w.bytes
    }

    static func skipped(_ p: PreparedCampaign, _ t: DeliveryTarget, reason: String) -> [UInt8] {
        var w = head(p, t)
        w.raw(",\"skipped\":")
        w.string(reason)
        w.raw("}\n")
        return w.bytes
    }

    private static func head(_ p: PreparedCampaign, _ t: DeliveryTarget) -> JSONWriter {
        var w = JSONWriter(capacity: 1024)
        w.raw("{\"campaign\":")
        w.int(p.campaign.id)
        w.raw(",\"delivery\":")
        w.int(t.deliveryID)
        w.raw(",\"kind\":")
        w.string(p.campaign.kind.rawValue)
        w.raw(",\"device\":")
        w.string(t.deviceToken)
        w.raw(",\"environment\":")
        w.string(t.environment.rawValue)
        if let variant = t.variant {
            w.raw(",\"variant\":")
            w.string(variant)
        }
        return w
    }
}
