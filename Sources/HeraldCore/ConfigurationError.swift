/// A setting Herald cannot work with, said so that an operator can fix it:
/// the message names the setting (its variable, and the file and key when
/// the value came from a configuration file) and never shows a secret.
public struct ConfigurationError: Error, Hashable, CustomStringConvertible {
    /// The variable of the setting at fault (`APNS_KEY_PATH`), when one is.
    public let key: String?
    public let message: String

    public init(_ message: String, key: String? = nil) {
        self.message = message
        self.key = key
    }

    public var description: String { message }
}
