import Foundation
import Lifecycle

extension RunSummary {
    /// The run's figures for a person: one line per campaign, then the totals.
    /// The process's exit status: 0 done (or nothing due), 75 stopped
    /// early with work left for the next run (EX_TEMPFAIL), 1 when APNs
    /// refused an app's credential (a person must fix it; the other apps'
    /// campaigns went out).
    public var exitStatus: Int32 {
        if interruption != nil { return JobLifecycle.tempFail }
        return refusedApps.isEmpty && !campaigns.contains(where: \.personNeeded) ? 0 : 1
    }

    public var report: String {
        var lines: [String] = []
        let mode = dryRun ? "dry run" : "run"
        for c in campaigns {
            var parts: [String] = []
            if let s = c.snapshot, s.inserted > 0 {
                parts.append("snapshot \(s.inserted) devices (\(s.queued) queued, \(s.skipped) skipped, \(s.deferred) deferred by quiet hours)")
            }
            if dryRun {
                parts.append("\(c.printed) payloads printed")
            } else {
                parts.append("sent \(c.sent), invalid \(c.invalid), failed \(c.failed), skipped \(c.skipped), requeued \(c.requeued)")
            }
            if c.completed { parts.append("completed") }
            if let f = c.failure { parts = ["FAILED: \(f)"] }
            let kind = c.kind?.rawValue ?? "?"
            lines.append("  campaign \(c.id) \"\(c.name)\" [\(kind)]: " + parts.joined(separator: "; "))
        }
        let seconds = duration.inSeconds
        let f = figures
        var total = "\(mode) \(runID): \(campaigns.count) campaigns, targeted \(f.targeted), sent \(f.sent), invalid \(f.invalid), failed \(f.failed), retried \(f.retried), skipped \(f.skipped), expired \(f.expired)"
        total += String(format: " in %.2f s", seconds)
        if !dryRun && f.sent > 0 { total += String(format: " (%.0f notifications/s)", rate) }
        if recovered > 0 { total += "; requeued \(recovered) deliveries of stopped runs" }
        switch interruption {
        case nil: break
        case .stopped?: total += "; STOPPED by a signal, \(f.requeued) deliveries back in the queue for the next run"
        case .outage(let why)?: total += "; STOPPED: \(why)"
        }
        let refused = refusedApps.sorted { $0.key < $1.key }.map { "CREDENTIAL REFUSED: \($0.value)" }
        return ([total] + refused + [configRefresh.line, series.line, journeys.line].compactMap { $0 } + lines).joined(separator: "\n")
    }
}
