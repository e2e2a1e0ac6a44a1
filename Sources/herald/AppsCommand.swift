import APNs
import ArgumentParser
import Foundation
import Runner
import Settings
import Store

/// `herald apps`: the apps one deployment serves (`apps`), their APNs
/// credentials and registration keys. What it writes, SQL may write too; the
/// command also reads each credential's files first, so a wrong path, a
/// key file others may read or a wrong password is refused before any run
/// tries it.
struct AppsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps",
        abstract: "List and add apps, their APNs credentials (.p8, .p12, PEM) and registration keys.",
        subcommands: [List.self, Add.self, AddCredential.self, RetireCredential.self, AddRegistrationKey.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "Each app: topic, credentials (the one in use marked), registration keys, certificate expiry.")
        @OptionGroup var settings: ConfigFileOption

        func run() async throws {
            try await withApps(settings) { apps, config in
                for line in AppsReport.lines(try await apps.all(), defaultTopic: config.topic, now: Date()) { print(line) }
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add an app: its name, bundle id (topic) and display name.")
        @Argument(help: "The app's name in Herald (a-z, 0-9, - and _; e.g. shop).")
        var name: String
        @Option(help: "The bundle id, sent as apns-topic (e.g. com.example.shop).")
        var topic: String
        @Option(name: .customLong("display-name"), help: "A name for people (default: the app's name).")
        var displayName: String?
        @Option(name: .customLong("registration-key"), help: "A PEM public key file that verifies the app backend's registration tokens (repeatable).")
        var registrationKeys: [String] = []
        @OptionGroup var settings: ConfigFileOption

        func run() async throws {
            let pems = try registrationKeys.map(readPublicKey)
            let (name, topic, display) = (name, topic, displayName ?? name)
            try await withApps(settings) { apps, _ in
                try await apps.add(name: name, displayName: display, topic: topic, registrationKeys: pems)
                print("app \(name) added (topic \(topic)); add its APNs credential: herald apps add-credential \(name) …")
            }
        }
    }

    struct AddCredential: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-credential",
            abstract: "Add an APNs credential to an app: a .p8 key, a .p12, or a PEM certificate and key.",
            discussion: """
                The newest credential not retired is the one a run sends with, for its environment: \
                add the new one beside the old, and retire the old one once a run sent with the new \
                (docs/operators.md, "Rotating keys"). Paths are stored, never key material (a relative \
                path as the absolute path it names from the current directory); `herald run` must be \
                able to read them.
                """)
        @Argument(help: "The app's name.")
        var app: String
        @Argument(help: "The credential's name (e.g. 2026-key).")
        var name: String
        @Option(help: "production, sandbox or any.")
        var environment = "any"
        @Option(help: "A .p8 token-signing key (with --key-id and --team-id).")
        var p8: String?
        @Option(name: .customLong("key-id"), help: "The .p8 key's id.")
        var keyID: String?
        @Option(name: .customLong("team-id"), help: "Your team id.")
        var teamID: String?
        @Option(help: "A .p12 certificate and key (with --password-file).")
        var p12: String?
        @Option(name: .customLong("password-file"), help: "A file holding the .p12's password.")
        var passwordFile: String?
        @Option(help: "A PEM certificate (with --private-key).")
        var certificate: String?
        @Option(name: .customLong("private-key"), help: "The PEM private key of --certificate.")
        var privateKey: String?
        @OptionGroup var settings: ConfigFileOption

        func validate() throws {
            let kinds = [p8 != nil, p12 != nil, certificate != nil].filter { $0 }.count
            guard kinds == 1 else { throw ValidationError("give one of --p8, --p12 or --certificate") }
            if p8 != nil, keyID == nil || teamID == nil { throw ValidationError("--p8 needs --key-id and --team-id") }
            if certificate != nil, privateKey == nil { throw ValidationError("--certificate needs --private-key") }
            guard ["production", "sandbox", "any"].contains(environment) else {
                throw ValidationError("--environment must be production, sandbox or any")
            }
        }

        func run() async throws {
            let absolute = { (path: String?) in path.map { URL(fileURLWithPath: $0).standardizedFileURL.path } }
            let record: AppCredentialRecord
            if let p8 {
                record = AppCredentialRecord(app: app, name: name, environment: environment, kind: .token,
                                             keyPath: absolute(p8), keyID: keyID, teamID: teamID)
            } else {
                record = AppCredentialRecord(app: app, name: name, environment: environment, kind: .certificate,
                                             certificatePath: absolute(p12 ?? certificate), passwordFile: absolute(passwordFile),
                                             privateKeyPath: absolute(privateKey))
            }
            try await withApps(settings) { apps, _ in
                // Read now: a wrong file or password is refused here, not by a run at night.
                let credential = try AppCredentials.load(record)
                try await apps.addCredential(record)
                print("credential \(record.qualifiedName) added: \(AppCredentials.summary(credential, now: Date()))")
            }
        }
    }

    struct RetireCredential: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "retire-credential", abstract: "Stop sending with a credential (the next newest is used).")
        @Argument(help: "The app's name.") var app: String
        @Argument(help: "The credential's name.") var name: String
        @OptionGroup var settings: ConfigFileOption

        func run() async throws {
            let (app, name) = (app, name)
            try await withApps(settings) { apps, _ in
                guard try await apps.retireCredential(app: app, name: name) else {
                    throw AppsRefusal(description: "app \(app) has no credential \(name) in use (herald apps list shows them)")
                }
                print("credential \(app)/\(name) retired")
            }
        }
    }

    struct AddRegistrationKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-registration-key",
            abstract: "Add a public key beside an app's registration keys (its backend's new key); herald serve takes it on SIGHUP or within 30 s.")
        @Argument(help: "The app's name.") var app: String
        @Argument(help: "The PEM public key file.") var key: String
        @OptionGroup var settings: ConfigFileOption

        func run() async throws {
            let pem = try readPublicKey(key)
            let app = app
            try await withApps(settings) { apps, _ in
                if try await apps.addRegistrationKey(app: app, publicKeyPEM: pem) {
                    print("registration key added to app \(app)")
                } else if try await apps.all().contains(where: { $0.name == app }) {
                    print("app \(app) already has this key")
                } else {
                    throw AppsRefusal(description: "no app \(app) (herald apps list shows them)")
                }
            }
        }
    }
}

/// What the database holds does not allow it (no such app or credential):
/// one readable line and exit status 1, not a usage error.
private struct AppsRefusal: Error, CustomStringConvertible {
    var description: String
}

/// Runs `body` with the apps of the configured database; any error becomes one readable line.
private func withApps(_ settings: ConfigFileOption,
                      _ body: @escaping @Sendable (AppStore, HeraldConfiguration) async throws -> Void) async throws {
    do {
        let config = try settings.load()
        let logger = makeLogger("herald", config)
        try await withPostgres(config.database, logger: logger) { client in
            try await body(AppStore(client: client, logger: logger), config)
        }
    } catch let error as ValidationError {
        throw error
    } catch {
        throw readable(error)
    }
}

private func readPublicKey(_ path: String) throws -> String {
    guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
    let pem = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    guard pem.hasPrefix("-----BEGIN PUBLIC KEY-----") else {
        throw ValidationError("\(path) is not a PEM public key (-----BEGIN PUBLIC KEY-----)")
    }
    return pem
}
