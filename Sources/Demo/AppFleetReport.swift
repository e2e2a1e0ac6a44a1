import APNsSimulator
import AppServer
import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import Logging
import Store

/// What the apps did with Herald's app endpoints.
public struct AppFleetReport: Sendable, CustomStringConvertible {
    public var registered = 0
    public var loggedOut = 0
    public var withConfigAtRegistration = 0
    public var refreshPushes = 0
    public var configFetched = 0
    public var reRegistered = 0
    public var refused: [Int: Int] = [:]
    /// Locale → the title of the flash sale's `reserve` button as that locale's devices registered it.
    public var reserveTitles: [String: String] = [:]

    public var description: String {
        var s = "apps: \(registered) devices registered through PUT /v1/devices/{token} (\(withConfigAtRegistration) with a config already), \(loggedOut) logged out (DELETE)"
        if refreshPushes > 0 {
            s += "; \(refreshPushes) config refresh pushes received → \(configFetched) configs fetched, \(reRegistered) devices re-registered with the new ETag"
        }
        if !refused.isEmpty { s += "; refused: \(refused.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "))" }
        if !reserveTitles.isEmpty {
            s += "\n  the flash sale's button as each language registered it: "
                + reserveTitles.sorted { $0.key < $1.key }.map { "\($0.key) \"\($0.value)\"" }.joined(separator: ", ")
        }
        return s
    }
}
