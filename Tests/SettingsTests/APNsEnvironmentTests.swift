import APNs
import Crypto
import Foundation
@testable import Settings
import Testing

@Suite("APNs settings from the environment")
struct APNsEnvironmentTests {
    @Test("the APNS_* variables make the client's configuration; errors name the variable; the key never shows")
    func fromEnvironment() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-cfg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = P256.Signing.PrivateKey()
        let keyPath = directory.appendingPathComponent("AuthKey.p8").path
        try key.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        let base = [
            "APNS_KEY_PATH": keyPath, "APNS_KEY_ID": "ABC123DEFG", "APNS_TEAM_ID": "TEAM123456",
            "APNS_TOPIC": "com.example.app",
        ]

        let configuration = try APNsEnvironmentVariables.configuration(
            base.merging(["APNS_URL": "https://127.0.0.1:8443", "APNS_MAX_CONNECTIONS": "2"]) { $1 }
        )
        #expect(configuration.keyID == "ABC123DEFG")
        #expect(configuration.teamID == "TEAM123456")
        #expect(configuration.topic == "com.example.app")
        #expect(configuration.maxConnections == 2)
        #expect(configuration.maxStreamsPerConnection == 100)
        #expect(configuration.baseURLOverride == "https://127.0.0.1:8443")
        let pemBody = key.pemRepresentation.split(separator: "\n")[1]
        #expect(!configuration.description.contains(pemBody))

        func message(_ env: [String: String]) -> String? {
            do {
                _ = try APNsEnvironmentVariables.configuration(env)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(message(["APNS_KEY_PATH": keyPath])?.contains("APNS_KEY_ID") == true)
        #expect(message(["APNS_KEY_ID": "ABC123DEFG", "APNS_TOPIC": "t"])?.contains("APNS_KEY_PATH") == true)
        // None of the three: the apps' credentials come from the database.
        let keyless = try APNsEnvironmentVariables.configuration(["APNS_TOPIC": "com.example.app"])
        #expect(keyless.credentials.isEmpty && keyless.defaultCredential == nil && keyless.topic == "com.example.app")
        #expect(message(base.merging(["APNS_TOPIC": " "]) { $1 })?.contains("APNS_TOPIC") == true)
        #expect(message(base.merging(["APNS_URL": "http://plain"]) { $1 })?.contains("APNS_URL") == true)
        #expect(message(base.merging(["APNS_MAX_ATTEMPTS": "0"]) { $1 })?.contains("APNS_MAX_ATTEMPTS") == true)
        #expect(message(base.merging(["APNS_TIMEOUT_SECONDS": "soon"]) { $1 })?.contains("APNS_TIMEOUT_SECONDS") == true)
        let badKey = message(base.merging(["APNS_KEY_PATH": keyPath + ".missing"]) { $1 })
        #expect(badKey?.contains("APNS_KEY_PATH") == true)
        #expect(badKey?.contains(pemBody) == false)
    }
}
