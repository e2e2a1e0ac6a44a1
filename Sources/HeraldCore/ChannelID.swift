import Foundation

/// A broadcast channel's id, as Apple defines it: a base64-encoded string of no stated size.
/// The one rule for the run, the app-facing endpoint and the simulator.
public enum ChannelID {
    /// Padded base64 of any length: what a device can subscribe to and a header can carry.
    public static func isUsable(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count % 4 == 0 && Data(base64Encoded: text) != nil
    }

    /// Its first characters, to name it in a message (an id is no secret, but may be long).
    public static func excerpt(_ text: String) -> String {
        let head = text.unicodeScalars.prefix(12).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? String($0) : "?" }.joined()
        return text.unicodeScalars.count > 12 ? "\"\(head)…\"" : "\"\(head)\""
    }
}
