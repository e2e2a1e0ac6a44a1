import Logging
import PostgresNIO

/// The stores a batch run works with, one per aggregate, on one client.
public struct RunStores: Sendable {
    public let runs: RunStore
    public let campaigns: CampaignStore
    public let audience: AudienceStore
    public let ledger: DeliveryLedger
    public let series: SeriesStore
    public let liveActivities: LiveActivityStore
    public let widgets: WidgetStore
    public let journeys: JourneyStore

    public init(client: Database, logger: Logger) {
        runs = RunStore(client: client, logger: logger)
        campaigns = CampaignStore(client: client, logger: logger)
        audience = AudienceStore(client: client, logger: logger)
        ledger = DeliveryLedger(client: client, logger: logger)
        series = SeriesStore(client: client, logger: logger)
        liveActivities = LiveActivityStore(client: client, logger: logger)
        widgets = WidgetStore(client: client, logger: logger)
        journeys = JourneyStore(client: client, logger: logger)
    }

    public var client: Database { ledger.client }
}
