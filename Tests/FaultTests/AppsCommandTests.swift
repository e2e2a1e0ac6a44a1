import Crypto
import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// The operator's `herald apps` commands do what docs/operators.md says,
/// run as the built executable against a database. (That every command the
/// guides give exists in the binary is DocsTests' `DocumentedCommandsTests`.)
@Suite("herald apps")
struct AppsCommandTests {
    /// docs/operators.md, "Apps and credentials" and "Rotating keys", as an
    /// operator types it: add an app with its backend's key, a .p8 credential,
    /// its successor, retire the old one, add a registration key.
    @Test func appsCommandsAsTheOperatorsGuideRunsThem() async throws {
        try await TestDatabase.with { client, config in
            var env = ConfigFileCommandTests.bareEnvironment()
            env["DATABASE_URL"] = config.description
            env["LOG_LEVEL"] = "warning"
            try await withScratch { scratch in
                func herald(_ arguments: [String]) async throws -> (status: Int32, text: String) {
                    let child = try Child(name: "apps", arguments: ["apps"] + arguments, environment: env, directory: scratch)
                    let status = try await child.wait(limit: .seconds(60))
                    return (status, child.text())
                }
                let backend = try scratch.write("shop-backend-public.pem", P256.Signing.PrivateKey().publicKey.pemRepresentation, mode: 0o644)
                let backendNext = try scratch.write("new-public.pem", P256.Signing.PrivateKey().publicKey.pemRepresentation, mode: 0o644)
                let key2026 = try scratch.write("AuthKey_ABC123DEFG.p8", P256.Signing.PrivateKey().pemRepresentation)
                let key2027 = try scratch.write("AuthKey_XYZ987WVUT.p8", P256.Signing.PrivateKey().pemRepresentation)
                let loose = try scratch.write("AuthKey_LOOSE.p8", P256.Signing.PrivateKey().pemRepresentation, mode: 0o644)
                func count(_ sql: String) async throws -> Int64? { try await client.scalar(sql, as: Int64.self) }

                // Before any app: the app default, on the APNS_* settings.
                var (status, out) = try await herald(["list"])
                #expect(status == 0, "\(out)")
                #expect(out.contains("app default"), "\(out)")
                #expect(out.contains("credential: the APNS_* settings"), "\(out)")

                (status, out) = try await herald(["add", "shop", "--topic", "com.example.shop", "--display-name", "Shop",
                                                  "--registration-key", backend])
                #expect(status == 0, "\(out)")
                #expect(out.contains("app shop added (topic com.example.shop)"), "\(out)")
                #expect(try await client.scalar("SELECT topic || '|' || display_name FROM apps WHERE name = 'shop'", as: String.self)
                        == "com.example.shop|Shop")
                #expect(try await count("SELECT cardinality(registration_keys)::bigint FROM apps WHERE name = 'shop'") == 1)

                (status, out) = try await herald(["list"])
                #expect(status == 0, "\(out)")
                #expect(out.contains("app shop \"Shop\": topic com.example.shop, 1 registration key"), "\(out)")
                #expect(out.contains("no APNs credential"), "\(out)")

                // A topic that is no bundle id: one readable line naming the rule, exit 1, nothing stored.
                (status, out) = try await herald(["add", "beta", "--topic", "shop"])
                #expect(status == 1, "\(out)")
                #expect(out.contains("app topic must be a bundle id"), "\(out)")
                #expect(try await count("SELECT count(*) FROM apps WHERE name = 'beta'") == 0)

                // Token auth, both environments.
                (status, out) = try await herald(["add-credential", "shop", "2026-key", "--p8", key2026,
                                                  "--key-id", "ABC123DEFG", "--team-id", "TEAM123456"])
                #expect(status == 0, "\(out)")
                #expect(out.contains("credential shop/2026-key added: token, key id ABC123DEFG, team TEAM123456"), "\(out)")
                #expect(try await client.scalar("""
                    SELECT kind || '|' || environment || '|' || key_path || '|' || key_id || '|' || team_id
                    FROM app_credentials WHERE app = 'shop' AND name = '2026-key' AND retired_at IS NULL
                    """, as: String.self) == "token|any|\(key2026)|ABC123DEFG|TEAM123456")

                // A key file others may read is refused, naming it; nothing stored.
                (status, out) = try await herald(["add-credential", "shop", "loose-key", "--p8", loose,
                                                  "--key-id", "LOOSE1", "--team-id", "TEAM123456"])
                #expect(status == 1, "\(out)")
                #expect(out.contains(loose), "\(out)")
                #expect(try await count("SELECT count(*) FROM app_credentials WHERE name = 'loose-key'") == 0)

                // A .p8 without its key id: refused before anything is read.
                (status, out) = try await herald(["add-credential", "shop", "no-id", "--p8", key2027, "--team-id", "TEAM123456"])
                #expect(status != 0)
                #expect(out.contains("--p8 needs --key-id and --team-id"), "\(out)")

                (status, out) = try await herald(["list"])
                #expect(status == 0, "\(out)")
                #expect(out.contains("credential shop/2026-key [any; in use for production, sandbox]: token, key id ABC123DEFG"), "\(out)")

                // Rotation: the new key beside the old; the newest is in use; then the old one retired.
                // Given as a path relative to the command's directory (the checkout), stored absolute.
                let upToRoot = String(repeating: "../", count: HeraldBinary.repository.standardizedFileURL.pathComponents.count - 1)
                (status, out) = try await herald(["add-credential", "shop", "2027-key", "--p8", upToRoot + key2027.dropFirst(),
                                                  "--key-id", "XYZ987WVUT", "--team-id", "TEAM123456", "--environment", "any"])
                #expect(status == 0, "\(out)")
                #expect(try await client.scalar("SELECT key_path FROM app_credentials WHERE name = '2027-key'", as: String.self) == key2027)
                (status, out) = try await herald(["list"])
                #expect(out.contains("credential shop/2027-key [any; in use for production, sandbox]"), "\(out)")
                #expect(out.contains("credential shop/2026-key [any; not in use]"), "\(out)")

                (status, out) = try await herald(["retire-credential", "shop", "2026-key"])
                #expect(status == 0, "\(out)")
                #expect(out.contains("credential shop/2026-key retired"), "\(out)")
                #expect(try await count("SELECT count(*) FROM app_credentials WHERE app = 'shop' AND name = '2026-key' AND retired_at IS NOT NULL") == 1)
                #expect(try await client.scalar("SELECT credential FROM app_current_credentials WHERE app = 'shop' AND environment = 'production'", as: String.self) == "2027-key")
                (status, out) = try await herald(["list"])
                #expect(out.contains("credential shop/2026-key [any; retired]"), "\(out)")

                // Retiring it again, or a credential that is not there: exit 1, saying so.
                (status, out) = try await herald(["retire-credential", "shop", "2026-key"])
                #expect(status == 1, "\(out)")
                #expect(out.contains("app shop has no credential 2026-key in use"), "\(out)")

                // The backend's new registration key, beside the old one; a second time changes nothing.
                (status, out) = try await herald(["add-registration-key", "shop", backendNext])
                #expect(status == 0, "\(out)")
                #expect(out.contains("registration key added to app shop"), "\(out)")
                #expect(try await count("SELECT cardinality(registration_keys)::bigint FROM apps WHERE name = 'shop'") == 2)
                (status, out) = try await herald(["add-registration-key", "shop", backendNext])
                #expect(status == 0, "\(out)")
                #expect(out.contains("app shop already has this key"), "\(out)")
                #expect(try await count("SELECT cardinality(registration_keys)::bigint FROM apps WHERE name = 'shop'") == 2)
                (status, out) = try await herald(["list"])
                #expect(out.contains("app shop \"Shop\": topic com.example.shop, 2 registration keys"), "\(out)")

                // A misspelt app is an error, not a quiet no-op; a file that is no public key is refused.
                (status, out) = try await herald(["add-registration-key", "shp", backendNext])
                #expect(status == 1, "\(out)")
                #expect(out.contains("no app shp"), "\(out)")
                (status, out) = try await herald(["add-registration-key", "shop", key2027])
                #expect(status != 0)
                #expect(out.contains("is not a PEM public key"), "\(out)")
                #expect(try await count("SELECT cardinality(registration_keys)::bigint FROM apps WHERE name = 'shop'") == 2)
            }
        }
    }
}
