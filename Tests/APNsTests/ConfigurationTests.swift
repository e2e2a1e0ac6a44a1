@testable import APNs
import Crypto
import Foundation
import Testing

@Suite("Configuration and reasons")
struct ConfigurationTests {
    @Test("reason strings map both ways; unknown ones are kept")
    func reasons() {
        for raw in ["BadDeviceToken", "Unregistered", "ExpiredProviderToken", "TooManyRequests", "BadCollapseId",
            "UnrelatedKeyIdInToken", "Shutdown", "ServiceUnavailable"]
        {
            let reason = APNsReason(string: raw)
            #expect(reason.rawValue == raw)
            if case .unknown = reason { Issue.record("\(raw) should be known") }
        }
        #expect(APNsReason(string: "SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsReason.unknown("SomethingNew").rawValue == "SomethingNew")
        #expect(APNsReason.invalidProviderToken.isFatalForRun)
        #expect(APNsReason.topicDisallowed.isFatalForRun)
        #expect(!APNsReason.tooManyRequests.isFatalForRun)
        #expect(!APNsReason.unregistered.isFatalForRun)
    }

    @Test("a key file other users may read is refused, naming the path and the fix")
    func keyFileOthersCanRead() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("open-\(UUID().uuidString).p8").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        for mode in [0o644, 0o640, 0o604, 0o660] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            #expect(throws: APNsConfigurationError.self) { try APNsSigningKey(pemPath: path) }
            do {
                _ = try APNsSigningKey(pemPath: path)
            } catch let error as APNsConfigurationError {
                #expect("\(error)".contains(path))
                #expect("\(error)".contains("chmod 600"))
                #expect(!"\(error)".contains("BEGIN"))
                #expect(error.isKeyProblem)
            }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        _ = try APNsSigningKey(pemPath: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: path)
        _ = try APNsSigningKey(pemPath: path)
        // Through a symlink (as Kubernetes mounts secrets) the file's own mode counts.
        let link = path + ".link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        defer { try? FileManager.default.removeItem(atPath: link) }
        _ = try APNsSigningKey(pemPath: link)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect(throws: APNsConfigurationError.self) { try APNsSigningKey(pemPath: link) }
    }

    @Test("a bad key file names the path and never echoes the content")
    func badKeyFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).p8").path
        try "-----BEGIN PRIVATE KEY-----\nSECRETSECRET\n-----END PRIVATE KEY-----\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try APNsSigningKey(pemPath: path)
            Issue.record("expected an error")
        } catch let error as APNsConfigurationError {
            #expect("\(error)".contains(path))
            #expect(!"\(error)".contains("SECRET"))
            #expect(error.isKeyProblem)
        }
        do {
            _ = try APNsSigningKey(pemPath: path + ".missing")
            Issue.record("expected an error")
        } catch let error as APNsConfigurationError {
            #expect("\(error)".contains(".missing"))
        }
    }
}
