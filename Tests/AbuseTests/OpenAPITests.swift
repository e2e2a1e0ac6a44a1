import AppServer
import Foundation
import HeraldCore
import Observability
import TestSupport
import Testing

/// A JSON Schema check of the subset the document uses: type, const, enum,
/// required, properties, additionalProperties, items, minimum, maximum,
/// minLength, maxLength, maxItems and local $ref.
struct SchemaChecker {
    let document: JSONValue

    func resolve(_ node: JSONValue) -> JSONValue {
        guard let ref = node["$ref"]?.stringValue, ref.hasPrefix("#/") else { return node }
        var current: JSONValue = document
        for part in ref.dropFirst(2).split(separator: "/") { current = current[String(part)] ?? .null }
        return resolve(current)
    }

    func number(_ v: JSONValue?) -> Double? {
        switch v {
        case .int(let i)?: Double(i)
        case .double(let d)?: d
        default: nil
        }
    }

    func typeName(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Problems of `value` against `schema`, with their JSON paths.
    func problems(_ value: JSONValue, _ schemaNode: JSONValue, at path: String = "$") -> [String] {
        let schema = resolve(schemaNode)
        var out: [String] = []
        let actual = typeName(value)
        if let type = schema["type"] {
            var allowed: [String] = []
            if case .array(let list) = type { allowed = list.compactMap(\.stringValue) } else if let t = type.stringValue { allowed = [t] }
            if !(allowed.contains(actual) || (actual == "integer" && allowed.contains("number"))) {
                return ["\(path): \(actual), expected \(allowed.joined(separator: "|"))"]
            }
        }
        if let const = schema["const"], const != value { out.append("\(path): not \(const.jsonText)") }
        if case .array(let options)? = schema["enum"], !options.contains(value) { out.append("\(path): \(value.jsonText) not in enum") }
        if case .string(let s) = value {
            if let min = number(schema["minLength"]), Double(s.count) < min { out.append("\(path): shorter than \(min)") }
            if let max = number(schema["maxLength"]), Double(s.count) > max { out.append("\(path): longer than \(max)") }
        }
        if let n = number(value) {
            if let min = number(schema["minimum"]), n < min { out.append("\(path): below \(min)") }
            if let max = number(schema["maximum"]), n > max { out.append("\(path): above \(max)") }
        }
        if case .array(let array) = value {
            if let max = number(schema["maxItems"]), Double(array.count) > max { out.append("\(path): more than \(max) items") }
            if let items = schema["items"] {
                for (i, item) in array.enumerated() { out += problems(item, items, at: "\(path)[\(i)]") }
            }
        }
        if case .object(let object) = value {
            if case .array(let required)? = schema["required"] {
                for key in required.compactMap(\.stringValue) where object[key] == nil { out.append("\(path): missing \(key)") }
            }
            for (key, member) in object {
                if let sub = schema["properties"]?[key] {
                    out += problems(member, sub, at: "\(path).\(key)")
                } else if case .object? = schema["additionalProperties"], let additional = schema["additionalProperties"] {
                    out += problems(member, additional, at: "\(path).\(key)")
                } else if schema["additionalProperties"] == .bool(false) {
                    out.append("\(path): unexpected key \(key)")
                }
            }
        }
        return out
    }
}

@Suite("The OpenAPI document matches the server")
struct OpenAPITests {
    struct Exchange: Sendable {
        var method: String
        var path: String
        var request: [UInt8]
    }

    static let saleID: Int64 = 900_001

    @Test func everyAnswerIsDocumentedAndEveryDocumentedAnswerHappens() async throws {
        let keys = try await AppKeys.make()
        let reply = { (d: Int64, a: String, t: String?) in HostileTable.object(HostileTable.fields(delivery: d, action: a, text: t)) }
        let same = reply(1, "love_it", nil)
        var exchanges: [(String, String, [UInt8])] = [
            ("POST", "/v1/replies", RawHTTP.request(body: same)),
            ("POST", "/v1/replies", RawHTTP.request(body: same)),
            ("POST", "/v1/replies", RawHTTP.request(body: Array("{".utf8))),
            ("POST", "/v1/replies", RawHTTP.request(body: HostileTable.object(HostileTable.fields(delivery: 1, action: "love_it", token: "x")))),
            ("POST", "/v1/replies", RawHTTP.request(body: reply(77, "love_it", nil))),
            ("POST", "/v1/replies", RawHTTP.request(body: Array(repeating: UInt8(ascii: " "), count: 20_000))),
            ("POST", "/v1/replies", RawHTTP.request(headers: [("Content-Type", "text/plain")], body: same)),
            ("POST", "/v1/replies", RawHTTP.request(body: reply(1, "reserve", nil))),
            ("POST", "/v1/replies", RawHTTP.request(body: same)),
            ("POST", "/v1/replies", RawHTTP.request(body: same)),  // the fourth to delivery 1: 429
            ("POST", "/v1/receipts", RawHTTP.request(path: "/v1/receipts", body: Array("""
                {"receipts":[{"delivery":1,"token":"\(abuseTokens.token(delivery: 1))","arrived_at":"2026-11-20T10:00:03Z","sealed_opened":null,"media_attached":true},
                             {"delivery":77,"token":"\(abuseTokens.token(delivery: 77))","arrived_at":"2026-11-20T10:00:03Z"},
                             {"delivery":2,"token":"x","arrived_at":"2026-11-20T10:00:03Z"}]}
                """.utf8))),
            ("POST", "/v1/receipts", RawHTTP.request(path: "/v1/receipts", body: Array(#"{"receipts":[]}"#.utf8))),
            ("POST", "/v1/receipts", RawHTTP.request(path: "/v1/receipts", body: Array(repeating: UInt8(ascii: " "), count: 20_000))),
            ("POST", "/v1/receipts", RawHTTP.request(path: "/v1/receipts", headers: [("Content-Type", "text/plain")], body: Array("{}".utf8))),
            ("GET", "/v1/receipts", RawHTTP.request(method: "GET", path: "/v1/receipts", headers: [])),
            ("GET", "/v1/replies", RawHTTP.request(method: "GET", path: "/v1/replies", headers: [])),
            ("GET", "/v1/notification-config", RawHTTP.request(method: "GET", path: "/v1/notification-config", headers: [])),
            ("GET", "/v1/notification-config", RawHTTP.request(method: "GET", path: "/v1/notification-config?locale=fr-CA", headers: [])),
            ("GET", "/v1/notification-config", RawHTTP.request(method: "GET", path: "/v1/notification-config?app=nope", headers: [])),
            ("GET", "/v1/notification-config", RawHTTP.request(method: "GET", path: "/v1/notification-config", headers: [("Accept-Language", "de;q=0.5, ja")])),
            ("DELETE", "/v1/notification-config", RawHTTP.request(method: "DELETE", path: "/v1/notification-config", headers: [])),
            ("GET", "/healthz", RawHTTP.request(method: "GET", path: "/healthz", headers: [])),
            ("POST", "/healthz", RawHTTP.request(method: "POST", path: "/healthz", headers: [])),
            ("GET", "/v1/openapi.json", RawHTTP.request(method: "GET", path: "/v1/openapi.json", headers: [])),
            ("PUT", "/v1/openapi.json", RawHTTP.request(method: "PUT", path: "/v1/openapi.json", headers: [])),
            ("GET", "/nowhere", RawHTTP.request(method: "GET", path: "/nowhere", headers: [])),
            ("GET", "/healthz", RawHTTP.request(method: "GET", path: "/healthz", headers: [("X-Big", String(repeating: "b", count: 20_000))])),
            ("GET", "/healthz", Array("NOT HTTP\r\n\r\n".utf8)),
            ("GET", "/metrics", RawHTTP.request(method: "GET", path: "/metrics", headers: [])),
            ("POST", "/metrics", RawHTTP.request(method: "POST", path: "/metrics", headers: [])),
        ]
        // Device registration: every documented answer of PUT and DELETE.
        let devices = "/v1/devices/{token}"
        let alice = try await keys.bearer("alice")
        let bob = try await keys.bearer("bob")
        let d = AppKeys.device
        exchanges += [
            ("PUT", devices, AppKeys.put(d(1), bearer: alice, body: AppKeys.registration("alice"))),
            ("PUT", devices, AppKeys.put(d(1), bearer: alice, body: AppKeys.registration("alice", [("app_version", "\"3.2\"")]))),
            ("PUT", devices, AppKeys.put(d(2), bearer: alice, body: Array("{".utf8))),
            ("PUT", devices, AppKeys.put(d(3), bearer: nil, body: AppKeys.registration("alice"))),
            ("PUT", devices, AppKeys.put(d(4), bearer: alice, body: AppKeys.registration("mallory"))),
            // Device 20 was declared invalid after this older token was issued.
            ("PUT", devices, AppKeys.put(d(20), bearer: try await keys.bearer("alice", age: 600), body: AppKeys.registration("alice"))),
            ("PUT", devices, AppKeys.put(d(5), bearer: alice, body: Array(repeating: UInt8(ascii: " "), count: 20_000))),
            ("PUT", devices, AppKeys.put(d(6), bearer: alice, body: AppKeys.registration("alice"), contentType: "text/plain")),
            ("PUT", devices, AppKeys.put(d(7), bearer: alice, body: AppKeys.registration("alice", [("environment", "\"staging\"")]))),
            ("GET", devices, RawHTTP.request(method: "GET", path: "/v1/devices/\(d(1))", headers: [])),
            ("DELETE", devices, AppKeys.delete(d(1), bearer: alice)),
            ("DELETE", devices, AppKeys.delete(d(9), bearer: nil)),
            ("PUT", devices, AppKeys.put(d(10), bearer: alice, body: AppKeys.registration("alice"))),
            ("DELETE", devices, AppKeys.delete(d(10), bearer: bob)),
            ("DELETE", devices, AppKeys.delete(d(11), bearer: alice)),
            ("DELETE", devices, AppKeys.delete("abc", bearer: alice)),
        ]
        // Conversions, for alice (registered above) from her backend.
        let conversions = "/v1/conversions"
        exchanges += [
            ("POST", conversions, AppKeys.conversion(user: "alice", bearer: alice, key: "order-1")),
            ("POST", conversions, AppKeys.conversion(user: "alice", bearer: alice, key: "order-1")),
            ("POST", conversions, AppKeys.conversion(user: "alice", bearer: alice, key: "x", body: Array("{".utf8))),
            ("POST", conversions, AppKeys.conversion(user: "alice", bearer: nil, key: "order-2")),
            ("POST", conversions, AppKeys.conversion(user: "alice", bearer: bob, key: "order-3")),
            ("POST", conversions, AppKeys.conversion(user: "nobody", bearer: try await keys.bearer("nobody"), key: "order-4")),
            ("POST", conversions, AppKeys.conversion(user: "alice", bearer: alice, key: "x", body: Array(repeating: UInt8(ascii: " "), count: 5_000))),
            ("POST", conversions, AppKeys.conversion(user: "alice", bearer: alice, key: "order-5", contentType: "text/plain")),
            ("POST", conversions, AppKeys.conversion(user: "alice", bearer: alice, key: "order-6", event: "bad event")),
            ("GET", conversions, RawHTTP.request(method: "GET", path: conversions, headers: [])),
        ]
        // Live Activities (contract 10): devices 12…22 (not 20) registered for alice, at most three
        // requests each (the per-device limit), the fourth on 12, 16 and 21 over it.
        let starts = "/v1/devices/{token}/push-to-start/{attributes_type}"
        let activities = "/v1/devices/{token}/activities/{campaign}"
        func activityRequest(_ method: String, _ path: String, bearer: String?, body: [UInt8]? = nil,
                             contentType: String = "application/json") -> [UInt8] {
            var headers: [(String, String)] = body == nil ? [] : [("Content-Type", contentType)]
            if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
            return RawHTTP.request(method: method, path: path, headers: headers, body: body ?? [])
        }
        let pushToStart = Array(#"{"token": "\#(String(repeating: "e", count: 64))"}"#.utf8)
        let activity = { (step: Int) in Array(#"{"token": "\#(String(repeating: "d", count: 64))", "started_by": "push", "step": \#(step)}"#.utf8) }
        let sale = Self.saleID
        for n in [12, 13, 14, 15, 16, 17, 18, 19, 21, 22] { exchanges.append(("PUT", devices, AppKeys.put(d(n), bearer: alice, body: AppKeys.registration("alice")))) }
        let start = { (n: Int) in "/v1/devices/\(d(n))/push-to-start/HeraldSaleAttributes" }
        let act = { (n: Int, campaign: Int64) in "/v1/devices/\(d(n))/activities/\(campaign)" }
        exchanges += [
            ("PUT", starts, activityRequest("PUT", start(12), bearer: alice, body: pushToStart)),
            ("PUT", starts, activityRequest("PUT", start(12), bearer: alice, body: pushToStart)),
            ("PUT", starts, activityRequest("PUT", start(13), bearer: alice, body: Array("{".utf8))),
            ("PUT", starts, activityRequest("PUT", start(13), bearer: nil, body: pushToStart)),
            ("PUT", starts, activityRequest("PUT", "/v1/devices/\(d(14))/push-to-start/OtherAttributes", bearer: alice, body: pushToStart)),
            ("PUT", starts, activityRequest("PUT", start(14), bearer: alice, body: Array(#"{"token": "xyz"}"#.utf8))),
            ("PUT", starts, activityRequest("PUT", start(15), bearer: alice, body: Array(repeating: UInt8(ascii: " "), count: 2_000))),
            ("PUT", starts, activityRequest("PUT", start(15), bearer: alice, body: pushToStart, contentType: "text/plain")),
            ("PUT", starts, activityRequest("PUT", start(0x99), bearer: alice, body: pushToStart)),
            ("PUT", starts, activityRequest("PUT", start(12), bearer: alice, body: pushToStart)),
            ("PUT", activities, activityRequest("PUT", act(16, sale), bearer: alice, body: activity(0))),
            ("PUT", activities, activityRequest("PUT", act(16, sale), bearer: alice, body: activity(1))),
            ("PUT", activities, activityRequest("PUT", act(17, sale), bearer: alice, body: Array("{".utf8))),
            ("PUT", activities, activityRequest("PUT", act(17, sale), bearer: nil, body: activity(0))),
            ("PUT", activities, activityRequest("PUT", act(18, 424_242), bearer: alice, body: activity(0))),
            ("PUT", activities, activityRequest("PUT", act(18, sale), bearer: alice,
                                                body: Array(#"{"token": "\#(String(repeating: "d", count: 64))", "started_by": "user"}"#.utf8))),
            ("PUT", activities, activityRequest("PUT", act(19, sale), bearer: alice, body: Array(repeating: UInt8(ascii: " "), count: 2_000))),
            ("PUT", activities, activityRequest("PUT", act(19, sale), bearer: alice, body: activity(0), contentType: "text/plain")),
            ("PUT", activities, activityRequest("PUT", act(16, sale), bearer: alice, body: activity(2))),
            ("PUT", activities, activityRequest("PUT", act(21, sale), bearer: alice, body: activity(0))),
            ("DELETE", activities, activityRequest("DELETE", act(21, sale), bearer: alice)),
            ("DELETE", activities, activityRequest("DELETE", act(22, sale), bearer: alice)),
            ("DELETE", activities, activityRequest("DELETE", act(22, sale), bearer: nil)),
            ("DELETE", activities, activityRequest("DELETE", "/v1/devices/abc/activities/\(sale)", bearer: alice)),
            ("DELETE", activities, activityRequest("DELETE", act(21, sale), bearer: alice)),
        ]
        // Widget tokens (contract 10): devices 23…26, the fourth request about 23 over its limit.
        let widgets = "/v1/devices/{token}/widgets"
        let widget = { (n: Int) in "/v1/devices/\(d(n))/widgets" }
        for n in [23, 24, 25, 26] { exchanges.append(("PUT", devices, AppKeys.put(d(n), bearer: alice, body: AppKeys.registration("alice")))) }
        exchanges += [
            ("PUT", widgets, activityRequest("PUT", widget(23), bearer: alice, body: pushToStart)),
            ("PUT", widgets, activityRequest("PUT", widget(23), bearer: alice, body: pushToStart)),
            ("PUT", widgets, activityRequest("PUT", widget(24), bearer: alice, body: Array("{".utf8))),
            ("PUT", widgets, activityRequest("PUT", widget(24), bearer: nil, body: pushToStart)),
            ("PUT", widgets, activityRequest("PUT", widget(25), bearer: alice, body: Array(#"{"token": "xyz"}"#.utf8))),
            ("PUT", widgets, activityRequest("PUT", widget(25), bearer: alice, body: Array(repeating: UInt8(ascii: " "), count: 2_000))),
            ("PUT", widgets, activityRequest("PUT", widget(26), bearer: alice, body: pushToStart, contentType: "text/plain")),
            ("PUT", widgets, activityRequest("PUT", widget(0x98), bearer: alice, body: pushToStart)),
            ("PUT", widgets, activityRequest("PUT", widget(23), bearer: alice, body: pushToStart)),
        ]
        // The fourth request about device 8 is over its limit, for PUT and DELETE.
        exchanges += Array(repeating: ("PUT", devices, AppKeys.put(d(8), bearer: alice, body: AppKeys.registration("alice"))), count: 4)
        exchanges.append(("DELETE", devices, AppKeys.delete(d(8), bearer: alice)))

        // The address may make every request above, the two added below
        // (304s), the four of the set-up (the served document, device 20, two
        // ETags) and three more: then each read is answered 429.
        let limits: AppServerLimits = {
            var l = unlimited
            l.perDelivery = .init(3, per: .seconds(86_400))
            l.perDevice = .init(3, per: .seconds(86_400))
            l.perAddress = .init(exchanges.count + 2 + 4 + 3, per: .seconds(86_400))
            return l
        }()
        let listed = exchanges
        try await withIntakeDatabase { intake, db, _ in
            let registry = ProcessMetrics.registry()
            try await withServer(intake, app: keys.endpoints(db), limits: limits, metrics: { registry.emitToString() }) { port in
                var exchanges = listed
                // The served document is the one in the repository, and valid JSON.
                let served = try #require(try await RawHTTP.exchange(port: port, RawHTTP.request(method: "GET", path: "/v1/openapi.json", headers: [])))
                #expect(served.status == 200)
                #expect(served.body == OpenAPIDocument.bytes)
                let repository = try Data(contentsOf: TestDatabase.sqlDirectory.deletingLastPathComponent()
                    .appendingPathComponent("Sources/AppServer/openapi.json"))
                #expect(Array(repository) == served.body)
                let document = try StrictJSON.parse(served.body, limits: .init(maxDepth: 64))
                #expect(document["openapi"] == .string("3.1.0"))
                let checker = SchemaChecker(document: document)
                guard case .object(let paths)? = document["paths"] else {
                    Issue.record("no paths")
                    return
                }

                // A Live Activity sale the activity registrations name.
                try await db.exec("""
                    INSERT INTO campaigns (id, name, kind, status, content, category_id, expires_at, live_activity)
                    VALUES (\(Self.saleID), 'Sale', 'flash_sale', 'draft', '{"en": {"title": "t", "body": "b"}}', 'flash_sale.v1',
                            now() + interval '1 hour', '{"title": "Sale", "state": {"headline": "h", "price": "p"}}')
                    """)
                // Set-up (four requests): device 20 registered half an hour ago, then declared invalid by APNs.
                let registered = try await RawHTTP.exchange(port: port, AppKeys.put(
                    d(20), bearer: try await keys.bearer("alice", age: 1800, lifetime: 3600), body: AppKeys.registration("alice")))
                #expect(registered?.status == 201)
                try await db.exec("UPDATE devices SET invalidated_at = now() - interval '5 minutes', invalid_reason = 'Unregistered'")
                // 304 needs the ETag of a 200, per locale.
                let first = try await RawHTTP.exchange(port: port, RawHTTP.request(method: "GET", path: "/v1/notification-config", headers: []))
                let etag = try #require(first?.headers["etag"])
                exchanges.append(("GET", "/v1/notification-config", RawHTTP.request(method: "GET", path: "/v1/notification-config", headers: [("If-None-Match", etag)])))
                let french = try await RawHTTP.exchange(port: port, RawHTTP.request(method: "GET", path: "/v1/notification-config", headers: [("Accept-Language", "fr")]))
                #expect(french?.headers["content-language"] == "fr")
                let frenchTag = try #require(french?.headers["etag"])
                exchanges.append(("GET", "/v1/notification-config", RawHTTP.request(
                    method: "GET", path: "/v1/notification-config", headers: [("Accept-Language", "fr"), ("If-None-Match", "W/" + frenchTag)])))

                // Then the address's allowance runs out: 429 on each read.
                for path in ["/v1/notification-config", "/healthz", "/v1/openapi.json", "/metrics"] {
                    exchanges += Array(repeating: ("GET", path, RawHTTP.request(method: "GET", path: path, headers: [])), count: 12)
                }
                // A receipt and a conversion past the allowance too.
                exchanges.append(("POST", "/v1/conversions", AppKeys.conversion(user: "alice", bearer: alice, key: "late")))
                exchanges.append(("POST", "/v1/receipts", RawHTTP.request(path: "/v1/receipts", body: Array(#"{"receipts":[]}"#.utf8))))

                var seen: Set<String> = []
                var problems: [String] = []
                for (method, path, request) in exchanges {
                    guard let response = try await RawHTTP.exchange(port: port, request) else {
                        problems.append("\(method) \(path): no answer")
                        continue
                    }
                    let status = "\(response.status)"
                    let operation = paths[path]?[method.lowercased()]
                    var documented = operation?["responses"]?[status]
                    // Answers that belong to no operation: the document's shared responses.
                    if documented == nil {
                        let shared = ["404": "NotFound", "431": "HeadersTooLarge", "400": "Malformed", "405": "MethodNotAllowed"]
                        if let name = shared[status], operation == nil || status == "431" || status == "400" {
                            documented = .object(["$ref": .string("#/components/responses/\(name)")])
                        }
                    }
                    guard let documented else {
                        problems.append("\(method) \(path): \(status) is not documented")
                        continue
                    }
                    seen.insert("\(method) \(path) \(status)")
                    let response_ = checker.resolve(documented)
                    if let schema = response_["content"]?["application/json"]?["schema"] {
                        guard let json = try? StrictJSON.parse(response.body, limits: .init(maxDepth: 64)) else {
                            problems.append("\(method) \(path) \(status): body is not JSON")
                            continue
                        }
                        #expect(response.headers["content-type"] == "application/json")
                        problems += checker.problems(json, schema).map { "\(method) \(path) \(status): \($0)" }
                    } else if response_["content"]?["text/plain"] != nil {
                        #expect(response.headers["content-type"]?.hasPrefix("text/plain") == true)
                        do {
                            _ = try PrometheusExposition.parse(String(decoding: response.body, as: UTF8.self))
                        } catch {
                            problems.append("\(method) \(path) \(status): not Prometheus text: \(error)")
                        }
                    } else if !response.body.isEmpty {
                        problems.append("\(method) \(path) \(status): a body where the document has none")
                    }
                    guard case .object(let headers)? = response_["headers"] else { continue }
                    for (header, _) in headers where response.headers[header.lowercased()] == nil {
                        problems.append("\(method) \(path) \(status): no \(header) header")
                    }
                }
                // Every documented answer was produced, except the database being down.
                var missing: [String] = []
                for (path, item) in paths {
                    guard case .object(let operations) = item else { continue }
                    for (method, operation) in operations {
                        guard case .object(let responses)? = operation["responses"] else { continue }
                        for status in responses.keys where status != "503" {
                            if !seen.contains("\(method.uppercased()) \(path) \(status)"),
                               !(status == "405" && seen.contains { $0.hasSuffix(" \(path) 405") }) {
                                missing.append("\(method.uppercased()) \(path) \(status)")
                            }
                        }
                    }
                }
                #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
                #expect(missing.isEmpty, "documented but never answered: \(missing.sorted().joined(separator: ", "))")
            }
        }
    }
}
