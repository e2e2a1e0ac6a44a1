import Foundation
import HeraldCore
import PostgresNIO

/// A row of a span: its ledger id and its device (a settlement invalidates the device of a
/// token APNs refused).
public struct SpanRow: Sendable, Hashable {
    public var id: Int64
    public var deviceID: Int64

    public init(id: Int64, deviceID: Int64) {
        self.id = id
        self.deviceID = deviceID
    }
}
