import APNs
import Store

/// What a run does with each APNs answer, and when a notification is tried
/// again: the one policy of campaign deliveries, config refresh pushes and
/// test sends. SQL stores what it decides (`not_before`), and decides nothing.
///
/// Which layer retries what:
/// - The APNs client (`APNsClient.send`) tries what `APNsVerdict` calls
///   transient again at once, on a connection, up to APNS_MAX_ATTEMPTS with
///   a jittered backoff; a request a GOAWAY left unprocessed is sent again
///   without counting; 403 ExpiredProviderToken renews the token and retries
///   once. Nothing else is retried there.
/// - The sending engine gives back to the ledger what is still transient
///   after that, due again after `backoff(status:attempts:)`, and waits for
///   it within HERALD_RETRY_WAIT_SECONDS or leaves it to the next run.
/// - A circuit breaker per APNs host stops sending to it after consecutive
///   transport failures; past the outage budget the run stops (exit 75).
enum DeliveryPolicy {
    /// What to record for one answer, and what the run learns from it.
    struct Decision: Sendable, Hashable {
        var outcome: DeliveryOutcome
        /// No HTTP answer was had: the host's circuit breaker counts it.
        var transportFailure = false
        /// APNs refused the provider itself (the app's credential): that
        /// app's items wait for a person, its campaigns fail (exit 1).
        var fatal: String?
    }

    /// Transient answers are tried again no later than this, in seconds.
    static let longestBackoff = 600.0

    /// The wait before a transient answer is tried again by a later claim:
    /// 1 s (2 s after 429), doubled every 5 attempts, at most 10 minutes.
    /// `attempts` counts every attempt of the notification so far.
    static func backoff(status: Int?, attempts: Int) -> Double {
        let base = status == 429 ? 2.0 : 1.0
        let doublings = min(max(attempts, 0) / 5, 8)
        return min(base * Double(1 << doublings), longestBackoff)
    }

    /// The decision on `result` for one claimed row that had `priorAttempts`
    /// attempts recorded before this claim.
    static func decide(_ result: APNsResult, deliveryID id: Int64, deviceID device: Int64,
                       priorAttempts: Int) -> Decision {
        func outcome(_ status: DeliveryOutcome.Status, _ error: String? = nil, delay: Double = 0) -> DeliveryOutcome {
            DeliveryOutcome(deliveryID: id, deviceID: device, status: status, error: error, attempts: result.attempts,
                            delay: delay)
        }
        switch result.outcome {
        case .sent:
            return Decision(outcome: outcome(.sent))
        case .deviceInvalid(let reason, let timestamp):
            var o = outcome(.invalid, reason.rawValue)
            o.invalidSince = timestamp
            return Decision(outcome: o)
        case .failed(let status, let reason):
            let text = status.map { "\($0) \(reason.rawValue)" } ?? reason.rawValue
            switch result.verdict {
            case .sent, .deviceInvalid, .refused:
                return Decision(outcome: outcome(.failed, text))
            case .providerRefused:
                // Left queued: a person fixes the app's credential, its campaigns resume.
                return Decision(outcome: outcome(.queued, text), fatal: text)
            case .stoppedHere:
                return Decision(outcome: outcome(.queued, "stopped before APNs answered"))
            case .transient(let connection):
                let delay = backoff(status: status, attempts: priorAttempts + result.attempts)
                return Decision(outcome: outcome(.retry, text, delay: delay), transportFailure: connection)
            }
        }
    }
}
