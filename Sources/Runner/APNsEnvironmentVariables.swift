import APNs
import Foundation
import Store

/// The APNs client's settings from the environment: `APNS_KEY_PATH`, `APNS_KEY_ID`,
/// `APNS_TEAM_ID`, `APNS_TOPIC` (required) and `APNS_URL`, `APNS_CA_PATH`,
/// `APNS_MAX_CONNECTIONS`, `APNS_STREAMS_PER_CONNECTION`, `APNS_TIMEOUT_SECONDS`,
/// `APNS_MAX_ATTEMPTS` (optional). Every error names the variable; none shows key material.
enum APNsEnvironmentVariables {
    static func configuration(_ env: [String: String]) throws -> APNsConfiguration {
        func required(_ name: String) throws -> String {
            guard let value = env[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
                throw StoreError.configuration("\(name) is not set")
            }
            return value
        }
        func optional(_ name: String) -> String? {
            guard let value = env[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
            return value
        }
        func positiveInt(_ name: String) throws -> Int? {
            guard let raw = optional(name) else { return nil }
            guard let value = Int(raw), value > 0 else {
                throw StoreError.configuration("\(name) must be a whole number above 0, not \"\(raw)\"")
            }
            return value
        }
        let keyPath = try required("APNS_KEY_PATH")
        let key: APNsSigningKey
        do {
            key = try APNsSigningKey(pemPath: keyPath)
        } catch {
            throw StoreError.configuration("APNS_KEY_PATH: \(error)")
        }
        var configuration = APNsConfiguration(
            signingKey: key,
            keyID: try required("APNS_KEY_ID"),
            teamID: try required("APNS_TEAM_ID"),
            topic: try required("APNS_TOPIC")
        )
        if let url = optional("APNS_URL") {
            guard APNsConfiguration.isValidBaseURL(url) else {
                throw StoreError.configuration("APNS_URL must be https://host[:port], not \"\(url)\"")
            }
            configuration.baseURLOverride = url
        }
        configuration.extraTrustedCAPath = optional("APNS_CA_PATH")
        if let value = try positiveInt("APNS_MAX_CONNECTIONS") { configuration.maxConnections = value }
        if let value = try positiveInt("APNS_STREAMS_PER_CONNECTION") { configuration.maxStreamsPerConnection = value }
        if let value = try positiveInt("APNS_TIMEOUT_SECONDS") { configuration.requestTimeout = .seconds(value) }
        if let value = try positiveInt("APNS_MAX_ATTEMPTS") { configuration.retry.maxAttempts = value }
        return configuration
    }
}
