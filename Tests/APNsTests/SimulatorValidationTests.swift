@_spi(Testing) import APNs
import APNsSimulator
import Foundation
import Testing
import TestSupport

@Suite("Simulator validation")
struct SimulatorValidationTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var request: RawAPNsRequest
        var status: Int
        var reason: APNsReason?
        var description: String { name }
    }

    static let token = String(repeating: "ab", count: 32)
    static let body = Array("{\"aps\":{\"alert\":\"hi\"}}".utf8)
    static let goodHeaders: [(String, String)] = [
        ("apns-topic", APNsSimulatorHarness.defaultTopic),
        ("apns-push-type", "alert"),
        ("apns-priority", "10"),
    ]

    static func request(
        method: String = "POST",
        path: String = "/3/device/\(token)",
        headers: [(String, String)] = goodHeaders,
        authorization: RawAPNsRequest.Authorization = .current,
        body: [UInt8] = body
    ) -> RawAPNsRequest {
        RawAPNsRequest(method: method, path: path, headers: headers, authorization: authorization, body: body)
    }

    static let cases: [Case] = [
        Case(name: "valid", request: request(), status: 200, reason: nil),
        Case(name: "GET", request: request(method: "GET"), status: 405, reason: .methodNotAllowed),
        Case(name: "bad path", request: request(path: "/3/devices/\(token)"), status: 404, reason: .badPath),
        Case(name: "no token", request: request(path: "/3/device/"), status: 400, reason: .missingDeviceToken),
        Case(name: "short token", request: request(path: "/3/device/abcd"), status: 400, reason: .badDeviceToken),
        Case(name: "non-hex token", request: request(path: "/3/device/" + String(repeating: "zz", count: 32)), status: 400, reason: .badDeviceToken),
        Case(name: "no authorization", request: request(authorization: .none), status: 403, reason: .missingProviderToken),
        Case(name: "garbage authorization", request: request(authorization: .custom("bearer a.b.c")), status: 403, reason: .invalidProviderToken),
        Case(name: "no topic", request: request(headers: [("apns-push-type", "alert")]), status: 400, reason: .missingTopic),
        Case(name: "other topic", request: request(headers: [("apns-topic", "com.other.app")]), status: 400, reason: .topicDisallowed),
        Case(name: "duplicate push type", request: request(headers: goodHeaders + [("apns-push-type", "alert")]), status: 400, reason: .duplicateHeaders),
        Case(name: "invalid push type", request: request(headers: [("apns-topic", APNsSimulatorHarness.defaultTopic), ("apns-push-type", "shout")]), status: 400, reason: .invalidPushType),
        Case(name: "bad priority", request: request(headers: [("apns-topic", APNsSimulatorHarness.defaultTopic), ("apns-priority", "7")]), status: 400, reason: .badPriority),
        Case(name: "bad expiration", request: request(headers: goodHeaders + [("apns-expiration", "tomorrow")]), status: 400, reason: .badExpirationDate),
        Case(name: "long collapse id", request: request(headers: goodHeaders + [("apns-collapse-id", String(repeating: "c", count: 65))]), status: 400, reason: .badCollapseID),
        Case(name: "bad apns-id", request: request(headers: goodHeaders + [("apns-id", "not-a-uuid")]), status: 400, reason: .badMessageID),
        Case(name: "duplicate topic", request: request(headers: goodHeaders + [("apns-topic", APNsSimulatorHarness.defaultTopic)]), status: 400, reason: .duplicateHeaders),
        Case(name: "empty body", request: request(body: []), status: 400, reason: .payloadEmpty),
        Case(name: "body over 4096", request: request(body: Array("{\"aps\":{\"alert\":\"\(String(repeating: "x", count: 4100))\"}}".utf8)), status: 413, reason: .payloadTooLarge),
        Case(name: "not a notification object", request: request(body: Array("[1,2]".utf8)), status: 400, reason: .unknown("BadPayload")),
        Case(name: "no aps", request: request(body: Array("{\"alert\":\"x\"}".utf8)), status: 400, reason: .unknown("BadPayload")),
    ]

    @Test("each malformed request gets Apple's status and reason")
    func malformedRequests() async throws {
        let running = try await APNsSimulatorHarness.start()
        let answers = try await withClient(running) { client in
            var answers: [(Int?, APNsReason?)] = []
            for testCase in Self.cases {
                let answer = await client.sendRaw(testCase.request)
                answers.append((answer.status, answer.reason))
            }
            return answers.map { AnswerBox(status: $0.0, reason: $0.1) }
        }
        for (testCase, answer) in zip(Self.cases, answers) {
            #expect(answer.status == testCase.status, "\(testCase.name)")
            #expect(answer.reason == testCase.reason, "\(testCase.name)")
        }
    }

    struct AnswerBox: Sendable {
        var status: Int?
        var reason: APNsReason?
    }
}
