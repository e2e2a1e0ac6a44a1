import HeraldCore
import Store

extension CampaignRun {
    /// Writes one JSON line per queued device of the campaign to the sink,
    /// with the headers and payload a run would send it; nothing is claimed.
    func printPayloads(_ prepared: PreparedCampaign, summary: inout CampaignSummary, figures: inout RunFigures) async throws {
        guard let sink else { return }
        var after: Int64 = 0
        let ledger = stores.ledger
        let campaignID = prepared.campaign.id
        let limit = options.batchSize
        while true {
            let from = after
            let batch = try await db("read queued deliveries") {
                try await ledger.peekQueued(campaign: campaignID, afterID: from, limit: limit)
            }
            guard let last = batch.last else { break }
            after = last.target.deliveryID
            for delivery in batch {
                switch personalizer.extras(for: prepared, target: delivery.target) {
                case .failure(let problem):
                    summary.skipped += 1
                    try await sink.write(DryRunLine.skipped(prepared, delivery.target, reason: problem.message))
                case .success(let extras):
                    let payload = prepared.builder.payload(for: delivery.target, replyToken: extras.replyToken, sealed: extras.sealed)
                    let headers = prepared.builder.headers(for: delivery.target, topic: options.apps.topic(app: delivery.target.app))
                    try await sink.write(DryRunLine.payload(prepared, delivery.target, headers: headers, payload: payload))
                    summary.printed += 1
                }
            }
        }
    }
}

/// The JSON lines of a dry run: one per device, with the headers and the
/// exact payload bytes APNs would receive.
enum DryRunLine {
    static func payload(_ p: PreparedCampaign, _ t: DeliveryTarget, headers: PushHeaders, payload: [UInt8]) -> [UInt8] {
        var w = head(p, t)
        w.raw(",\"headers\":{")
        for (i, field) in headers.fields.enumerated() {
            if i > 0 { w.raw(",") }
            w.key(field.name)
            w.string(field.value)
        }
        w.raw("},\"bytes\":")
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
