import Foundation
import Metrics
import NIOConcurrencyHelpers
import Prometheus

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
