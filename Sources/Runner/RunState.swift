import Store

/// What a run carries from campaign to campaign.
struct RunState {
    var runID: Int64
    var leases: LeaseClock
    var breakers: APNsBreakers
    var figures = RunFigures()
    var interruption: RunInterruption?
}
