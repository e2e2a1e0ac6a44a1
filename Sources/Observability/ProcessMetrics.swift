import Foundation
import Metrics
import NIOConcurrencyHelpers
import Prometheus
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's metrics: swift-metrics bootstrapped once with a Prometheus
/// registry (swift-prometheus), so that every `Counter`/`Timer` made through
/// swift-metrics (Hummingbird's `MetricsMiddleware` among them) lands here.
public enum ProcessMetrics {
    private static let box = NIOLockedValueBox<PrometheusCollectorRegistry?>(nil)

    /// The registry, bootstrapping swift-metrics on first use.
    public static func registry() -> PrometheusCollectorRegistry {
        box.withLockedValue { current in
            if let current { return current }
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
            current = registry
            return registry
        }
    }
}
