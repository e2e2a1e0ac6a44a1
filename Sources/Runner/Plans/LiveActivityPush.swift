import APNs
import Foundation
import HeraldCore

/// A sale's step as a Live Activity push to one device (DESIGN, contract 10),
/// for `SaleStartPlan` and `SaleStepPlan`.
enum LiveActivityPush {
    /// The start by push-to-start, with the state current now; an update or
    /// the end to the activity's update token. Nil: the device has no
    /// push-to-start token (or its app is on a certificate), and gets the
    /// sale's alert instead.
    static func notification(_ sale: ActivityPlan, target: DeliveryTarget,
                             apps: AppRoutes, now: Date = Date()) -> Result<APNsNotification, CampaignProblem>? {
        guard let token = target.activityToken, !apps.certificateApps.contains(target.app) else {
            // No push-to-start token, or an app on a certificate (Apple takes none for Live
            // Activities): the device gets the sale's alert.
            return sale.step == 0 ? nil : .failure(CampaignProblem("activity ended or gave no update token"))
        }
        let payload = sale.payload
        let step = sale.step == 0 ? payload.start(at: now) : payload.steps[sale.step]
        let address: ActivityAddress = if sale.step > 0 {
            .activity
        } else if let channel = sale.channels[ChannelKey(app: target.app, environment: target.environment)] {
            .startOnChannel(channel)
        } else {
            .startByToken
        }
        let bytes = payload.payload(step, address: address, locale: target.locale, stockLeft: sale.stockLeft, now: now)
        guard bytes.count <= PayloadBuilder.maxBytes else { return .failure(CampaignProblem(PayloadBuilder.tooLarge)) }
        return .success(APNsNotification(
            deviceToken: token, environment: target.environment, pushType: "liveactivity",
            priority: payload.priority(step), expiration: Int(payload.expiration(step).timeIntervalSince1970),
            apnsID: target.apnsID, topic: PushTopic.liveActivity(apps.topic(app: target.app)), payload: bytes,
            credential: apps.credential(app: target.app, environment: target.environment)))
    }
}
