/// Which APNs environment a device token belongs to. Read once where it
/// enters (a registration, a ledger row, a credential), and typed from there on.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    case production
    case sandbox

    /// Apple's host for this environment.
    public var host: String {
        switch self {
        case .production: return "api.push.apple.com"
        case .sandbox: return "api.sandbox.push.apple.com"
        }
    }
}
