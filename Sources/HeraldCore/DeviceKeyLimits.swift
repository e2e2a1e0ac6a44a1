import ExtensionKit
import Foundation

public enum DeviceKeyLimits {
    /// Longest key id a device may register (Sql: devices.key_id).
    public static let maxKeyIDBytes = 64
}
