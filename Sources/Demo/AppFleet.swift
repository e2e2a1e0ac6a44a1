import APNsSimulator
import AppServer
import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import Logging
import Store

/// The apps of the demo's devices: they register themselves, fetch the
/// notification config in their own language, and act on config refresh pushes.
public actor AppFleet {
    public let devices: [String: SampleDevice]
    private let app: AppRequestBuilder
    /// Each app's backend, signing its own devices' registrations (aud herald:<app>).
    private let issuers: [String: AppTokenIssuer]
    private let logger: Logger
    /// Token → the config the app registered with UNUserNotificationCenter.
    private var configs: [String: NotificationConfigDocument] = [:]
    public private(set) var report = AppFleetReport()

    public init(devices: [SampleDevice], intake: URL, issuers: [String: AppTokenIssuer], logger: Logger) {
        self.devices = Dictionary(devices.map { ($0.token, $0) }, uniquingKeysWith: { a, _ in a })
        self.app = AppRequestBuilder(baseURL: intake)
        self.issuers = issuers
        self.logger = logger
    }

    /// A registration token for `device`, from its own app's backend.
    func bearer(_ device: SampleDevice) async throws -> String {
        guard let issuer = issuers[device.app] else { throw InputError("the demo has no backend for app \(device.app)") }
        return try await issuer.token(user: device.user, app: device.app == AppRecord.defaultName ? nil : device.app)
    }

    /// The config a device has registered, if any.
    public func config(of token: String) -> NotificationConfigDocument? { configs[token] }

    /// Every device registers (a third of them fetched the config at launch
    /// and report its ETag); those that log out then unregister.
    public func registerAll(concurrency: Int = 16) async throws {
        let list = devices.values.sorted { $0.n < $1.n }
        try await Self.forEach(list, concurrency: concurrency) { device in
            var etag: String?
            if device.n % 3 == 0 {
                etag = try await self.fetchConfig(device, registered: nil)
            }
            try await self.register(device, etag: etag)
            if device.logsOut {
                let request = self.app.unregister(deviceTokenHex: device.token, bearer: try await self.bearer(device))
                let (status, _, _) = try await Self.send(request)
                await self.count(status, expected: 204) { $0.loggedOut += 1 }
            }
        }
    }

    /// The apps' part of a batch of accepted pushes: each config refresh push
    /// makes its app fetch the config in its language and report the new ETag.
    /// Returns the campaign notifications (what the fleet answers).
    public func handleRefreshes(_ accepted: [AcceptedNotification], concurrency: Int = 16) async throws -> [AcceptedNotification] {
        var refreshes: [(SampleDevice, HeraldConfigRefresh)] = []
        var rest: [AcceptedNotification] = []
        for n in accepted {
            if let refresh = HeraldConfigRefresh(json: Data(n.payload)) {
                if let device = devices[n.deviceToken] { refreshes.append((device, refresh)) }
            } else {
                rest.append(n)
            }
        }
        report.refreshPushes += refreshes.count
        try await Self.forEach(refreshes, concurrency: concurrency) { device, refresh in
            let registered = await self.configs[device.token]?.etag
            guard refresh.isNewer(than: registered) else { return }
            if let etag = try await self.fetchConfig(device, registered: registered) {
                try await self.register(device, etag: etag, refresh: true)
            }
        }
        return rest
    }

    /// `GET /v1/notification-config` in the device's language; the ETag of
    /// what the app registered.
    private func fetchConfig(_ device: SampleDevice, registered: String?) async throws -> String? {
        let builder = device.app == AppRecord.defaultName ? app : AppRequestBuilder(baseURL: app.baseURL, app: device.app)
        let (status, body, etag) = try await Self.send(builder.notificationConfig(locale: device.locale, registeredETag: registered))
        guard status == 200 else {
            count(status, expected: 304) { _ in }
            return registered
        }
        let document = try NotificationConfigDocument(json: body, etag: etag)
        configs[device.token] = document
        report.configFetched += 1
        if let title = document.actions["reserve"]?.title { report.reserveTitles[device.locale] = title }
        return etag
    }

    private func register(_ device: SampleDevice, etag: String?, refresh: Bool = false) async throws {
        let registration = AppRequestBuilder.Registration(
            environment: device.environment, user: device.user, locale: device.locale, timeZone: device.timeZone,
            appVersion: device.appVersion,
            publicKey: device.privateKey?.publicKey.rawRepresentation.base64EncodedString(), keyID: device.keyID,
            configETag: etag)
        let request = app.register(deviceTokenHex: device.token, registration, bearer: try await bearer(device))
        let (status, _, _) = try await Self.send(request)
        count(status, expected: refresh ? 200 : 201) { r in
            if refresh { r.reRegistered += 1 } else {
                r.registered += 1
                if etag != nil { r.withConfigAtRegistration += 1 }
            }
        }
    }

    private func count(_ status: Int, expected: Int, _ update: (inout AppFleetReport) -> Void) {
        if status == expected || (200...299).contains(status) {
            update(&report)
        } else {
            report.refused[status, default: 0] += 1
        }
    }

    static func forEach<T: Sendable>(_ items: [T], concurrency: Int,
                                      _ body: @escaping @Sendable (T) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var running = 0
            for item in items {
                if running >= concurrency {
                    try await group.next()
                    running -= 1
                }
                group.addTask { try await body(item) }
                running += 1
            }
            try await group.waitForAll()
        }
    }

    static func send(_ request: ReplyHTTPRequest) async throws -> (Int, Data, String?) {
        let response = try await DemoHTTP.send(request)
        return (response.status, response.body, response.etag)
    }
}
