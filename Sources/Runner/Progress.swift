import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
import HeraldCore
#endif

/// A long campaign's progress for the operator: on a terminal, one live line
/// on standard error rewritten about once a second; otherwise a log line
/// every few seconds (JSON when logs are JSON).
struct CampaignProgress {
    let campaign: Int64
    /// Deliveries queued at this run's snapshot, when this run made it.
    let total: Int?
    let started: ContinuousClock.Instant
    let live: Bool
    var lastShown: ContinuousClock.Instant
    var shownLive = false

    init(campaign: Int64, total: Int?, now: ContinuousClock.Instant,
         live: Bool = isatty(STDERR_FILENO) == 1) {
        self.campaign = campaign
        self.total = total
        self.started = now
        self.live = live
        self.lastShown = now
    }

    var interval: Duration { live ? .seconds(1) : .seconds(5) }

    /// `campaign 3: 1200 of 20000 done (6%), 850/s, about 22 s left`.
    static func text(campaign: Int64, done: Int, total: Int?, elapsed: Double) -> String {
        var line = "campaign \(campaign): \(done)"
        if let total, total > 0 {
            line += " of \(total) done (\(min(100, done * 100 / total))%)"
        } else {
            line += " done"
        }
        guard elapsed > 0 else { return line }
        let rate = Double(done) / elapsed
        line += String(format: ", %.0f/s", rate)
        if let total, rate > 0, done < total {
            line += String(format: ", about %.0f s left", Double(total - done) / rate)
        }
        return line
    }

    /// Shows the progress when its interval has passed.
    mutating func update(done: Int, now: ContinuousClock.Instant, logger: Logger) {
        guard now - lastShown >= interval else { return }
        lastShown = now
        let elapsed = (now - started).inSeconds
        let line = Self.text(campaign: campaign, done: done, total: total, elapsed: elapsed)
        if live {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
            shownLive = true
        } else {
            logger.notice("progress", metadata: [
                "done": "\(done)", "total": "\(total.map(String.init) ?? "")", "line": "\(line)",
            ])
        }
    }

    /// Ends the live line, so what follows starts on a line of its own.
    func finish() {
        if live && shownLive { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
