import Foundation
import HeraldCore
#if canImport(Glibc)
import Glibc
#endif
import Store
import TOMLKit

/// The settings of one process: the environment over a configuration file
/// over the defaults. An empty environment variable counts as unset.
public struct ConfigurationSource: Sendable {
    public let environment: [String: String]
    public let file: ConfigurationFile?

    public init(environment: [String: String], file: ConfigurationFile? = nil) {
        self.environment = environment
        self.file = file
    }

    /// The file named by `--config` (`path`), else by `HERALD_CONFIG`, else none.
    public init(environment: [String: String], configFile path: String?) throws(ConfigurationError) {
        let named = path ?? environment[ConfigurationKey.config.environment].flatMap { $0.isEmpty ? nil : $0 }
        if let named {
            self.init(environment: environment, file: try ConfigurationFile.load(path: named))
        } else {
            self.init(environment: environment, file: nil)
        }
    }

    func setting(_ key: ConfigurationKey) -> Setting? {
        if let text = environment[key.environment], !text.isEmpty {
            return Setting(key: key, text: text, origin: .environment)
        }
        guard let file, let text = file.values[key.environment] else { return nil }
        if let group = ConfigurationKey.alternatives.first(where: { $0.contains(key) }),
           group.contains(where: { environment[$0.environment].map { !$0.isEmpty } ?? false }) {
            return nil
        }
        return Setting(key: key, text: text, origin: .file(file.path))
    }

    /// Non-empty text (trimmed of spaces), or nil when unset.
    func text(_ key: ConfigurationKey) -> Setting? {
        guard let s = setting(key) else { return nil }
        let trimmed = s.text.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : Setting(key: key, text: trimmed, origin: s.origin)
    }

    func int(_ key: ConfigurationKey) throws(ConfigurationError) -> Int? {
        guard case .integer(let range, let fallback) = key.kind else {
            throw ConfigurationError("\(key.environment) is not a number setting")
        }
        guard let s = text(key) else { return fallback }
        guard let n = Int(s.text), range.contains(n) else {
            throw s.invalid("must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    /// A whole number that has a default (`ConfigurationKey.Kind.integer`).
    func number(_ key: ConfigurationKey) throws(ConfigurationError) -> Int {
        guard let n = try int(key) else { throw ConfigurationError("\(key.environment) is not set") }
        return n
    }

    func choice(_ key: ConfigurationKey) throws(ConfigurationError) -> String? {
        guard case .choice(let words) = key.kind else {
            throw ConfigurationError("\(key.environment) is not a choice")
        }
        guard let s = text(key) else { return nil }
        guard words.contains(s.text) else {
            throw s.invalid("must be one of \(words.joined(separator: ", "))")
        }
        return s.text
    }
}

extension ConfigurationSource {
    /// One line per key: its variable, its value (a secret's hidden) and
    /// where the value came from (`herald config check`).
    public func lines() -> [String] {
        let width = ConfigurationKey.all.map(\.environment.count).max() ?? 0
        return ConfigurationKey.all.map { key in
            let name = key.environment.padding(toLength: width, withPad: " ", startingAt: 0)
            guard let s = setting(key) else {
                return "\(name)  (default: \(key.defaultText.replacingOccurrences(of: "`", with: "")))"
            }
            let lines = s.text.split(separator: "\n", omittingEmptySubsequences: false).count
            let value = key.secret ? "(set; hidden)" : lines > 1 ? "(set; \(lines) lines)" : s.text
            switch s.origin {
            case .environment: return "\(name)  \(value)  (environment)"
            case .file(let path): return "\(name)  \(value)  (\(path): \(key.fileKey ?? key.environment))"
            }
        }
    }

    /// Whether any APNs setting is given (then `herald config check` checks them all).
    public var namesAPNs: Bool {
        [ConfigurationKey.apnsKeyPath, .apnsKeyID, .apnsTeamID].contains { text($0) != nil }
    }
}
