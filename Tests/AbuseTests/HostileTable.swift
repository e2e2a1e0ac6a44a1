import ExtensionKit
import Foundation
import HeraldCore

/// One hostile request and what the server must answer: its status and, for a
/// refusal, its error code. `ingestCode` is the code `herald ingest` must give
/// the same bytes as a line (nil: not usable as a line).
struct HostileCase: Sendable {
    var name: String
    var request: [UInt8]
    var halfClose = false
    var status: Int
    var code: String?
    var body: [UInt8]? = nil
    var ingestCode: String? = nil
}

/// The generated table of the abuse suite: malformed and hostile requests
/// across every endpoint.
enum HostileTable {
    static func string(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// The fields of a valid reply as raw JSON texts, in order.
    static func fields(delivery: Int64, action: String, text: String? = nil, token: String? = nil) -> [(String, [UInt8])] {
        var f: [(String, [UInt8])] = [
            ("delivery", Array("\(delivery)".utf8)),
            ("token", Array(string(token ?? abuseTokens.token(delivery: delivery)).utf8)),
            ("action", Array(string(action).utf8)),
            ("occurred_at", Array(#""2026-11-20T10:00:00Z""#.utf8)),
            ("reply_id", Array(string(UUID().uuidString).utf8)),
        ]
        if let text { f.append(("text", Array(string(text).utf8))) }
        return f
    }

    static func object(_ fields: [(String, [UInt8])]) -> [UInt8] {
        var out: [UInt8] = Array("{".utf8)
        for (i, (key, value)) in fields.enumerated() {
            if i > 0 { out += Array(",".utf8) }
            out += Array(string(key).utf8) + Array(":".utf8) + value
        }
        return out + Array("}".utf8)
    }

    static func replacing(_ fields: [(String, [UInt8])], _ key: String, with value: [UInt8]) -> [(String, [UInt8])] {
        fields.map { $0.0 == key ? ($0.0, value) : $0 }
    }

    static let statusOfCode: [String: Int] = [
        "malformed_json": 400, "bad_token": 401, "unknown_delivery": 404, "body_too_large": 413,
        "action_not_allowed": 422, "text_not_allowed": 422, "text_too_long": 422, "text_invalid": 422,
    ]

    /// A POST /v1/replies of `body` that must be refused with `code`.
    static func post(_ name: String, _ body: [UInt8], _ code: String, ingest: Bool = true) -> HostileCase {
        let code = body.count > ReplyRules.maxBodyBytes ? "body_too_large" : code
        return HostileCase(name: name, request: RawHTTP.request(body: body), status: statusOfCode[code] ?? 0, code: code,
                    body: body, ingestCode: ingest ? code : nil)
    }

    static func cases() -> [HostileCase] {
        var out: [HostileCase] = []
        let poster = { fields(delivery: 1, action: "love_it") }
        let feedback = { fields(delivery: 2, action: "comment", text: "hello there") }

        // Every truncation of three valid bodies (a body cut anywhere is never valid JSON).
        for (label, base) in [("poster", object(poster())), ("feedback", object(feedback())),
                              ("opened", object(fields(delivery: 3, action: ReplyAction.defaultActionIdentifier)))] {
            for cut in 0..<base.count {
                out.append(post("truncated \(label) body at \(cut)", Array(base.prefix(cut)), "malformed_json", ingest: cut > 0))
            }
        }

        // Invalid UTF-8 in every string field.
        let badUTF8: [(String, [UInt8])] = [
            ("FF", [0xFF]), ("overlong /", [0xC0, 0xAF]), ("surrogate", [0xED, 0xA0, 0x80]), ("cut 3-byte", [0xE2, 0x82]),
            ("5-byte", [0xF8, 0x88, 0x80, 0x80, 0x80]), ("lone continuation", [0x80]), ("over U+10FFFF", [0xF4, 0x90, 0x80, 0x80]),
        ]
        for key in ["token", "action", "occurred_at", "reply_id", "text"] {
            for (label, bytes) in badUTF8 {
                let f = replacing(feedback(), key, with: Array("\"ab".utf8) + bytes + Array("cd\"".utf8))
                out.append(post("invalid UTF-8 (\(label)) in \(key)", object(f), "malformed_json"))
            }
        }

        // NUL and other control characters, raw and escaped.
        for key in ["token", "action", "occurred_at", "reply_id", "text"] {
            for raw: UInt8 in [0x00, 0x01, 0x1F, 0x08] {
                let f = replacing(feedback(), key, with: Array("\"a".utf8) + [raw] + Array("b\"".utf8))
                out.append(post("raw control 0x\(String(raw, radix: 16)) in \(key)", object(f), "malformed_json"))
            }
        }
        for key in ["token", "action", "occurred_at", "reply_id"] {
            for escape in ["\\u0000", "\\u0001", "\\n", "\\t", "\\u007f"] {
                let f = replacing(poster(), key, with: Array("\"love_it\(escape)\"".utf8))
                out.append(post("escaped \(escape) in \(key)", object(f), "malformed_json"))
            }
        }
        for escape in ["\\u0085", "\\u2028", "\\u2029", "\\u009b"] {
            let f = replacing(poster(), "action", with: Array("\"love\(escape)_it\"".utf8))
            out.append(post("escaped \(escape) in action", object(f), "malformed_json"))
        }
        out.append(post("NUL in text", object(replacing(feedback(), "text", with: Array(#""nul\u0000byte""#.utf8))), "text_invalid"))
        out.append(post("lone high surrogate escape in text", object(replacing(feedback(), "text", with: Array(#""a\ud800b""#.utf8))), "malformed_json"))
        out.append(post("lone low surrogate escape in text", object(replacing(feedback(), "text", with: Array(#""a\udc00b""#.utf8))), "malformed_json"))
        out.append(post("bad escape in text", object(replacing(feedback(), "text", with: Array(#""a\xb""#.utf8))), "malformed_json"))
        out.append(post("short \\u escape in text", object(replacing(feedback(), "text", with: Array(#""a\u12""#.utf8))), "malformed_json"))

        // Deep nesting.
        for depth in [5, 50, 1000, 5000] {
            let nested = Array(repeating: UInt8(ascii: "["), count: depth) + Array("1".utf8) + Array(repeating: UInt8(ascii: "]"), count: depth)
            out.append(post("delivery nested \(depth) deep", object(replacing(poster(), "delivery", with: nested)), "malformed_json"))
            let objects = Array(String(repeating: "{\"a\":", count: depth).utf8) + Array("1".utf8) + Array(repeating: UInt8(ascii: "}"), count: depth)
            out.append(post("extra key nested \(depth) deep", object(poster() + [("x", objects)]), "malformed_json"))
            out.append(post("body of arrays \(depth) deep", Array(repeating: UInt8(ascii: "["), count: depth), "malformed_json"))
        }

        // Duplicate keys: the same value and another one.
        for (key, other) in [("delivery", "3"), ("token", string(abuseTokens.token(delivery: 3))), ("action", "\"dont_care\""),
                             ("occurred_at", "\"2026-11-21T10:00:00Z\""), ("reply_id", string(UUID().uuidString)),
                             ("text", "\"other\"")] {
            let base = feedback()
            guard let value = base.first(where: { $0.0 == key })?.1 else { continue }
            out.append(post("duplicate \(key), same value", object(base + [(key, value)]), "malformed_json"))
            out.append(post("duplicate \(key), other value", object(base + [(key, Array(other.utf8))]), "malformed_json"))
        }

        // Not JSON, or JSON with extras other parsers forgive.
        let valid = object(poster())
        let validText = String(decoding: valid, as: UTF8.self)
        let lax: [(String, String)] = [
            ("trailing comma in object", String(validText.dropLast()) + ",}"),
            ("trailing comma and space", String(validText.dropLast()) + ", }"),
            ("leading comma", "{," + validText.dropFirst()),
            ("double comma", validText.replacingOccurrences(of: ",\"token\"", with: ",,\"token\"")),
            ("missing comma", validText.replacingOccurrences(of: ",\"token\"", with: " \"token\"")),
            ("single quotes", validText.replacingOccurrences(of: "\"action\"", with: "'action'")),
            ("unquoted key", validText.replacingOccurrences(of: "\"action\"", with: "action")),
            ("block comment", "/* hi */" + validText),
            ("line comment", validText + "// hi"),
            ("trailing garbage", validText + "x"),
            ("two objects", validText + validText),
            ("BOM", "\u{FEFF}" + validText),
            ("trailing comma in array", validText.replacingOccurrences(of: "\"delivery\":1", with: "\"delivery\":[1,]")),
            ("NaN", validText.replacingOccurrences(of: "\"delivery\":1", with: "\"delivery\":NaN")),
            ("Infinity", validText.replacingOccurrences(of: "\"delivery\":1", with: "\"delivery\":Infinity")),
            ("hex number", validText.replacingOccurrences(of: "\"delivery\":1", with: "\"delivery\":0x1")),
            ("plus sign", validText.replacingOccurrences(of: "\"delivery\":1", with: "\"delivery\":+1")),
            ("leading zero", validText.replacingOccurrences(of: "\"delivery\":1", with: "\"delivery\":01")),
            ("bare dot", validText.replacingOccurrences(of: "\"delivery\":1", with: "\"delivery\":.5")),
            ("True", validText.replacingOccurrences(of: "\"delivery\":1", with: "\"delivery\":True")),
            ("empty", ""), ("space", "   x"), ("null", "null"), ("true", "true"), ("number", "1"), ("string", "\"x\""),
            ("array", "[]"), ("array of the object", "[" + validText + "]"), ("empty object", "{}"),
            ("form encoded", "delivery=1&token=x&action=love_it"), ("XML", "<reply><delivery>1</delivery></reply>"),
        ]
        for (label, text) in lax {
            out.append(post(label, Array(text.utf8), "malformed_json", ingest: !text.isEmpty))
        }

        // Numbers too big, too precise, or not integers.
        for number in ["1e400", "-1e400", "1e308", "1E+2", "1e2", "1.0", "1.5", "0.0000001", "99999999999999999999",
                       "9223372036854775808", "-9223372036854775809", "123456789012345678901234567890",
                       "1e99999999999999", "-0.0"] {
            out.append(post("delivery \(number)", object(replacing(poster(), "delivery", with: Array(number.utf8))), "malformed_json"))
        }
        for number in ["9223372036854775807", "-9223372036854775808", "0", "-0", "-1"] {
            out.append(post("delivery \(number) with delivery 1's token", object(replacing(poster(), "delivery", with: Array(number.utf8))), "bad_token"))
        }

        // Wrong types.
        let values = ["1", "true", "false", "null", "[]", "{}", "\"1\"", "[\"love_it\"]", "{\"v\":1}"]
        for key in ["delivery", "token", "action", "occurred_at", "reply_id", "text"] {
            for value in values {
                let isString = value.hasPrefix("\"")
                if key == "delivery" && value == "1" { continue }
                if key != "delivery" && isString { continue }
                if key == "text" && value == "null" { continue }  // text: null means no text
                out.append(post("\(key) as \(value)", object(replacing(feedback(), key, with: Array(value.utf8))), "malformed_json"))
            }
        }
        for key in ["delivery", "token", "action", "occurred_at", "reply_id"] {
            out.append(post("missing \(key)", object(poster().filter { $0.0 != key }), "malformed_json"))
        }
        for key in ["extra", "__proto__", "Delivery", "reply_ID", ""] {
            out.append(post("unknown key \(StrictJSON.quote(key))", object(poster() + [(key, Array("1".utf8))]), "malformed_json"))
        }

        // Lengths, counted as the database counts them.
        let combining = "e" + String(repeating: "\u{0301}", count: 2000)  // 1 Character, 2001 code points
        let combiningMore = "a" + String(repeating: "\u{0308}", count: 5000)
        let flags = String(repeating: "🇫🇷", count: 1001)  // 1001 Characters, 2002 code points
        for (label, text) in [("a letter and 2000 combining marks", combining), ("a letter and 5000 combining marks", combiningMore),
                              ("1001 flags", flags), ("2001 CJK", String(repeating: "字", count: 2001)),
                              ("2001 ASCII", String(repeating: "x", count: 2001))] {
            out.append(post("text of \(label)", object(replacing(feedback(), "text", with: Array(string(text).utf8))), "text_too_long"))
        }
        out.append(post("text of 20000 bytes", object(replacing(feedback(), "text", with: Array(string(String(repeating: "x", count: 20_000)).utf8))), "body_too_large"))
        out.append(post("text of 7000 combining marks (over 16 KiB)", object(replacing(feedback(), "text", with: Array(string("e" + String(repeating: "\u{0301}", count: 9000)).utf8))), "body_too_large"))
        out.append(post("action of 201 bytes", object(replacing(poster(), "action", with: Array(string(String(repeating: "a", count: 201)).utf8))), "malformed_json"))
        out.append(post("action of 200 bytes", object(replacing(poster(), "action", with: Array(string(String(repeating: "a", count: 200)).utf8))), "action_not_allowed"))
        out.append(post("empty action", object(replacing(poster(), "action", with: Array("\"\"".utf8))), "malformed_json"))
        out.append(post("token of 129 bytes", object(replacing(poster(), "token", with: Array(string(String(repeating: "A", count: 129)).utf8))), "malformed_json"))
        out.append(post("token of 128 bytes", object(replacing(poster(), "token", with: Array(string(String(repeating: "A", count: 128)).utf8))), "bad_token"))
        out.append(post("occurred_at of 100 bytes", object(replacing(poster(), "occurred_at", with: Array(string(String(repeating: "2", count: 100)).utf8))), "malformed_json"))
        out.append(post("reply_id of 100 bytes", object(replacing(poster(), "reply_id", with: Array(string(String(repeating: "a", count: 100)).utf8))), "malformed_json"))

        // Unicode that looks like something else, or normalizes to it.
        for action in ["ｌｏｖｅ＿ｉｔ", "love_i\u{0301}t", "LOVE_IT", "love\u{200B}_it", "love_it\u{FEFF}", "lοve_it" /* Greek omicron */,
                       "com.apple.UNNotificationDefaultActionIdentifier\u{0301}", "ℓove_it", "love_it "] {
            out.append(post("action \(StrictJSON.quote(action))", object(replacing(poster(), "action", with: Array(string(action).utf8))), "action_not_allowed"))
        }
        out.append(post("reply_id in fullwidth digits", object(replacing(poster(), "reply_id", with: Array(string("６F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5F").utf8))), "malformed_json"))
        out.append(post("occurred_at in fullwidth digits", object(replacing(poster(), "occurred_at", with: Array(string("２026-11-20T10:00:00Z").utf8))), "malformed_json"))
        out.append(post("token with a homoglyph", object(replacing(poster(), "token", with: Array(string("А" + abuseTokens.token(delivery: 1).dropFirst()).utf8))), "malformed_json"))
        out.append(post("delivery in Arabic-Indic digits", object(replacing(poster(), "delivery", with: Array("١".utf8))), "malformed_json"))

        // SQL and script lookalikes.
        for action in ["love_it'; DROP TABLE replies; --", "' OR '1'='1", "<script>alert(1)</script>", "${jndi:ldap://127.0.0.1/x}",
                       "{{7*7}}", "../../etc/passwd", "love_it\" OR 1=1", "%00", "love_it%27", "); DELETE FROM campaigns; --"] {
            out.append(post("action \(StrictJSON.quote(action))", object(replacing(poster(), "action", with: Array(string(action).utf8))), "action_not_allowed"))
        }
        out.append(post("token SQL", object(replacing(poster(), "token", with: Array(string("'OR'1'='1").utf8))), "bad_token"))
        out.append(post("token SQL with spaces", object(replacing(poster(), "token", with: Array(string("1; DROP TABLE replies").utf8))), "malformed_json"))
        out.append(post("reply_id SQL", object(replacing(poster(), "reply_id", with: Array(string("'; DROP TABLE replies; --").utf8))), "malformed_json"))
        out.append(post("occurred_at now()", object(replacing(poster(), "occurred_at", with: Array(string("now()").utf8))), "malformed_json"))
        out.append(post("occurred_at year 0", object(replacing(poster(), "occurred_at", with: Array(string("0000-00-00T00:00:00Z").utf8))), "malformed_json"))
        out.append(post("occurred_at month 13", object(replacing(poster(), "occurred_at", with: Array(string("2026-13-01T00:00:00Z").utf8))), "malformed_json"))
        out.append(post("text SQL on a button", object(poster() + [("text", Array(string("'); DROP TABLE replies; --").utf8))]), "text_not_allowed"))
        out.append(post("text script on a button", object(poster() + [("text", Array(string("<script>alert(1)</script>").utf8))]), "text_not_allowed"))
        out.append(post("text script, token of another delivery", object(fields(delivery: 2, action: "comment", text: "<img src=x onerror=alert(1)>", token: abuseTokens.token(delivery: 1))), "bad_token"))

        // Tokens and deliveries that do not match.
        out.append(post("token of delivery 2 on delivery 1", object(fields(delivery: 1, action: "love_it", token: abuseTokens.token(delivery: 2))), "bad_token"))
        out.append(post("token of another secret", object(fields(delivery: 1, action: "love_it", token: ReplyTokens(secret: .generate()).token(delivery: 1))), "bad_token"))
        out.append(post("token cut short", object(fields(delivery: 1, action: "love_it", token: String(abuseTokens.token(delivery: 1).dropLast()))), "bad_token"))
        out.append(post("empty token", object(fields(delivery: 1, action: "love_it", token: "")), "bad_token"))
        for delivery: Int64 in [4, 999, 1_000_000, Int64.max] {
            out.append(post("unknown delivery \(delivery)", object(fields(delivery: delivery, action: "love_it")), "unknown_delivery"))
        }
        out.append(post("action of another category", object(fields(delivery: 1, action: "reserve")), "action_not_allowed"))
        out.append(post("text where none is allowed", object(fields(delivery: 1, action: "love_it", text: "hi")), "text_not_allowed"))
        out.append(post("text on the default action", object(fields(delivery: 3, action: ReplyAction.defaultActionIdentifier, text: "hi")), "text_not_allowed"))

        // HTTP: content types.
        let body = object(poster())
        for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                     "application/json; charset=latin1", "application/jsonp", "application/json5", "text/json",
                     "application/xml", "*/*", "application/json, text/plain", "application/json;charset=utf-16"] {
            out.append(HostileCase(name: "content type \(type)", request: RawHTTP.request(headers: [("Content-Type", type)], body: object(poster())),
                                   status: 415, code: "unsupported_media_type"))
        }
        out.append(HostileCase(name: "no content type", request: RawHTTP.request(headers: [], body: body), status: 415, code: "unsupported_media_type"))
        out.append(HostileCase(name: "content type with an invalid UTF-8 header beside it",
                               request: RawHTTP.request(headers: [("Content-Type", "text/plain")], body: body,
                                                        extraHeaderBytes: Array("X-Bad: ".utf8) + [0xFF, 0xFE] + Array("\r\n".utf8)),
                               status: 415, code: "unsupported_media_type"))

        // HTTP: methods and paths.
        for (path, allowed) in [("/v1/replies", "POST"), ("/v1/notification-config", "GET"), ("/healthz", "GET"), ("/v1/openapi.json", "GET")] {
            for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND"] where method != allowed {
                out.append(HostileCase(name: "\(method) \(path)", request: RawHTTP.request(method: method, path: path, headers: [], body: method == "POST" ? body : []),
                                       status: 405, code: "method_not_allowed"))
            }
        }
        for path in ["/", "/v1", "/v1/", "/v1/replies/1", "/v1/reply", "/admin", "/v2/replies", "/healthz/x", "/V1/REPLIES",
                     "/v1/replies%00", "/%2e%2e/%2e%2e/etc/passwd", "/v1/openapi.yaml", "/.env", "/v1/notification-config/../replies2",
                     "/%ff%fe", "/" + String(repeating: "a", count: 4000)] {
            for method in ["GET", "POST"] {
                out.append(HostileCase(name: "\(method) \(path.prefix(40))", request: RawHTTP.request(method: method, path: path, headers: [], body: method == "POST" ? body : []),
                                       status: 404, code: "not_found"))
            }
        }

        // HTTP: heads over the limit, bytes that are not HTTP, bodies that lie.
        let big = String(repeating: "x", count: 20_000)
        for path in ["/v1/replies", "/v1/notification-config", "/healthz"] {
            out.append(HostileCase(name: "20 kB header on \(path)",
                                   request: RawHTTP.request(method: path == "/v1/replies" ? "POST" : "GET", path: path, headers: [("X-Big", big)], body: path == "/v1/replies" ? body : []),
                                   status: 431, code: "headers_too_large"))
            out.append(HostileCase(name: "300 headers of 100 bytes on \(path)",
                                   request: RawHTTP.request(method: "GET", path: path, headers: (0..<300).map { ("X-H\($0)", String(repeating: "y", count: 100)) }),
                                   status: 431, code: "headers_too_large"))
            out.append(HostileCase(name: "20 kB path query on \(path)",
                                   request: RawHTTP.request(method: "GET", path: path + "?q=" + big, headers: []),
                                   status: 431, code: "headers_too_large"))
        }
        for (label, raw) in [("garbage", "GARBAGE\r\n\r\n"), ("space in header name", "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n"),
                             ("NUL in header value", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n"),
                             ("bad content length", "POST /v1/replies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n"),
                             ("negative content length", "POST /v1/replies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: -5\r\n\r\n"),
                             ("two content lengths", "POST /v1/replies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
                             ("content length and chunked", "POST /v1/replies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                             ("bad chunk size", "POST /v1/replies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
                             ("HTTP/2 preface on HTTP/1", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
                             ("control character in the path", "GET /heal\u{1}thz HTTP/1.1\r\nHost: x\r\n\r\n")] {
            out.append(HostileCase(name: "malformed HTTP: \(label)", request: Array(raw.utf8), status: 400, code: "malformed_http"))
        }
        for cut in [1, 10, 50, 100] {
            out.append(HostileCase(name: "body cut at \(cut) of \(body.count) then EOF",
                                   request: RawHTTP.request(body: Array(body.prefix(cut)), contentLength: body.count), halfClose: true,
                                   status: 400, code: "malformed_http"))
        }
        out.append(HostileCase(name: "chunked body over 16 KiB",
                               request: Array("POST /v1/replies HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4e20\r\n\(big)\r\n0\r\n\r\n".utf8),
                               status: 413, code: "body_too_large"))
        out.append(HostileCase(name: "Content-Length over 16 KiB",
                               request: RawHTTP.request(body: Array(big.utf8)), status: 413, code: "body_too_large"))

        // Hostile but harmless reads: answered as documented, nothing stored.
        for (label, headers, path) in [("SQL in the query", [(String, String)](), "/healthz?id=1%27%20OR%201=1--"),
                                       ("garbage If-None-Match", [("If-None-Match", "\"'; DROP TABLE actions; --\"")], "/v1/notification-config"),
                                       ("spoofed X-Forwarded-For", [("X-Forwarded-For", "1.2.3.4, <script>")], "/healthz"),
                                       ("script in the query", [], "/v1/openapi.json?x=<script>")] {
            out.append(HostileCase(name: label, request: RawHTTP.request(method: "GET", path: path, headers: headers), status: 200, code: nil))
        }
        return out
    }
}
