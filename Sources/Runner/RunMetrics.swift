import Foundation
import HeraldCore
import Prometheus

/// A run's figures as Prometheus metrics, for node exporter's textfile
/// collector (`HERALD_METRICS_TEXTFILE`): gauges of the last run, replaced
/// whole by the next.
extension RunSummary {
    public func prometheusText(exitStatus: Int32, finishedAt: Date = Date()) -> String {
        let registry = PrometheusCollectorRegistry()
        let f = figures
        for (outcome, n) in [("sent", f.sent), ("invalid", f.invalid), ("failed", f.failed), ("skipped", f.skipped),
                             ("expired", f.expired), ("requeued", f.requeued), ("retried", f.retried),
                             ("targeted", f.targeted)] {
            registry.gauge("herald_run_notifications", labels: [("outcome", outcome)], help: "Notifications of the last run, by outcome").set(Double(n))
        }
        for c in campaigns {
            let id = String(c.id)
            for (outcome, n) in [("sent", c.sent), ("invalid", c.invalid), ("failed", c.failed),
                                 ("skipped", c.skipped), ("requeued", c.requeued),
                                 ("targeted", c.snapshot?.inserted ?? 0)] {
                registry.gauge("herald_run_campaign_notifications", labels: [("campaign", id), ("outcome", outcome)], help: "Notifications of the last run, by campaign and outcome").set(Double(n))
            }
        }
        let seconds = duration.inSeconds
        registry.gauge("herald_run_campaigns", help: "Campaigns the last run worked on").set(Double(campaigns.count))
        registry.gauge("herald_run_duration_seconds", help: "How long the last run took").set(seconds)
        registry.gauge("herald_run_rate_per_second", help: "Notifications sent a second in the last run").set(rate)
        registry.gauge("herald_run_exit_status", help: "The last run's exit status: 0 done, 75 stopped with work left, 1 a person is needed")
            .set(Double(exitStatus))
        registry.gauge("herald_run_finished_timestamp_seconds", help: "When the last run ended (Unix time)")
            .set(finishedAt.timeIntervalSince1970)
        registry.gauge("herald_run_dry_run", help: "1 when the last run was a dry run").set(dryRun ? 1.0 : 0.0)
        return registry.emitToString()
    }
}

extension PrometheusCollectorRegistry {
    /// A gauge named exactly `name` (no namespace or unit suffix added), with its help line.
    func gauge(_ name: String, labels: [(String, String)] = [], help: String) -> Gauge {
        makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
    }
}
