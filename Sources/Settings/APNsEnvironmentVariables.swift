import APNs
import Foundation
import HeraldCore
import Store

/// The APNs client's settings: `APNS_KEY_PATH`, `APNS_KEY_ID`, `APNS_TEAM_ID`
/// (all three, or none when every app's credential is in the database),
/// `APNS_TOPIC` and `APNS_URL`, `APNS_CHANNELS_URL`, `APNS_CA_PATH`,
/// `APNS_MAX_CONNECTIONS`, `APNS_STREAMS_PER_CONNECTION`, `APNS_TIMEOUT_SECONDS`,
/// `APNS_MAX_ATTEMPTS` (optional), from the environment or the `[apns]` table
/// of a configuration file. Every error names the variable (and the file, for
/// a value from it); none shows key material.
enum APNsEnvironmentVariables {
    static func configuration(_ env: [String: String]) throws -> APNsConfiguration {
        try configuration(ConfigurationSource(environment: env), defaultTopic: nil)
    }

    static func configuration(_ source: ConfigurationSource, defaultTopic: String?) throws -> APNsConfiguration {
        func missing(_ key: ConfigurationKey) -> ConfigurationError {
            ConfigurationError("\(key.environment) is not set" + (key.fileKey.map { " (nor \($0) in a configuration file)" } ?? ""),
                               key: key)
        }
        func required(_ key: ConfigurationKey) throws -> String {
            guard let value = source.text(key) else { throw missing(key) }
            return value.text
        }
        // No deployment key (none of the three set): the apps' credentials
        // come from the database (`HeraldJob.withApps` refuses a run where no app has one).
        var credentials: [String: APNsCredential] = [:]
        if source.namesAPNs {
            guard let keyPath = source.text(.apnsKeyPath) else { throw missing(.apnsKeyPath) }
            let key: APNsSigningKey
            do {
                key = try APNsSigningKey(pemPath: keyPath.text)
            } catch {
                throw ConfigurationError("\(keyPath.label): \(error)", key: .apnsKeyPath)
            }
            credentials["default"] = .token(signingKey: key, keyID: try required(.apnsKeyID), teamID: try required(.apnsTeamID))
        }
        guard let topic = source.text(.apnsTopic)?.text ?? defaultTopic else { throw missing(.apnsTopic) }
        var configuration = APNsConfiguration(credentials: credentials, defaultCredential: credentials.isEmpty ? nil : "default",
                                              topic: topic)
        if let url = source.text(.apnsURL) {
            guard APNsConfiguration.isValidBaseURL(url.text) else {
                throw url.invalid("must be https://host[:port]")
            }
            configuration.baseURLOverride = url.text
        }
        if let url = source.text(.apnsChannelsURL) {
            guard APNsConfiguration.isValidBaseURL(url.text) else {
                throw url.invalid("must be https://host[:port]")
            }
            configuration.channelsBaseURLOverride = url.text
        }
        configuration.extraTrustedCAPath = source.text(.apnsCAPath)?.text
        if let value = try source.int(.apnsMaxConnections) { configuration.maxConnections = value }
        if let value = try source.int(.apnsStreams) { configuration.maxStreamsPerConnection = value }
        if let value = try source.int(.apnsTimeout) { configuration.requestTimeout = .seconds(value) }
        if let value = try source.int(.apnsMaxAttempts) { configuration.retry.maxAttempts = value }
        return configuration
    }
}
