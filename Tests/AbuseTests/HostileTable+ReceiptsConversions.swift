import AppServer
import Foundation
import HeraldCore

/// The hostile requests of `POST /v1/receipts` (contract 8) and `POST
/// /v1/conversions` (contract 9): malformed and lax JSON, wrong types,
/// missing and unknown fields, bad values, bodies over the limit, content
/// types, methods and framing. None may store a receipt or a conversion.
extension HostileTable {
    static let receiptConversionStatusOfCode: [String: Int] = [
        "malformed_json": 400, "malformed_http": 400, "bad_app_token": 401, "user_mismatch": 403, "unknown_user": 404,
        "method_not_allowed": 405, "body_too_large": 413, "unsupported_media_type": 415, "headers_too_large": 431,
        "bad_user": 422, "bad_event": 422, "bad_time": 422, "bad_amount": 422, "bad_currency": 422, "bad_idempotency_key": 422,
    ]

    /// Not JSON, or JSON with extras other parsers forgive, built from a valid body's text.
    static func laxBodies(_ good: [UInt8]) -> [(String, [UInt8])] {
        let text = String(decoding: good, as: UTF8.self)
        let open = String(text.dropLast())
        let cases: [(String, String)] = [
            ("trailing comma", open + ",}"), ("leading comma", "{," + String(text.dropFirst())), ("comment", "/* x */" + text),
            ("line comment", text + "// x"), ("trailing garbage", text + "x"), ("two objects", text + text), ("BOM", "\u{FEFF}" + text),
            ("single-quoted body", text.replacingOccurrences(of: "\"", with: "'")), ("empty", ""), ("spaces", "    "), ("null", "null"),
            ("array", "[" + text + "]"), ("string", "\"x\""), ("number", "1"), ("true", "true"), ("form encoded", "a=1&b=2"),
            ("NaN", open + ",\"x\":NaN}"), ("Infinity", open + ",\"x\":Infinity}"), ("unquoted key", open + ",x:1}"),
            ("lone surrogate escape", open + ",\"x\":\"\\ud800\"}"),
        ]
        var out = cases.map { ($0.0, Array($0.1.utf8)) }
        out.append(("raw invalid UTF-8 byte", Array(open.utf8) + Array(",\"x\":\"a".utf8) + [0xFF] + Array("\"}".utf8)))
        out.append(("raw NUL", Array(open.utf8) + Array(",\"x\":\"a".utf8) + [0x00] + Array("\"}".utf8)))
        for depth in [5, 50, 2000] {
            out.append(("arrays \(depth) deep", Array(repeating: UInt8(ascii: "["), count: depth) + Array(repeating: UInt8(ascii: "]"), count: depth)))
            out.append(("extra key nested \(depth) deep",
                        Array((open + ",\"x\":" + String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth) + "}").utf8)))
        }
        return out
    }

    /// Requests about content types, sizes, methods and framing of a POST endpoint.
    static func framing(_ label: String, path: String, good: [UInt8], limit: Int, headers auth: [(String, String)],
                        code: (String) -> Int?) -> [HostileCase] {
        var out: [HostileCase] = []
        func status(_ c: String) -> Int { code(c) ?? 0 }
        for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1",
                     "application/jsonp", "application/json5", "text/json", "application/xml", "*/*", "application/json;charset=utf-16"] {
            out.append(HostileCase(name: "\(label): content type \(type)",
                                   request: RawHTTP.request(path: path, headers: auth + [("Content-Type", type)], body: good),
                                   status: status("unsupported_media_type"), code: "unsupported_media_type"))
        }
        out.append(HostileCase(name: "\(label): no content type", request: RawHTTP.request(path: path, headers: auth, body: good),
                               status: status("unsupported_media_type"), code: "unsupported_media_type"))
        let json = auth + [("Content-Type", "application/json")]
        let big = String(repeating: "x", count: limit + 1)
        out.append(HostileCase(name: "\(label): body of \(limit + 1) spaces",
                               request: RawHTTP.request(path: path, headers: json, body: Array(repeating: UInt8(ascii: " "), count: limit + 1)),
                               status: status("body_too_large"), code: "body_too_large"))
        out.append(HostileCase(name: "\(label): a field over the limit",
                               request: RawHTTP.request(path: path, headers: json, body: Array(String(decoding: good.dropLast(), as: UTF8.self).utf8) + Array(",\"x\":\"\(big)\"}".utf8)),
                               status: status("body_too_large"), code: "body_too_large"))
        let head = json.map { "\($0.0): \($0.1)\r\n" }.joined()
        out.append(HostileCase(name: "\(label): chunked body over the limit",
                               request: Array("POST \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\(head)Transfer-Encoding: chunked\r\n\r\n\(String(big.count, radix: 16))\r\n\(big)\r\n0\r\n\r\n".utf8),
                               status: status("body_too_large"), code: "body_too_large"))
        for cut in [1, 10, good.count / 2] {
            out.append(HostileCase(name: "\(label): body cut at \(cut) then EOF",
                                   request: RawHTTP.request(path: path, headers: json, body: Array(good.prefix(cut)), contentLength: good.count),
                                   halfClose: true, status: 400, code: "malformed_http"))
        }
        out.append(HostileCase(name: "\(label): 20 kB header",
                               request: RawHTTP.request(path: path, headers: json + [("X-Big", String(repeating: "h", count: 20_000))], body: good),
                               status: 431, code: "headers_too_large"))
        out.append(HostileCase(name: "\(label): two content lengths",
                               request: Array("POST \(path) HTTP/1.1\r\nHost: x\r\n\(head)Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!".utf8),
                               status: 400, code: "malformed_http"))
        for method in ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"] {
            out.append(HostileCase(name: "\(label): \(method)", request: RawHTTP.request(method: method, path: path, headers: auth, body: method == "PUT" ? good : []),
                                   status: 405, code: "method_not_allowed"))
        }
        for sub in ["/1", "s", "/x/../1"] {
            out.append(HostileCase(name: "\(label): POST \(path)\(sub)", request: RawHTTP.request(path: path + sub, headers: json, body: good),
                                   status: 404, code: "not_found"))
        }
        return out
    }

    // MARK: receipts

    static func receiptCases() -> [HostileCase] {
        var out: [HostileCase] = []
        func post(_ name: String, _ body: [UInt8], _ code: String?, status: Int? = nil) -> HostileCase {
            let code = body.count > ReceiptRules.maxBodyBytes ? "body_too_large" : code
            return HostileCase(name: "receipts: \(name)", request: RawHTTP.request(path: "/v1/receipts", body: body),
                               status: status ?? code.flatMap { receiptConversionStatusOfCode[$0] } ?? 0, code: code)
        }
        func receipt(delivery: Int64 = 1, token: String? = nil, _ extra: [(String, [UInt8])] = []) -> [(String, [UInt8])] {
            var fields: [(String, [UInt8])] = [
                ("delivery", Array("\(delivery)".utf8)), ("token", Array(string(token ?? abuseTokens.token(delivery: delivery)).utf8)),
                ("arrived_at", Array(#""2026-11-20T10:00:03.250Z""#.utf8)), ("sealed_opened", Array("true".utf8)), ("media_attached", Array("false".utf8)),
            ]
            for (key, value) in extra {
                if let i = fields.firstIndex(where: { $0.0 == key }) { fields[i].1 = value } else { fields.append((key, value)) }
            }
            return fields
        }
        func body(_ receipts: [[(String, [UInt8])]]) -> [UInt8] {
            object([("receipts", Array("[".utf8) + Array(receipts.map(object).joined(separator: Array(",".utf8))) + Array("]".utf8))])
        }
        func with(_ key: String, _ value: String) -> [UInt8] { body([receipt([(key, Array(value.utf8))])]) }
        func without(_ key: String) -> [UInt8] { body([receipt().filter { $0.0 != key }]) }
        let good = body([receipt()])

        for cut in 0..<good.count {
            out.append(post("body cut at \(cut)", Array(good.prefix(cut)), "malformed_json"))
        }
        for (label, bytes) in laxBodies(good) {
            out.append(post(label, bytes, "malformed_json"))
        }
        // The shape: receipts must be a list of 1 to 50 objects.
        for (label, text) in [("no receipts key", "{}"), ("receipts null", #"{"receipts":null}"#), ("receipts an object", #"{"receipts":{}}"#),
                              ("receipts a string", #"{"receipts":"1"}"#), ("receipts a number", #"{"receipts":1}"#),
                              ("receipts empty", #"{"receipts":[]}"#), ("a receipt that is a number", #"{"receipts":[1]}"#),
                              ("a receipt that is null", #"{"receipts":[null]}"#), ("a receipt that is a list", #"{"receipts":[[]]}"#),
                              ("receipts nested list", #"{"receipts":[[{"delivery":1}]]}"#)] {
            out.append(post(label, Array(text.utf8), "malformed_json"))
        }
        out.append(post("51 receipts", body(Array(repeating: receipt(), count: 51)), "malformed_json"))
        out.append(post("unknown top-level key", object([("receipts", Array(String(decoding: good, as: UTF8.self).dropFirst(12).dropLast().utf8)), ("x", Array("1".utf8))]), "malformed_json"))
        out.append(post("duplicate receipts key", Array((String(decoding: good.dropLast(), as: UTF8.self) + #","receipts":[]}"#).utf8), "malformed_json"))
        for key in ["delivery", "token", "arrived_at", "sealed_opened"] {
            let first = receipt()
            guard let value = first.first(where: { $0.0 == key })?.1 else { continue }
            out.append(post("duplicate \(key)", body([first + [(key, value)]]), "malformed_json"))
        }
        // Wrong types, missing and unknown fields.
        for value in ["\"1\"", "1.0", "-0.0", "1e3", "01", "true", "null", "[]", "{}", "9223372036854775808", "-9223372036854775809",
                      "1e400", "123456789012345678901234567890", "\"١\""] {
            out.append(post("delivery \(value)", with("delivery", value), "malformed_json"))
        }
        for value in ["1", "true", "null", "[]", "{}", "\"\(String(repeating: "A", count: 129))\"", "\"a b\"", "\"a\\u0000b\"", "\"é\""] {
            out.append(post("token \(value.prefix(20))", with("token", value), "malformed_json"))
        }
        for value in ["1", "null", "true", "[]", "\"now\"", "\"\"", "\"2026-13-01T00:00:00Z\"", "\"2026-11-20\"", "\"0000-00-00T00:00:00Z\"",
                      "\"２026-11-20T10:00:00Z\"", "\"2026-11-20T10:00:00Z\\u0000\"", "\"\(String(repeating: "2", count: 100))\"", "\"'; DROP TABLE receipts; --\""] {
            out.append(post("arrived_at \(value.prefix(30))", with("arrived_at", value), "malformed_json"))
        }
        for key in ["sealed_opened", "media_attached"] {
            for value in ["\"true\"", "1", "0", "[]", "{}", "\"\""] {
                out.append(post("\(key) \(value)", with(key, value), "malformed_json"))
            }
        }
        for key in ["delivery", "token", "arrived_at"] {
            out.append(post("missing \(key)", without(key), "malformed_json"))
        }
        for key in ["extra", "Delivery", "__proto__", "", "reply_id", "text"] {
            out.append(post("unknown key \(StrictJSON.quote(key))", with(key, "1"), "malformed_json"))
        }
        for (label, bytes) in [("FF", [UInt8(0xFF)]), ("overlong /", [0xC0, 0xAF]), ("surrogate", [0xED, 0xA0, 0x80]), ("cut 3-byte", [0xE2, 0x82])] {
            for key in ["token", "arrived_at"] {
                out.append(post("invalid UTF-8 (\(label)) in \(key)", body([receipt([(key, Array("\"ab".utf8) + bytes + Array("cd\"".utf8))])]), "malformed_json"))
            }
        }
        for control: UInt8 in [0x00, 0x01, 0x1F] {
            out.append(post("raw control 0x\(String(control, radix: 16)) in token", body([receipt([("token", Array("\"a".utf8) + [control] + Array("b\"".utf8))])]), "malformed_json"))
        }
        // One bad receipt among good ones sinks the request when it is malformed.
        out.append(post("a malformed receipt after a good one", body([receipt(), receipt([("delivery", Array("\"2\"".utf8))])]), "malformed_json"))
        // Refused one by one: answered 200, listed, nothing stored.
        out.append(post("token of another secret", body([receipt(token: ReplyTokens(secret: .generate()).token(delivery: 1))]), nil, status: 200))
        out.append(post("token of delivery 2 on delivery 1", body([receipt(token: abuseTokens.token(delivery: 2))]), nil, status: 200))
        out.append(post("empty token", body([receipt(token: "")]), nil, status: 200))
        out.append(post("SQL token", body([receipt(token: "'OR'1'='1")]), nil, status: 200))
        out.append(post("unknown delivery", body([receipt(delivery: 999)]), nil, status: 200))
        out.append(post("arrived a day ahead", body([receipt([("arrived_at", Array(string(ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: 86_400))).utf8))])]), nil, status: 200))
        out.append(post("50 receipts, every one of another secret", body(Array(repeating: receipt(token: ReplyTokens(secret: .generate()).token(delivery: 3)), count: 50)), nil, status: 200))

        out += framing("receipts", path: "/v1/receipts", good: good, limit: ReceiptRules.maxBodyBytes, headers: []) { receiptConversionStatusOfCode[$0] }
        return out
    }

    // MARK: conversions

    static func conversionCases(keys: AppKeys) async throws -> [HostileCase] {
        var out: [HostileCase] = []
        let user = "eve"
        let bearer = try await keys.bearer(user, lifetime: 3600)
        let auth = [("Authorization", "Bearer \(bearer)")]
        func post(_ name: String, _ body: [UInt8], _ code: String, authorization: [(String, String)]? = nil) -> HostileCase {
            let code = body.count > ConversionRules.maxBodyBytes && code != "bad_app_token" ? "body_too_large" : code
            return HostileCase(name: "conversions: \(name)",
                               request: RawHTTP.request(path: "/v1/conversions", headers: (authorization ?? auth) + [("Content-Type", "application/json")], body: body),
                               status: receiptConversionStatusOfCode[code] ?? 0, code: code)
        }
        func fields(_ extra: [(String, String)] = []) -> [(String, [UInt8])] {
            var f: [(String, [UInt8])] = [
                ("user", Array(string(user).utf8)), ("event", Array("\"purchase\"".utf8)), ("occurred_at", Array(#""2026-11-20T10:00:00Z""#.utf8)),
                ("amount", Array("\"9.90\"".utf8)), ("currency", Array("\"EUR\"".utf8)), ("idempotency_key", Array(string("order-\(UUID())").utf8)),
            ]
            for (key, value) in extra {
                if let i = f.firstIndex(where: { $0.0 == key }) { f[i].1 = Array(value.utf8) } else { f.append((key, Array(value.utf8))) }
            }
            return f
        }
        func with(_ key: String, _ value: String) -> [UInt8] { object(fields([(key, value)])) }
        let good = object(fields())

        // The token is checked first: without a good one, nothing else is read.
        let forger = try await AppKeys.make()
        for (label, authorization) in [("no Authorization", [(String, String)]()), ("forged", [("Authorization", "Bearer " + (try await forger.bearer(user)))]),
                                       ("expired", [("Authorization", "Bearer " + (try await keys.bearer(user, age: 1200, lifetime: 600)))]),
                                       ("not a JWT", [("Authorization", "Bearer x.y.z")]), ("Basic", [("Authorization", "Basic ZXZlOnNlY3JldA==")])] {
            out.append(post("JWT \(label)", good, "bad_app_token", authorization: authorization))
            out.append(post("JWT \(label), malformed body", Array("{".utf8), "bad_app_token", authorization: authorization))
        }
        for cut in 0..<good.count {
            out.append(post("body cut at \(cut)", Array(good.prefix(cut)), "malformed_json"))
        }
        for (label, bytes) in laxBodies(good) {
            out.append(post(label, bytes, "malformed_json"))
        }
        for key in ["user", "event", "occurred_at", "idempotency_key", "amount"] {
            guard let value = fields().first(where: { $0.0 == key })?.1 else { continue }
            out.append(post("duplicate \(key)", object(fields() + [(key, value)]), "malformed_json"))
        }
        // Wrong types, missing and unknown fields.
        for key in ["user", "event", "occurred_at", "idempotency_key"] {
            for value in ["1", "true", "null", "[]", "{}", "1.5"] {
                out.append(post("\(key) as \(value)", with(key, value), "malformed_json"))
            }
            out.append(post("missing \(key)", object(fields().filter { $0.0 != key }), "malformed_json"))
        }
        for key in ["extra", "User", "__proto__", "", "amount_cents", "sub"] {
            out.append(post("unknown key \(StrictJSON.quote(key))", with(key, "1"), "malformed_json"))
        }
        for value in ["1e400", "123456789012345678901234567890", "9223372036854775808"] {
            out.append(post("amount \(value)", with("amount", value), "malformed_json"))
        }
        // Bad values: 422 naming the field.
        for value in ["\"\"", "\"\(String(repeating: "u", count: 201))\""] {
            out.append(post("user \(value.prefix(12))", with("user", value), "bad_user"))
        }
        for value in ["\"\"", "\"buy now\"", "\"\(String(repeating: "e", count: 101))\"", "\"purchase'; DROP TABLE conversions; --\"",
                      "\"<script>\"", "\"achat_ré\"", "\"a\\u0000\"", "\"a/b\""] {
            out.append(post("event \(value.prefix(20))", with("event", value), "bad_event"))
        }
        for value in ["\"now\"", "\"\"", "\"2026-13-01T00:00:00Z\"", "\"2026-11-20\"", "\"２026-11-20T10:00:00Z\"", "\"\(String(repeating: "2", count: 100))\""] {
            out.append(post("occurred_at \(value.prefix(20))", with("occurred_at", value), "bad_time"))
        }
        for value in ["\"-1\"", "\"1.234\"", "\"1e3\"", "\"\"", "\"1,50\"", "\"1234567890123\"", "\".5\"", "\"5.\"", "\"NaN\"", "\"١٢\"",
                      "1.5", "-1", "1234567890123", "true", "[]", "{}", "\" 1\""] {
            out.append(post("amount \(value)", with("amount", value), "bad_amount"))
        }
        for value in ["\"eur\"", "\"EURO\"", "\"E\"", "\"\"", "1", "true", "\"ÉUR\""] {
            out.append(post("currency \(value)", with("currency", value), "bad_currency"))
        }
        out.append(post("currency without an amount", object(fields().filter { $0.0 != "amount" }), "bad_currency"))
        out.append(post("currency with a null amount", with("amount", "null"), "bad_currency"))
        for value in ["\"\"", "\"a\\u0001b\"", "\"\(String(repeating: "k", count: 201))\"", "\"a\\nb\""] {
            out.append(post("idempotency_key \(value.prefix(12))", with("idempotency_key", value), "bad_idempotency_key"))
        }
        // A good token of another user: 403; a user never registered: 404.
        for other in ["mallory", "Eve", "eve ", "e\u{0301}ve", "eve' OR '1'='1"] {
            out.append(post("user \(StrictJSON.quote(other)) under eve's token", with("user", string(other)), "user_mismatch"))
        }
        let stranger = "stranger-\(UUID().uuidString.prefix(8))"
        out.append(post("a user no device registered", object(fields([("user", string(stranger))])), "unknown_user",
                        authorization: [("Authorization", "Bearer " + (try await keys.bearer(stranger)))]))

        out += framing("conversions", path: "/v1/conversions", good: good, limit: ConversionRules.maxBodyBytes, headers: auth) { receiptConversionStatusOfCode[$0] }
        return out
    }
}
