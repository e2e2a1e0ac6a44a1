import Store

/// What a run carries from campaign to campaign: what every campaign sending
/// at once shares (its leases, breakers, limits and outcome writer), and the
/// figures and interruption each campaign adds to the run's.
struct RunState {
    var runID: Int64
    var leases: LeaseClock
    /// What the run knows of APNs' hosts and apps, shared as it learns it.
    let breakers: RunBreakers
    var figures = RunFigures()
    var interruption: RunInterruption?
    /// The run's limits, shared by the campaigns sending at once.
    var budget: RunBudget?
    /// Their outcome writes, one statement at a time.
    var writer: OutcomeWriter
    /// Widget pushes the run's campaigns made as they started: sent once those campaigns are.
    var widgetPushes: [Int64] = []

    /// The state a campaign sending beside others starts from: the run's
    /// leases, breakers and budget, figures of its own.
    func forCampaign() -> RunState {
        RunState(runID: runID, leases: leases, breakers: breakers, budget: budget, writer: writer)
    }

    /// What a campaign that sent beside others did, added to the run's.
    mutating func merge(_ campaign: RunState) {
        figures.add(campaign.figures)
        if interruption == nil { interruption = campaign.interruption }
        widgetPushes += campaign.widgetPushes
    }
}

extension RunFigures {
    mutating func add(_ other: RunFigures) {
        campaigns += other.campaigns
        targeted += other.targeted
        sent += other.sent
        invalid += other.invalid
        failed += other.failed
        retried += other.retried
        skipped += other.skipped
        expired += other.expired
        requeued += other.requeued
    }
}
