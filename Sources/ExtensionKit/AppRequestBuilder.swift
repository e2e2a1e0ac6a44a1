import Foundation

/// The app's own requests to Herald: registering the device (contract 6)
/// and fetching the notification config (contract 5).
///
/// Each method returns a ``ReplyHTTPRequest``; send it with `URLSession`
/// (`urlRequest` on Apple platforms).
public struct AppRequestBuilder: Sendable {
    /// Where `herald serve` answers, with or without a path prefix.
    public let baseURL: URL
    /// The app's name in the Herald deployment (`herald apps list`); nil:
    /// the app `default`. Its notification config holds its own categories.
    public let app: String?

    /// A builder for the Herald server at `baseURL`
    /// (`https://push.example.com` or `https://example.com/herald/`), for
    /// the app named `app` there (nil: a deployment's app `default`).
    public init(baseURL: URL, app: String? = nil) {
        self.baseURL = baseURL
        self.app = app
    }

    /// What the app registers with `PUT /v1/devices/{token}`.
    ///
    /// Fields left `nil` are left out of the body, and Herald keeps what it has.
    public struct Registration: Sendable, Hashable {
        /// The APNs environment of the device token: `production` or `sandbox`.
        public var environment: String
        /// The app's user id; must be the `sub` of the bearer token.
        public var user: String
        /// The device's BCP 47 locale (`fr-FR`): campaign text and button titles follow it.
        public var locale: String?
        /// The device's IANA time zone (`Europe/Paris`), for quiet hours.
        public var timeZone: String?
        /// The app's version (`3.1`); segment rules compare it numerically.
        public var appVersion: String?
        /// Base64 of the raw X25519 public key the sealed fields are sealed to
        /// (`privateKey.publicKey.rawRepresentation.base64EncodedString()`).
        public var publicKey: String?
        /// The id of ``publicKey``; envelopes name it as `kid`. Herald names the key when it is `nil`.
        public var keyID: String?
        /// Text-valued attributes merged into the user's.
        public var attributes: [String: String]?
        /// false: the user turned campaigns off; true: back on; nil: unchanged.
        public var marketing: Bool?
        /// The ETag of the notification config the app has registered.
        public var configETag: String?

        /// A registration; only `environment` and `user` are required.
        public init(environment: String, user: String, locale: String? = nil, timeZone: String? = nil,
                    appVersion: String? = nil, publicKey: String? = nil, keyID: String? = nil,
                    attributes: [String: String]? = nil, marketing: Bool? = nil, configETag: String? = nil) {
            self.environment = environment
            self.user = user
            self.locale = locale
            self.timeZone = timeZone
            self.appVersion = appVersion
            self.publicKey = publicKey
            self.keyID = keyID
            self.attributes = attributes
            self.marketing = marketing
            self.configETag = configETag
        }
    }

    /// `PUT /v1/devices/{token}`; `deviceToken` is the APNs token as
    /// `didRegisterForRemoteNotificationsWithDeviceToken` gives it, and
    /// `bearer` the JWT the app's backend issued for this user.
    public func register(deviceToken: Data, _ registration: Registration, bearer: String) -> ReplyHTTPRequest {
        register(deviceTokenHex: deviceToken.map { String(format: "%02x", $0) }.joined(), registration, bearer: bearer)
    }

    /// `PUT /v1/devices/{token}` with the APNs token already in hex
    /// (lowercased in the URL); `bearer` is the JWT of the app's backend.
    public func register(deviceTokenHex: String, _ r: Registration, bearer: String) -> ReplyHTTPRequest {
        var object: [String: Any] = ["environment": r.environment, "user": r.user]
        if let v = r.locale { object["locale"] = v }
        if let v = r.timeZone { object["time_zone"] = v }
        if let v = r.appVersion { object["app_version"] = v }
        if let v = r.publicKey { object["public_key"] = v }
        if let v = r.keyID { object["key_id"] = v }
        if let v = r.attributes { object["attributes"] = v }
        if let v = r.marketing { object["marketing"] = v }
        if let v = r.configETag { object["config_etag"] = v }
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return ReplyHTTPRequest(url: devicesURL(deviceTokenHex), method: "PUT",
                                headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(bearer)")],
                                body: body)
    }

    /// `DELETE /v1/devices/{token}` (logout): Herald stops targeting the
    /// device until it registers again.
    public func unregister(deviceTokenHex: String, bearer: String) -> ReplyHTTPRequest {
        ReplyHTTPRequest(url: devicesURL(deviceTokenHex), method: "DELETE",
                         headers: [("Authorization", "Bearer \(bearer)")], body: Data())
    }

    /// `GET /v1/notification-config?app=…&locale=…` with `If-None-Match`
    /// when the app has a config: 304 means the registered one is current.
    public func notificationConfig(locale: String?, registeredETag: String?) -> ReplyHTTPRequest {
        var url = baseURL.appendingPathComponent("v1").appendingPathComponent("notification-config")
        let items = [app.map { URLQueryItem(name: "app", value: $0) }, locale.map { URLQueryItem(name: "locale", value: $0) }]
            .compactMap { $0 }
        if !items.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.queryItems = items
            url = components.url ?? url
        }
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        if let locale { headers.append(("Accept-Language", locale)) }
        if let registeredETag { headers.append(("If-None-Match", registeredETag)) }
        return ReplyHTTPRequest(url: url, method: "GET", headers: headers, body: Data())
    }

    // MARK: Live Activities (DESIGN, contract 10)

    /// `PUT /v1/devices/{token}/push-to-start/HeraldSaleAttributes`: the token
    /// `Activity<HeraldSaleAttributes>.pushToStartTokenUpdates` gives (iOS 17.2), in hex.
    public func registerPushToStart(deviceTokenHex: String, pushToStartTokenHex: String, bearer: String) -> ReplyHTTPRequest {
        json(devicesURL(deviceTokenHex).appendingPathComponent("push-to-start").appendingPathComponent(HeraldSaleAttributes.typeName),
             method: "PUT", ["token": pushToStartTokenHex.lowercased()], bearer: bearer)
    }

    /// How a running activity of a sale gets its updates.
    public enum ActivityUpdates: Sendable, Hashable {
        /// Its own update token (`Activity.pushTokenUpdates`), in hex.
        case token(String)
        /// The broadcast channel it subscribed to (iOS 18), base64 as APNs gives it.
        case channel(String)
    }

    /// `PUT /v1/devices/{token}/activities/{campaign}`: a running activity of the sale, how it
    /// gets its updates, who started it, and the content state's `step` it shows (what the
    /// device confirms; send it again from `contentUpdates` as each step arrives).
    public func registerActivity(deviceTokenHex: String, campaign: Int64, updates: ActivityUpdates,
                                 startedByPush: Bool, step: Int?, bearer: String) -> ReplyHTTPRequest {
        var object: [String: Any] = ["started_by": startedByPush ? "push" : "app"]
        switch updates {
        case .token(let hex): object["token"] = hex.lowercased()
        case .channel(let channel): object["channel"] = channel
        }
        if let step { object["step"] = step }
        return json(devicesURL(deviceTokenHex).appendingPathComponent("activities").appendingPathComponent(String(campaign)),
                    method: "PUT", object, bearer: bearer)
    }

    /// `DELETE /v1/devices/{token}/activities/{campaign}`: the activity ended or was dismissed.
    public func endActivity(deviceTokenHex: String, campaign: Int64, bearer: String) -> ReplyHTTPRequest {
        ReplyHTTPRequest(url: devicesURL(deviceTokenHex).appendingPathComponent("activities").appendingPathComponent(String(campaign)),
                         method: "DELETE", headers: [("Authorization", "Bearer \(bearer)")], body: Data())
    }

    private func json(_ url: URL, method: String, _ object: [String: Any], bearer: String) -> ReplyHTTPRequest {
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return ReplyHTTPRequest(url: url, method: method,
                                headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(bearer)")], body: body)
    }

    private func devicesURL(_ hex: String) -> URL {
        baseURL.appendingPathComponent("v1").appendingPathComponent("devices").appendingPathComponent(hex.lowercased())
    }
}
