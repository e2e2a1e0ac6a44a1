import Foundation
import HeraldCore

/// What became of one notification.
public struct APNsResult: Sendable, Hashable {
    public let outcome: APNsOutcome
    /// Requests that counted against the retry budget (0 when refused before sending).
    public var attempts: Int
    /// Every re-send, including those after a GOAWAY that left the request unprocessed
    /// (which do not count as attempts).
    public var retried: Int
    /// What the answer means (`APNsVerdict.of`): decided once, where the answer was read, and
    /// acted on by the client's retries and the run's delivery policy alike.
    public let verdict: APNsVerdict

    public init(outcome: APNsOutcome, attempts: Int, retried: Int) {
        self.init(outcome: outcome, attempts: attempts, retried: retried, verdict: Self.verdict(of: outcome))
    }

    /// A result whose verdict the client decided already.
    init(outcome: APNsOutcome, attempts: Int, retried: Int, verdict: APNsVerdict) {
        self.outcome = outcome
        self.attempts = attempts
        self.retried = retried
        self.verdict = verdict
    }

    static func verdict(of outcome: APNsOutcome) -> APNsVerdict {
        switch outcome {
        case .sent: .sent
        case .deviceInvalid: .deviceInvalid
        case .failed(let status, let reason): APNsVerdict.of(status: status, reason: reason)
        }
    }
}
