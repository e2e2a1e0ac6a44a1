import HeraldCore
import Store

/// Why a run ended early, with work left for the next one (exit status 75).
public enum RunInterruption: Sendable, Hashable {
    /// SIGTERM or SIGINT.
    case stopped
    /// APNs or the database stayed unreachable beyond its budget.
    case outage(String)
}

extension JourneyBatch {
    /// The run report's line about journeys, when members moved.
    public var line: String? {
        guard claimed > 0 || entered > 0 else { return nil }
        return "  journeys: \(entered) entered by a segment or a campaign, \(claimed) members decided on, \(moves) moves, \(sends) sends (\(rowsWritten) notifications queued), \(left) left"
    }
}

extension SeriesSummary {
    /// The run report's line about recurring and on-entry campaigns, when it has news.
    var line: String? {
        guard !made.isEmpty || completed > 0 else { return nil }
        var parts: [String] = []
        if !made.isEmpty { parts.append("made occurrence\(made.count == 1 ? "" : "s") " + made.map { "campaign \($0)" }.joined(separator: ", ")) }
        if completed > 0 { parts.append("\(completed) series ended") }
        return "  series: " + parts.joined(separator: "; ")
    }
}

/// What one campaign did in this run.
public struct CampaignSummary: Sendable, Hashable {
    public var id: Int64
    public var name: String
    public var kind: CampaignKind?
    public var snapshot: SnapshotResult?
    public var sent = 0
    public var invalid = 0
    public var failed = 0
    public var skipped = 0
    /// Given back to the queue (transient answers, unsent claims).
    public var requeued = 0
    public var printed = 0
    public var completed = false
    public var failure: String?
    /// The failure needs an operator (exit status 1), not a change to the campaign.
    public var personNeeded = false
    /// A journey's message (its rows are written by its members' moves).
    public var journeyMessage = false

    /// A journey's message that had nothing queued this run: left out of the run's report,
    /// which would otherwise list every message of every running journey at every run.
    var idleJourneyMessage: Bool {
        journeyMessage && sent + invalid + failed + skipped + requeued + printed == 0 && failure == nil && !personNeeded
    }
}

public struct RunSummary: Sendable {
    public var runID: Int64
    public var dryRun: Bool
    public var figures: RunFigures
    public var campaigns: [CampaignSummary]
    public var duration: Duration
    public var expired: Int
    public var recovered: Int
    public var configRefresh = ConfigRefreshSummary()
    /// Occurrences of recurring and on-entry campaigns this run made.
    public var series = SeriesSummary()
    /// What the run did to journeys' members before it sent.
    public var journeys = JourneyBatch()
    /// Set when the run ended early with work left (exit status 75).
    public var interruption: RunInterruption?
    /// Apps whose APNs credential was refused in this run, each with why
    /// (their campaigns failed with it; exit status 1: a person is needed, as for a campaign
    /// whose failure is `personNeeded`).
    public var refusedApps: [String: String] = [:]

    public var rate: Double {
        let seconds = duration.inSeconds
        return seconds > 0 ? Double(figures.sent) / seconds : 0
    }
}
