import APNsSimulator
import ExtensionKit
import Foundation
import HeraldCore
import Logging
import Store

/// What the demo's sale did as a Live Activity on the devices.
public struct SaleActivitiesReport: Sendable, CustomStringConvertible {
    /// Devices whose app registered a push-to-start token (`PUT …/push-to-start/HeraldSaleAttributes`).
    public var pushToStartRegistered = 0
    /// Activities the sale's start began (each app then registered its update token).
    public var started = 0
    /// Step confirmations the apps sent (`PUT …/activities/{campaign}` with the step shown).
    public var confirmations = 0
    /// Activities that ended on the device (`DELETE …/activities/{campaign}`).
    public var ended = 0
    /// Activities whose states arrived in the sale's order, each once, through its end.
    public var inOrder = 0
    /// Activities that were shown a step after a later one, or one twice, or missed one.
    public var outOfOrder = 0
    /// The steps every activity showed, in order (the start's state, each update's, the end's).
    public var states: [String] = []
    public var refused: [Int: Int] = [:]

    public var description: String {
        var s = "Live Activity: \(pushToStartRegistered) devices registered a push-to-start token; the sale started \(started) activities"
        s += " (each app registered its update token), \(confirmations) steps confirmed, \(ended) ended on the device"
        s += "\n  \(inOrder) activities showed every state in order (\(states.joined(separator: " → "))), \(outOfOrder) did not"
        if !refused.isEmpty { s += "; refused: \(refused.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "))" }
        return s
    }
}
