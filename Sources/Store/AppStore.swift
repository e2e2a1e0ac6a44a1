import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// The apps table and its credentials.
public struct AppStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Every app's name, topic and registration keys, `default` first: what
    /// `herald serve` checks registrations with, and all that `herald_intake`
    /// may read of the apps (no credentials, no display names).
    public func registrationKeys() async throws -> [AppRecord] {
        var apps: [AppRecord] = []
        for try await (name, topic, keys) in try await client.query("""
            SELECT name, topic, registration_keys FROM apps
            ORDER BY name <> 'default', name
            """, logger: logger).decode((String, String?, [String]).self) {
            apps.append(AppRecord(name: name, displayName: name, topic: topic, registrationKeys: keys))
        }
        return apps
    }

    /// Every app with its credentials, `default` first.
    public func all() async throws -> [AppRecord] {
        var apps: [AppRecord] = []
        for try await (name, display, topic, keys) in try await client.query("""
            SELECT name, display_name, topic, registration_keys FROM apps
            ORDER BY name <> 'default', name
            """, logger: logger).decode((String, String, String?, [String]).self) {
            apps.append(AppRecord(name: name, displayName: display, topic: topic, registrationKeys: keys))
        }
        var credentials: [String: [AppCredentialRecord]] = [:]
        for try await row in try await client.query("""
            SELECT app, name, environment, kind, key_path, key_id, team_id, certificate_path, password_file,
                   private_key_path, retired_at IS NOT NULL
            FROM app_credentials ORDER BY app, added_at, name
            """, logger: logger).decode(
                (String, String, String, String, String?, String?, String?, String?, String?, String?, Bool).self) {
            credentials[row.0, default: []].append(AppCredentialRecord(
                app: row.0, name: row.1, environment: row.2, kind: AppCredentialRecord.Kind(rawValue: row.3) ?? .token,
                keyPath: row.4, keyID: row.5, teamID: row.6, certificatePath: row.7, passwordFile: row.8,
                privateKeyPath: row.9, retired: row.10))
        }
        var current: [String: [APNsEnvironment: String]] = [:]
        for try await (app, environment, credential) in try await client.query(
            "SELECT app, environment, credential FROM app_current_credentials", logger: logger
        ).decode((String, APNsEnvironment, String).self) {
            current[app, default: [:]][environment] = credential
        }
        for i in apps.indices {
            apps[i].credentials = credentials[apps[i].name] ?? []
            apps[i].current = current[apps[i].name] ?? [:]
        }
        return apps
    }

    /// Adds an app (checked by the table's constraints, whose names say what is wrong).
    public func add(name: String, displayName: String, topic: String, registrationKeys: [String]) async throws {
        try await client.query("""
            INSERT INTO apps (name, display_name, topic, registration_keys)
            VALUES (\(name), \(displayName), \(topic), \(registrationKeys))
            """, logger: logger)
    }

    /// Adds a registration key beside those the app has (a backend's key being replaced).
    public func addRegistrationKey(app: String, publicKeyPEM: String) async throws -> Bool {
        let rows = try await client.query("""
            UPDATE apps SET registration_keys = registration_keys || \(publicKeyPEM)
            WHERE name = \(app) AND NOT (\(publicKeyPEM) = ANY (registration_keys)) RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Adds a credential; the newest one not retired is the one a run uses.
    public func addCredential(_ c: AppCredentialRecord) async throws {
        try await client.query("""
            INSERT INTO app_credentials (app, name, environment, kind, key_path, key_id, team_id,
                                         certificate_path, password_file, private_key_path)
            VALUES (\(c.app), \(c.name), \(c.environment), \(c.kind.rawValue), \(c.keyPath), \(c.keyID), \(c.teamID),
                    \(c.certificatePath), \(c.passwordFile), \(c.privateKeyPath))
            """, logger: logger)
    }

    /// Retires a credential: no run sends with it any more. False when there is none such.
    public func retireCredential(app: String, name: String) async throws -> Bool {
        let rows = try await client.query("""
            UPDATE app_credentials SET retired_at = now()
            WHERE app = \(app) AND name = \(name) AND retired_at IS NULL RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }
}
