import Foundation
import HeraldCore
#if canImport(Glibc)
import Glibc
#endif
import Store
import TOMLKit

/// Where a setting's value came from, for messages.
enum SettingOrigin: Sendable, Hashable {
    case environment
    case file(String)
}

/// One setting's value and where it came from.
struct Setting: Sendable {
    let key: ConfigurationKey
    let text: String
    let origin: SettingOrigin

    /// How a message names the setting: `HERALD_HTTP_PORT`, or
    /// `configuration file herald.toml: serve.port (HERALD_HTTP_PORT)`.
    var label: String {
        switch origin {
        case .environment: key.environment
        case .file(let path): "configuration file \(path): \(key.fileKey ?? key.environment) (\(key.environment))"
        }
    }

    /// "`label` must be …, not "value"" — without the value when it is a secret.
    func invalid(_ requirement: String) -> ConfigurationError {
        ConfigurationError(key.secret ? "\(label) \(requirement)" : "\(label) \(requirement), not \"\(text)\"", key: key)
    }

    /// Runs `body`, putting the file and key before a message that came from
    /// the value of a file (a message about an environment variable already
    /// names it).
    func within<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ConfigurationError {
            guard case .file(let path) = origin else { throw error }
            throw ConfigurationError("configuration file \(path): \(key.fileKey ?? key.environment): \(error.message)", key: key)
        }
    }
}
