import APNs
import HeraldCore
import Store

/// Which topic and APNs credential each app's devices are sent with (`apps`, `app_credentials`):
/// the one place a device's app turns into its `apns-topic` and the client's
/// credential name. The app `default` without credentials of its own uses the
/// deployment's APNS_* settings (the client's default credential), so a
/// deployment of one app needs no row.
public struct AppRoutes: Sendable {
    public struct Route: Sendable, Hashable {
        public var topic: String
        /// The client's credential name per environment (`production`,
        /// `sandbox`); nil: the client's default credential.
        public var credentials: [APNsEnvironment: String]
        /// A credential name the client does not have, for an environment the
        /// app has none for: the client refuses it (UnknownCredential), and
        /// the run fails that app's campaigns with the reason.
        public var fallback: String?
    }

    public var routes: [String: Route]
    /// The topic of an app the run does not know (one added after it began).
    public let defaultTopic: String
    /// Credentials in use that could not be read when the run began, with why.
    public var problems: [String: String] = [:]
    /// Apps that send with a client certificate in some environment: Apple takes none for Live
    /// Activities, so a sale refuses them before sending anything.
    public var certificateApps: Set<String> = []

    /// Marks the apps whose credential (or, for an app on the client's default, the default) is a
    /// certificate, as `credentials` (the client's, by name) says.
    public mutating func noteCertificates(_ credentials: [String: APNsCredential], defaultCredential: String?) {
        for (app, route) in routes {
            let names = route.credentials.isEmpty ? [defaultCredential] : route.credentials.values.map(Optional.some)
            for name in names {
                if let name, case .certificate? = credentials[name] { certificateApps.insert(app) }
            }
        }
    }

    /// Why a Live Activity sale to `apps` cannot go out (nil: one of them sends with a token):
    /// Apple takes no certificate for Live Activities. The run refuses the sale for it, and
    /// `herald preview` names it (DESIGN, contract 10).
    public func liveActivityRefusal(apps: [String]) -> String? {
        guard !apps.isEmpty, apps.allSatisfy(certificateApps.contains), let app = apps.sorted().first else { return nil }
        return "app \(app) sends with a client certificate, and Apple takes none for Live Activities: give it a token credential (a .p8 key: herald apps add-credential), or remove live_activity"
    }

    /// One app, `default`, on the client's default credential.
    public static func single(topic: String) -> AppRoutes {
        AppRoutes(routes: [AppRecord.defaultName: Route(topic: topic, credentials: [:], fallback: nil)], defaultTopic: topic)
    }

    public init(routes: [String: Route], defaultTopic: String) {
        self.routes = routes
        self.defaultTopic = defaultTopic
    }

    /// The routes of `apps` as the database holds them; `defaultTopic` is
    /// APNS_TOPIC, and `deploymentKey` whether the APNS_* key is set (the
    /// client's default credential, which the app `default` falls back to).
    public init(apps: [AppRecord], defaultTopic: String, deploymentKey: Bool = true) {
        var routes: [String: Route] = [:]
        for app in apps {
            var credentials: [APNsEnvironment: String] = [:]
            for (environment, name) in app.current {
                credentials[environment] = AppCredentialRecord.qualifiedName(app: app.name, name: name)
            }
            let isDefault = app.name == AppRecord.defaultName
            routes[app.name] = Route(topic: app.topic ?? defaultTopic, credentials: credentials,
                                     fallback: isDefault && credentials.isEmpty && deploymentKey ? nil : "\(app.name)/(none)")
        }
        self.init(routes: routes, defaultTopic: defaultTopic)
    }

    public func topic(app: String) -> String { routes[app]?.topic ?? defaultTopic }

    /// The credential to send a device of `app` in `environment` with (nil:
    /// the client's default).
    public func credential(app: String, environment: APNsEnvironment) -> String? {
        guard let route = routes[app] else { return "\(app)/(none)" }
        return route.credentials[environment] ?? route.fallback
    }

    /// For a message: `app shop (credential shop/2026-key): APNs answered 403 InvalidProviderToken`.
    func describe(_ refusal: AppRefusal) -> String {
        "\(describe(app: refusal.app, environment: refusal.environment)): APNs answered \(refusal.answer)"
    }

    /// For a message: `app shop (credential shop/2026-key)`.
    public func describe(app: String, environment: APNsEnvironment) -> String {
        switch credential(app: app, environment: environment) {
        case nil: "app \(app) (credential: the APNS_* settings)"
        case let name? where name.hasSuffix("/(none)"):
            app == AppRecord.defaultName
                ? "app \(app) (no APNs credential for \(environment.rawValue): set APNS_KEY_PATH, APNS_KEY_ID and APNS_TEAM_ID, or add one with herald apps add-credential)"
                : "app \(app) (no APNs credential for \(environment.rawValue))"
        case let name?:
            if let problem = problems[name] {
                "app \(app) (credential \(name), unusable: \(problem))"
            } else {
                "app \(app) (credential \(name))"
            }
        }
    }
}
