import HeraldCore
import Logging
import Store

/// Moves the due members of running journeys (DESIGN, contract 11) at the start of a run,
/// before the due campaigns are sent, so that the rows their send steps write go out in
/// the same run. Batch by batch, each one transaction (`JourneyStore.advanceBatch`), each
/// member decided by `JourneyDecision`, until none is due or the run is asked to stop.
struct JourneyMoves: Sendable {
    let stores: RunStores
    let options: RunOptions
    let db: DatabaseRetry
    let runID: Int64
    let logger: Logger

    func run() async throws -> JourneyBatch {
        let (journeys, audience) = (stores.journeys, stores.audience)
        let messages = try await db("find the journeys' messages") { try await journeys.messages() }
        for message in messages {
            _ = try await db("give a journey's message its partition") { try await audience.ensurePartition(campaign: message) }
        }
        var total = JourneyBatch()
        total.entered = try await db("enter journeys by their segments") { try await journeys.enterBySegments() }
        total.entered += try await db("enter journeys by their campaigns") { try await journeys.enterByCampaigns() }
        let (limit, run) = (options.journeyBatch, runID)
        // A member resting due now (at the guard of a loop) is taken again by the next batch;
        // the bound keeps one run from going round it for ever.
        for _ in 0..<options.journeyBatchesPerRun where !options.stop.isRequested {
            let batch = try await db("move journey members") {
                try await journeys.advanceBatch(run: run, limit: limit) { member, version, now in
                    JourneyDecision.advance(member.facts, in: version.graph, now: now)
                }
            }
            total.add(batch)
            if batch.claimed < limit { break }
        }
        if total.claimed > 0 || total.entered > 0 {
            logger.notice("journey members moved", metadata: [
                "entered": "\(total.entered)", "members": "\(total.claimed)", "moves": "\(total.moves)", "sends": "\(total.sends)",
                "rows": "\(total.rowsWritten)", "left": "\(total.left)",
            ])
        }
        return total
    }
}
