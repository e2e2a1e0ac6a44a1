import APNs
import Foundation
import HeraldCore

/// The engine's transport for a step's broadcasts: each notification goes to its channel
/// through APNs' broadcast API, and APNs' answer comes back as the device client's would, so
/// the delivery policy, the breakers and the backoff treat it as they treat any push.
struct ChannelPushTransport: PushTransport {
    let channels: any ChannelTransport
    let pushes: ChannelPushBook

    func send(_ notification: APNsNotification) async -> APNsResult {
        guard let push = pushes.push(request: notification.apnsID) else {
            return APNsResult(outcome: .failed(status: 0, reason: .unknown("no channel push for this request")), attempts: 0, retried: 0)
        }
        do {
            try await channels.broadcast(push.key, channel: push.channel, payload: notification.payload,
                                         priority: notification.priority,
                                         expiration: notification.expiration.map { Date(timeIntervalSince1970: Double($0)) },
                                         requestID: notification.apnsID)
            return APNsResult(outcome: .sent(apnsID: notification.apnsID), attempts: 1, retried: 0)
        } catch {
            // No answer: the connection's reason, which the breaker counts; else APNs' own.
            let reason: APNsReason = error.status == nil ? .connectionFailed : APNsReason(string: error.reason)
            return APNsResult(outcome: .failed(status: error.status, reason: reason), attempts: 1, retried: 0)
        }
    }

    /// The channel clients belong to the run, which shuts them down.
    func shutdown() async {}
}
