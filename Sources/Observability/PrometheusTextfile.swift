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

/// Writes metrics for node exporter's textfile collector.
public enum PrometheusTextfile {
    /// Writes `text` to `path` as the textfile collector expects: into a
    /// temporary file beside it, then renamed over it, so the collector never
    /// reads half a file. A `path` that exists and is not a regular file (a
    /// device, a directory, a link) is refused rather than replaced.
    public static func write(_ text: String, to path: String) throws {
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
            throw TextfileError(path: path, reason: "it exists and is not a regular file")
        }
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp").path
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: temporary), options: [.withoutOverwriting])
        } catch {
            throw TextfileError(path: path, reason: "cannot write \(temporary): \(error.localizedDescription)")
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw TextfileError(path: path, reason: reason)
        }
    }
}

public struct TextfileError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "cannot write the metrics file \(path): \(reason)" }
}
