import Foundation
import HeraldCore

/// What became of one notification.
public struct APNsResult: Sendable, Hashable {
    public var outcome: APNsOutcome
    /// Requests that counted against the retry budget (0 when refused before sending).
    public var attempts: Int
    /// Every re-send, including those after a GOAWAY that left the request unprocessed
    /// (which do not count as attempts).
    public var retried: Int

    public init(outcome: APNsOutcome, attempts: Int, retried: Int) {
        self.outcome = outcome
        self.attempts = attempts
        self.retried = retried
    }
}

extension APNsResult {
    /// The verdict on this result (see `APNsVerdict.of`).
    var verdict: APNsVerdict {
        switch outcome {
        case .sent: .sent
        case .deviceInvalid: .deviceInvalid
        case .failed(let status, let reason): APNsVerdict.of(status: status, reason: reason)
        }
    }
}
