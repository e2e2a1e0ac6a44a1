/// A test send stops when APNs refuses the provider itself (a wrong key,
/// team or topic): every later request would be refused the same way. A
/// person must fix the configuration (exit status 1).
public struct RunAborted: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }

    static func providerRefused(_ text: String) -> RunAborted {
        RunAborted(reason: "APNs refused the provider (\(text)); check APNS_KEY_PATH, APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC")
    }
}
