import HeraldCore
import Logging
import Store

// Until the APNs client lands, a run can only be dry.
public protocol PushTransport: Sendable {}

extension CampaignRun {
    func send(_ prepared: PreparedCampaign, runID: Int64, summary: inout CampaignSummary,
              figures: inout RunFigures, logger: Logger) async throws {
        throw StoreError.configuration("sending needs the APNs client; use --dry-run")
    }
}
