import APNsSimulator
import ExtensionKit
import Foundation
import HeraldCore
import Logging
import Store

/// The shop's devices as ActivityKit runs a sale on them: a push-to-start token per device (iOS
/// 17.2), an activity begun by the sale's start whose update token the app registers, each
/// state the device is pushed shown and confirmed, the activity ended by the sale's end.
public actor SaleActivities {
    private let apps: AppFleet
    private let builder: AppRequestBuilder
    /// Push-to-start token → device; update token → device.
    private var byPushToStart: [String: SampleDevice] = [:]
    private var byUpdateToken: [String: SampleDevice] = [:]
    /// Device token → the content states' `step`s it showed, in order.
    private var shown: [String: [Int]] = [:]
    private var labels: [Int: String] = [:]
    public private(set) var report = SaleActivitiesReport()

    public init(apps: AppFleet, intake: URL) {
        self.apps = apps
        self.builder = AppRequestBuilder(baseURL: intake)
    }

    /// A device's push-to-start and update tokens (the demo derives them from its APNs token).
    static func pushToStartToken(_ device: SampleDevice) -> String { "f" + device.token.dropFirst() }
    static func updateToken(_ device: SampleDevice) -> String { "a" + device.token.dropFirst() }

    /// The shop's devices (its app supports push-to-start, iOS 17.2) register their push-to-start
    /// token; the companion's, on a certificate, are not in the sale.
    public func registerPushToStart() async throws {
        let devices = apps.devices.values.filter { $0.app == AppRecord.defaultName && !$0.logsOut }
            .sorted { $0.n < $1.n }
        for device in devices {
            let token = Self.pushToStartToken(device)
            let request = builder.registerPushToStart(deviceTokenHex: device.token, pushToStartTokenHex: token,
                                                      bearer: try await apps.bearer(device))
            let (status, _, _) = try await AppFleet.send(request)
            if (200...299).contains(status) {
                report.pushToStartRegistered += 1
                byPushToStart[token] = device
            } else {
                report.refused[status, default: 0] += 1
            }
        }
    }

    /// The devices' part of a run's accepted pushes: a start begins the activity (its app
    /// registers the update token with the step shown), an update shows its state (the app
    /// confirms it), the end shows the final state and ends the activity.
    public func show(_ accepted: [AcceptedNotification]) async throws {
        for n in accepted where n.headers["apns-push-type"] == "liveactivity" {
            guard let object = try? JSONSerialization.jsonObject(with: Data(n.payload)) as? [String: Any],
                  let aps = object["aps"] as? [String: Any], let event = aps["event"] as? String,
                  let stateJSON = try? JSONSerialization.data(withJSONObject: aps["content-state"] ?? [:]),
                  let state = try? JSONDecoder().decode(HeraldSaleAttributes.ContentState.self, from: stateJSON) else { continue }
            let device: SampleDevice
            if event == "start", let found = byPushToStart[n.deviceToken] {
                device = found
                byUpdateToken[Self.updateToken(found)] = found
                report.started += 1
            } else if let found = byUpdateToken[n.deviceToken] {
                device = found
            } else {
                continue
            }
            shown[device.token, default: []].append(state.step)
            labels[state.step] = event == "end" ? "end \(state.price)" : "\(state.price)\(state.stockLeft.map { ", \($0) left" } ?? "")"
            let bearer = try await apps.bearer(device)
            let request = builder.registerActivity(deviceTokenHex: device.token, campaign: state.campaign,
                                                   updates: .token(Self.updateToken(device)), startedByPush: true,
                                                   step: state.step, bearer: bearer)
            let (status, _, _) = try await AppFleet.send(request)
            if (200...299).contains(status) { report.confirmations += 1 } else { report.refused[status, default: 0] += 1 }
            if event == "end" {
                let (ended, _, _) = try await AppFleet.send(builder.endActivity(deviceTokenHex: device.token, campaign: state.campaign,
                                                                                 bearer: bearer))
                if ended == 204 { report.ended += 1 } else { report.refused[ended, default: 0] += 1 }
            }
        }
    }

    /// Counts the activities that showed each of the sale's `steps` states once, in order.
    public func finish(steps: Int) -> SaleActivitiesReport {
        var r = report
        r.inOrder = shown.values.filter { $0 == Array(0..<steps) }.count
        r.outOfOrder = shown.count - r.inOrder
        r.states = (0..<steps).map { labels[$0] ?? "?" }
        return r
    }
}
