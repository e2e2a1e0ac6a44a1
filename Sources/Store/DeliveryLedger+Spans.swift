import Foundation
import HeraldCore
import PostgresNIO

extension DeliveryLedger {
    /// Claims a span of the campaign's batch rows for `run` (at most `limit` rows): a span no
    /// live run holds, taken over at its watermark, or the next rows past every span. nil
    /// with `live`: none is left; `live` false: the run is not running, or the campaign may
    /// not be sent now (paused, cancelled, its approval withdrawn).
    public func claimSpan(campaign: Int64, run: Int64, limit: Int, lease: Duration) async throws
        -> (live: Bool, span: SpanClaim?)
    {
        let seconds = Double(lease.components.seconds)
        let rows = try await client.query("""
            SELECT live, after, through, taken_over FROM herald_claim_span(\(campaign), \(run), \(Int32(clamping: limit)), \(seconds))
            """, logger: logger)
        for try await (live, after, through, taken) in rows.decode((Bool, Int64?, Int64?, Bool).self) {
            guard let after, let through else { return (live, nil) }
            return (live, SpanClaim(campaign: campaign, after: after, through: through, takenOver: taken))
        }
        return (false, nil)
    }

    /// The batch rows of `span`, in id order, with what a send needs, as a claim reads them
    /// (`personal`: the variables the claim reads for each row). A row whose device was
    /// invalidated or deleted, or whose user opted out or no longer has the device, since the
    /// snapshot comes with why it is to be skipped (`ClaimedDelivery.skip`): the settlement
    /// writes it `skipped`.
    public func spanRows(_ span: SpanClaim, personal: [Template.Variable] = []) async throws -> [ClaimedDelivery] {
        let reads = Self.claimColumns(personal, campaign: span.campaign)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { conn in
            // No parallel workers: starting one for each span costs PostgreSQL more CPU than the read.
            try await conn.query("SET LOCAL max_parallel_workers_per_gather = 0", logger: logger)
            let rows = try await conn.query(try SQLQueries.named("ledger/span-rows").query(
                ["campaign": .value(span.campaign), "after": .value(span.after), "through": .value(span.through)],
                fragments: ["personal_joins": reads.joins, "personal_returning": reads.returning]), logger: logger)
            var out: [ClaimedDelivery] = []
            for try await row in rows {
                var cells = RowCells(row)
                let id = try cells.next(Int64.self), deviceID = try cells.next(Int64.self)
                let token = try cells.next(String?.self), env = try cells.next(APNsEnvironment?.self)
                let locale = try cells.next(String?.self), key = try cells.next(String?.self), kid = try cells.next(String?.self)
                let apnsID = try cells.next(UUID.self), variant = try cells.next(String?.self), app = try cells.next(String?.self)
                let skip = try cells.next(String?.self)
                let values = try Self.claimedValues(&cells, personal: personal)
                let target = DeliveryTarget(deliveryID: id, deviceToken: token ?? "", environment: env ?? .production,
                                            locale: locale ?? "en", publicKey: key, keyID: kid, apnsID: apnsID, variant: variant,
                                            app: app ?? AppRecord.defaultName, personal: values)
                var delivery = ClaimedDelivery(target: target, deviceID: deviceID)
                delivery.skip = skip
                delivery.span = span
                out.append(delivery)
            }
            return out
        }
    }

    /// Whether a span claim of the campaign would find rows now (`herald_spans_due`).
    public func spansDue(campaign: Int64) async throws -> Bool {
        for try await due in try await client.query("SELECT herald_spans_due(\(campaign))", logger: logger).decode(Bool.self) {
            return due
        }
        return false
    }

    /// Writes `run`'s settlements (of any campaigns) in one statement
    /// (`herald_settle`): fenced, so a span the run no longer holds takes nothing. Returns the
    /// spans the run no longer held.
    @discardableResult
    public func settle(_ settlements: [SpanSettlement], run: Int64) async throws -> [SpanClaim] {
        guard !settlements.isEmpty else { return [] }
        let spans = settlements.map(\.span)
        var eCampaign: [Int64] = [], eID: [Int64] = [], eDevice: [Int64] = [], eStatus: [String] = [], eError: [String] = []
        var eAttempts: [Int32] = [], eDelay: [Double] = [], eSince: [Double] = []
        for s in settlements {
            for o in s.exceptions {
                eCampaign.append(s.span.campaign); eID.append(o.deliveryID); eDevice.append(o.deviceID)
                eStatus.append(o.status.rawValue); eError.append(o.error ?? ""); eAttempts.append(Int32(clamping: o.attempts))
                eDelay.append(o.delay); eSince.append((o.invalidSince ?? Date()).timeIntervalSince1970)
            }
            for st in s.stragglers {
                eCampaign.append(s.span.campaign); eID.append(st.id); eDevice.append(st.deviceID)
                eStatus.append("in_flight"); eError.append(""); eAttempts.append(1); eDelay.append(0); eSince.append(0)
            }
        }
        let rows = try await client.query("""
            SELECT campaign_id, through, held, exceptions FROM herald_settle(\(run),
                \(spans.map(\.campaign))::bigint[], \(spans.map(\.through))::bigint[], \(settlements.map(\.settled))::bigint[],
                \(eCampaign)::bigint[], \(eID)::bigint[], \(eDevice)::bigint[], \(eStatus)::text[], \(eError)::text[],
                \(eAttempts)::int4[], \(eDelay)::float8[], \(eSince)::float8[])
            """, logger: logger)
        var lost: [SpanClaim] = []
        for try await (campaign, through, held, _) in rows.decode((Int64, Int64, Bool, Int32).self) where !held {
            if let span = spans.first(where: { $0.campaign == campaign && $0.through == through }) { lost.append(span) }
        }
        if !lost.isEmpty {
            logger.warning("settlements of spans this run no longer holds were not written", metadata: [
                "run": "\(run)", "spans": "\(lost.map { "\($0.campaign):(\($0.after),\($0.through)]" })",
            ])
        }
        return lost
    }
}
