import AppServer
import ArgumentParser
import Foundation
import HeraldCore

/// `herald keys`: makes the keys Herald's contracts need.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Generate device key pairs, reply secrets and app registration tokens.",
        subcommands: [Device.self, ReplySecretCommand.self, AppJWT.self]
    )

    /// `herald keys device`
    struct Device: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "device",
            abstract: "Generate an X25519 device key pair for sealed fields (for test devices and the demo).",
            discussion: """
                Prints the private key (stays on the device), the public key (registered \
                with the device token) and the key id envelopes name, each as standard \
                base64 of the raw 32 bytes.
                """
        )

        @Flag(help: "Print a JSON object instead of name=value lines.")
        var json = false

        func run() {
            let pair = DeviceKeyPair.generate()
            if json {
                print(#"{"private_key":"\#(pair.privateKeyBase64)","public_key":"\#(pair.publicKeyBase64)","key_id":"\#(pair.keyID)"}"#)
            } else {
                print("private_key=\(pair.privateKeyBase64)")
                print("public_key=\(pair.publicKeyBase64)")
                print("key_id=\(pair.keyID)")
            }
        }
    }

    /// `herald keys reply-secret`
    struct ReplySecretCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reply-secret",
            abstract: "Generate a reply secret: 32 random bytes, base64, for HERALD_REPLY_SECRET.",
            discussion: "Example: HERALD_REPLY_SECRET=$(herald keys reply-secret)"
        )

        func run() {
            print(ReplySecret.generate().base64EncodedString())
        }
    }

    /// `herald keys app-jwt`
    struct AppJWT: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "app-jwt",
            abstract: "Make a test key pair for the app's backend and a device-registration token (JWT).",
            discussion: """
                Without --key, writes a new key pair to DIR/app-jwt-private.pem (the app's \
                backend signs with it) and DIR/app-jwt-public.pem (set HERALD_APP_JWT_PUBLIC_KEY_FILE \
                to it). Prints a token with sub = --user, aud = herald (herald:APP with --app), \
                iat = now and exp = iat + --minutes, for `Authorization: Bearer …` on PUT /v1/devices/{token}.
                """
        )

        @Option(help: "The app's user id (the token's sub; the registration's \"user\").")
        var user: String

        @Option(help: "Sign with this private key (PEM, P-256 or Ed25519) instead of making a new pair.")
        var key: String?

        @Flag(help: "Make an EdDSA (Ed25519) pair instead of ES256 (P-256).")
        var eddsa = false

        @Option(help: "Where a new pair is written.")
        var out = "."

        @Option(help: "Minutes until the token expires (1 to 60).")
        var minutes = 15

        @Option(help: "The app the token registers devices of (its aud: herald:APP); default: the app default.")
        var app: String?

        func validate() throws {
            guard (1...60).contains(minutes) else { throw ValidationError("--minutes must be from 1 to 60") }
            guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        }

        func run() async throws {
            let issuer: AppTokenIssuer
            if let key {
                guard let data = FileManager.default.contents(atPath: key) else {
                    throw ValidationError("cannot read \(key)")
                }
                issuer = try await AppTokenIssuer(privateKeyPEM: String(decoding: data, as: UTF8.self))
            } else {
                issuer = try await AppTokenIssuer(algorithm: eddsa ? .eddsa : .es256)
                let dir = URL(fileURLWithPath: out)
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                let privatePath = dir.appendingPathComponent("app-jwt-private.pem")
                let publicPath = dir.appendingPathComponent("app-jwt-public.pem")
                guard FileManager.default.createFile(atPath: privatePath.path, contents: Data(issuer.privateKeyPEM.utf8),
                                                     attributes: [.posixPermissions: 0o600]),
                      FileManager.default.createFile(atPath: publicPath.path, contents: Data(issuer.publicKeyPEM.utf8))
                else {
                    throw ValidationError("cannot write the key pair to \(dir.path)")
                }
                FileHandle.standardError.write(Data("""
                    wrote \(privatePath.path) (the app's backend signs with it; keep it secret)
                    wrote \(publicPath.path) (HERALD_APP_JWT_PUBLIC_KEY_FILE=\(publicPath.path))

                    """.utf8))
            }
            print(try await issuer.token(user: user, lifetime: TimeInterval(minutes * 60), app: app))
        }
    }
}
