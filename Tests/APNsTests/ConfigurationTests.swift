import APNs
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
