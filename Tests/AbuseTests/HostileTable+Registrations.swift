import AppServer
import Foundation
import HeraldCore

/// The hostile requests of device registration (`PUT`/`DELETE
/// /v1/devices/{token}`): bad device tokens, refused JWTs, a `sub` that is not
/// the body's user, malformed bodies of every kind replies are tested with,
/// overlong fields and bad values. None may store anything.
extension HostileTable {
    static let registrationStatusOfCode: [String: Int] = [
        "malformed_json": 400, "malformed_http": 400, "bad_app_token": 401, "user_mismatch": 403, "unknown_device": 404,
        "method_not_allowed": 405, "body_too_large": 413, "unsupported_media_type": 415, "headers_too_large": 431,
        "bad_device_token": 422, "bad_environment": 422, "bad_user": 422, "bad_locale": 422, "bad_time_zone": 422,
        "bad_app_version": 422, "bad_public_key": 422, "bad_key_id": 422, "bad_attributes": 422, "bad_config_etag": 422,
    ]

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func registrationCases(keys: AppKeys) async throws -> [HostileCase] {
        var out: [HostileCase] = []
        let user = "eve"
        let bearer = try await keys.bearer(user, lifetime: 3600)
        let device = AppKeys.device(0xE7E)
        func put(_ name: String, _ body: [UInt8], _ code: String, token: String = device, bearer auth: String? = bearer,
                 contentType: String? = "application/json") -> HostileCase {
            HostileCase(name: "PUT device: \(name)", request: AppKeys.put(token, bearer: auth, body: body, contentType: contentType),
                        status: registrationStatusOfCode[code] ?? 0, code: code)
        }
        func field(_ name: String, _ key: String, _ json: String, _ code: String) -> HostileCase {
            put(name, AppKeys.registration(user, [(key, json)]), code)
        }
        let good = AppKeys.registration(user)

        // Device tokens in the path that are not APNs tokens: 422 on PUT and DELETE.
        let hex64 = String(repeating: "0123456789abcdef", count: 4)
        for (label, token) in [("3 letters", "abc"), ("63 hex digits", String(hex64.dropLast())),
                               ("201 hex digits", String(repeating: "a", count: 201)), ("64 g", String(repeating: "g", count: 64)),
                               ("64 hex and a dash", hex64 + "-"), ("a dash inside", String(hex64.dropLast()) + "-"),
                               ("SQL", "1%27%20OR%201%3D1--"), ("script", "%3Cscript%3E"), ("spaces", hex64 + "%20%20"),
                               ("fullwidth digits, percent-encoded", String(repeating: "%EF%BC%90", count: 64)), ("0x prefix", "0x" + hex64),
                               ("base64", "q83vASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4k="), ("NUL", hex64 + "%00")] {
            out.append(put("path token \(label)", good, "bad_device_token", token: token))
            out.append(HostileCase(name: "DELETE device: path token \(label)", request: AppKeys.delete(token, bearer: bearer),
                                   status: 422, code: "bad_device_token"))
        }

        // App tokens Herald must refuse: 401 with the same answer on PUT and DELETE.
        let forger = try await AppKeys.make()
        let now = Date()
        func claims(sub: String = user, aud: String = "herald", iat: Date = now, lifetime: TimeInterval = 600) -> AppRegistrationClaims {
            var c = AppRegistrationClaims(user: sub, issuedAt: iat, lifetime: lifetime)
            c.aud = .init(value: [aud])
            return c
        }
        let parts = bearer.split(separator: ".").map(String.init)
        let iat = Int(now.timeIntervalSince1970)
        let payload = #"{"sub":"eve","aud":"herald","iat":\#(iat),"exp":\#(iat + 600)}"#
        let edIssuer = try await AppTokenIssuer(algorithm: .eddsa)
        var refused: [(String, String?)] = [
            ("no Authorization", nil),
            ("forged signature", "Bearer " + (try await forger.issuer.token(claims()))),
            ("EdDSA key not configured", "Bearer " + (try await edIssuer.token(claims()))),
            ("wrong aud", "Bearer " + (try await keys.issuer.token(claims(aud: "someone-else")))),
            ("aud of another case", "Bearer " + (try await keys.issuer.token(claims(aud: "Herald")))),
            ("expired", "Bearer " + (try await keys.issuer.token(claims(iat: now.addingTimeInterval(-1200), lifetime: 600)))),
            ("lives over an hour", "Bearer " + (try await keys.issuer.token(claims(lifetime: 7200)))),
            ("issued in the future", "Bearer " + (try await keys.issuer.token(claims(iat: now.addingTimeInterval(900))))),
            ("empty sub", "Bearer " + (try await keys.issuer.token(claims(sub: "")))),
            ("alg none", "Bearer " + base64URL(#"{"alg":"none","typ":"JWT"}"#) + "." + base64URL(payload) + "."),
            ("HS256 header on an ES256 signature", "Bearer " + base64URL(#"{"alg":"HS256","typ":"JWT"}"#) + "." + parts[1] + "." + parts[2]),
            ("payload changed to another user", "Bearer " + parts[0] + "." + base64URL(payload.replacingOccurrences(of: "eve", with: "mallory")) + "." + parts[2]),
            ("signature cut", "Bearer " + String(bearer.dropLast(8))),
            ("signature removed", "Bearer " + parts[0] + "." + parts[1] + "."),
            ("two segments", "Bearer " + parts[0] + "." + parts[1]),
            ("four segments", "Bearer " + bearer + ".AAAA"),
            ("not a JWT", "Bearer not-a-jwt"),
            ("empty bearer", "Bearer "),
            ("Basic scheme", "Basic ZXZlOnNlY3JldA=="),
            ("token without scheme", bearer),
            ("garbage base64", "Bearer %%%.###.!!!"),
            ("header not JSON", "Bearer " + base64URL("not json") + "." + parts[1] + "." + parts[2]),
            ("claims not JSON", "Bearer " + parts[0] + "." + base64URL("[1,2") + "." + parts[2]),
        ]
        refused.append(("no claims", "Bearer " + parts[0] + "." + base64URL("{}") + "." + parts[2]))
        for (label, authorization) in refused {
            var headers: [(String, String)] = [("Content-Type", "application/json")]
            if let authorization { headers.append(("Authorization", authorization)) }
            out.append(HostileCase(name: "PUT device: JWT \(label)",
                                   request: RawHTTP.request(method: "PUT", path: "/v1/devices/\(device)", headers: headers, body: good),
                                   status: 401, code: "bad_app_token"))
            out.append(HostileCase(name: "DELETE device: JWT \(label)",
                                   request: RawHTTP.request(method: "DELETE", path: "/v1/devices/\(device)", headers: Array(headers.dropFirst())),
                                   status: 401, code: "bad_app_token"))
        }

        // A valid token whose sub is not the body's user: 403.
        for other in ["mallory", "Eve", "EVE", "eve ", " eve", "eve\u{200B}", "e\u{0301}ve", "évè", "eve2", "<script>eve</script>", "eve' OR '1'='1"] {
            out.append(field("sub is not user \(StrictJSON.quote(other))", "user", string(other), "user_mismatch"))
        }

        // Every truncation of a valid body.
        let full = AppKeys.registration(user, [("app_version", "\"3.1\""), ("marketing", "true"), ("attributes", #"{"tier":"gold"}"#)])
        for cut in 0..<full.count {
            out.append(put("body cut at \(cut)", Array(full.prefix(cut)), "malformed_json"))
        }

        // Invalid UTF-8 and control characters in every string field.
        func raw(_ key: String, _ value: [UInt8]) -> [UInt8] {
            var fields: [(String, [UInt8])] = [("environment", Array("\"sandbox\"".utf8)), ("user", Array("\"eve\"".utf8))]
            if let i = fields.firstIndex(where: { $0.0 == key }) { fields[i].1 = value } else { fields.append((key, value)) }
            return object(fields)
        }
        let identifiers = ["environment", "user", "locale", "time_zone", "app_version", "key_id", "config_etag", "public_key"]
        for key in identifiers {
            for (label, bytes) in [("FF", [UInt8(0xFF)]), ("overlong /", [0xC0, 0xAF]), ("surrogate", [0xED, 0xA0, 0x80]), ("cut 3-byte", [0xE2, 0x82])] {
                out.append(put("invalid UTF-8 (\(label)) in \(key)", raw(key, Array("\"ab".utf8) + bytes + Array("cd\"".utf8)), "malformed_json"))
            }
            for control: UInt8 in [0x00, 0x01, 0x1F] {
                out.append(put("raw control 0x\(String(control, radix: 16)) in \(key)", raw(key, Array("\"a".utf8) + [control] + Array("b\"".utf8)), "malformed_json"))
            }
            for escape in ["\\u0000", "\\u0001", "\\n", "\\t", "\\u007f", "\\u0085", "\\u2028"] {
                let value = key == "user" ? "\"eve\(escape)\"" : key == "environment" ? "\"sandbox\(escape)\"" : "\"x\(escape)\""
                out.append(put("escaped \(escape) in \(key)", raw(key, Array(value.utf8)), "malformed_json"))
            }
        }

        // Duplicate keys, lax JSON, not an object.
        for (key, first, second) in [("user", "\"eve\"", "\"mallory\""), ("user", "\"eve\"", "\"eve\""), ("environment", "\"sandbox\"", "\"production\""),
                                     ("locale", "\"fr\"", "\"en\""), ("marketing", "true", "false"), ("time_zone", "\"UTC\"", "\"UTC\"")] {
            var fields: [(String, [UInt8])] = [("environment", Array("\"sandbox\"".utf8)), ("user", Array("\"eve\"".utf8))]
            if key != "user" && key != "environment" { fields.append((key, Array(first.utf8))) }
            fields.append((key, Array(second.utf8)))
            out.append(put("duplicate \(key) (\(second))", object(fields), "malformed_json"))
        }
        let goodText = String(decoding: good, as: UTF8.self)
        let open = String(goodText.dropLast())
        let nines = String(repeating: "9", count: 50)
        var lax: [(String, String)] = [("trailing comma", open + ",}"), ("leading comma", "{," + String(goodText.dropFirst()))]
        lax.append(("single quotes", goodText.replacingOccurrences(of: "\"user\"", with: "'user'")))
        lax.append(("unquoted key", goodText.replacingOccurrences(of: "\"user\"", with: "user")))
        lax += [("comment", "/* x */" + goodText), ("trailing garbage", goodText + "x"), ("two objects", goodText + goodText)]
        lax += [("BOM", "\u{FEFF}" + goodText), ("empty", ""), ("spaces", "    "), ("null", "null"), ("array", "[" + goodText + "]")]
        lax += [("string", "\"eve\""), ("number", "1"), ("empty object", "{}"), ("form encoded", "environment=sandbox&user=eve")]
        lax.append(("trailing comma in attributes", open + #","attributes":{"a":1,}}"#))
        lax.append(("NaN in attributes", open + #","attributes":{"a":NaN}}"#))
        lax.append(("huge number in attributes", open + #","attributes":{"a":1e400}}"#))
        lax.append(("long number in attributes", open + #","attributes":{"a":"# + nines + "}}"))
        lax.append(("lone surrogate in attributes", open + #","attributes":{"a":"\ud800"}}"#))
        for (label, text) in lax {
            out.append(put(label, Array(text.utf8), "malformed_json"))
        }
        for depth in [8, 50, 2000] {
            let nested = String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)
            out.append(field("attributes nested \(depth) deep", "attributes", nested, "malformed_json"))
            let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            out.append(field("arrays \(depth) deep in attributes", "attributes", "{\"a\":\(arrays)}", "malformed_json"))
        }

        // Wrong types, missing and unknown fields.
        for key in ["environment", "user", "locale", "time_zone", "app_version", "public_key", "key_id", "config_etag"] {
            for value in ["1", "true", "[]", "{}", "[\"x\"]"] {
                out.append(field("\(key) as \(value)", key, value, "malformed_json"))
            }
        }
        for value in ["1", "\"gold\"", "[]", "true"] {
            out.append(field("attributes as \(value)", "attributes", value, "malformed_json"))
        }
        for value in ["1", "\"no\"", "\"false\"", "[]", "{}", "0"] {
            out.append(field("marketing as \(value)", "marketing", value, "malformed_json"))
        }
        for key in ["environment", "user"] {
            let body = key == "user" ? Array(#"{"environment":"sandbox"}"#.utf8) : Array(#"{"user":"eve"}"#.utf8)
            out.append(put("missing \(key)", body, "malformed_json"))
            out.append(field("\(key) null", key, "null", "malformed_json"))
        }
        for key in ["timezone", "User", "token", "sub", "__proto__", "", "user "] {
            out.append(field("unknown field \(StrictJSON.quote(key))", key, "\"x\"", "malformed_json"))
        }

        // Content types, sizes and framing.
        for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1",
                     "application/jsonp", "text/json", "application/xml", "*/*"] {
            out.append(put("content type \(type)", good, "unsupported_media_type", contentType: type))
        }
        out.append(put("no content type", good, "unsupported_media_type", contentType: nil))
        let big = String(repeating: "x", count: 20_000)
        out.append(put("body of 20 kB", Array(repeating: UInt8(ascii: " "), count: 20_000), "body_too_large"))
        out.append(field("attribute of 20 kB", "attributes", "{\"a\":\"\(big)\"}", "body_too_large"))
        out.append(HostileCase(name: "PUT device: chunked body over 16 KiB",
                               request: Array("PUT /v1/devices/\(device) HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer \(bearer)\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4e20\r\n\(big)\r\n0\r\n\r\n".utf8),
                               status: 413, code: "body_too_large"))
        for cut in [1, 20, 40] {
            out.append(HostileCase(name: "PUT device: body cut at \(cut) then EOF",
                                   request: RawHTTP.request(method: "PUT", path: "/v1/devices/\(device)",
                                                            headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(bearer)")],
                                                            body: Array(good.prefix(cut)), contentLength: good.count),
                                   halfClose: true, status: 400, code: "malformed_http"))
        }
        out.append(HostileCase(name: "PUT device: 20 kB header",
                               request: RawHTTP.request(method: "PUT", path: "/v1/devices/\(device)", headers: [("X-Big", big)], body: good),
                               status: 431, code: "headers_too_large"))

        // Overlong and bad values: 422 naming the field.
        out.append(field("user of 257 bytes", "user", string(String(repeating: "u", count: 257)), "bad_user"))
        out.append(field("empty user", "user", "\"\"", "bad_user"))
        for env in ["staging", "Production", "SANDBOX", "", "sandbox ", "production\u{200B}", "prod"] {
            out.append(field("environment \(StrictJSON.quote(env))", "environment", string(env), "bad_environment"))
        }
        for locale in ["français!", "e", "english", "123", "en--US", "", "en-", "-en", "en US", "en-" + String(repeating: "abcdefgh-", count: 4) + "x",
                       "en-" + String(repeating: "a", count: 9), "zh-Hans\u{200B}", "<script>", "en;DROP TABLE users"] {
            out.append(field("locale \(StrictJSON.quote(locale))", "locale", string(locale), "bad_locale"))
        }
        for zone in ["Mars/Olympus", "", "Europe/../UTC", "../../etc/passwd", "/etc/localtime", "Europe//Paris", "Europe/Paris/",
                     "UTC+25", "Europe/Paris\u{200B}", "Europe/" + String(repeating: "P", count: 60), ".", "Europe/Pa ris", "%2e%2e/UTC"] {
            out.append(field("time zone \(StrictJSON.quote(zone))", "time_zone", string(zone), "bad_time_zone"))
        }
        out.append(field("app_version of 65 bytes", "app_version", string(String(repeating: "9", count: 65)), "bad_app_version"))
        out.append(field("empty app_version", "app_version", "\"\"", "bad_app_version"))
        out.append(field("config_etag of 129 bytes", "config_etag", string(String(repeating: "e", count: 129)), "bad_config_etag"))
        out.append(field("empty config_etag", "config_etag", "\"\"", "bad_config_etag"))
        let key32 = Data((0..<32).map { UInt8($0 &+ 9) }).base64EncodedString()
        for (label, key) in [("AAAA", "AAAA"), ("not base64", "not base64!"), ("31 bytes", Data(count: 31).base64EncodedString()),
                             ("33 bytes", Data(count: 33).base64EncodedString()), ("empty", ""), ("64 bytes", Data(count: 64).base64EncodedString()),
                             ("PEM", "-----BEGIN PUBLIC KEY-----"), ("base64url", key32.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") + "-_")] {
            out.append(field("public_key \(label)", "public_key", string(key), "bad_public_key"))
        }
        out.append(field("key_id without public_key", "key_id", "\"k\"", "bad_key_id"))
        out.append(put("empty key_id", AppKeys.registration(user, [("public_key", string(key32)), ("key_id", "\"\"")]), "bad_key_id"))
        out.append(put("key_id of 2000 bytes", AppKeys.registration(user, [("public_key", string(key32)), ("key_id", string(String(repeating: "k", count: 2000)))]), "bad_key_id"))
        out.append(field("attribute name of 65 bytes", "attributes", "{\"\(String(repeating: "n", count: 65))\":1}", "bad_attributes"))
        out.append(field("empty attribute name", "attributes", #"{"":1}"#, "bad_attributes"))
        out.append(field("U+0000 in an attribute value", "attributes", #"{"a":"x\u0000y"}"#, "bad_attributes"))
        out.append(field("U+0000 deep in an attribute value", "attributes", #"{"a":[{"b":"\u0000"}]}"#, "bad_attributes"))
        out.append(field("control character in an attribute name", "attributes", #"{"a\u0001":1}"#, "malformed_json"))

        // Methods the path does not have.
        for method in ["GET", "POST", "PATCH", "OPTIONS", "TRACE"] {
            out.append(HostileCase(name: "\(method) /v1/devices/{token}",
                                   request: RawHTTP.request(method: method, path: "/v1/devices/\(device)", headers: [], body: method == "POST" ? good : []),
                                   status: 405, code: "method_not_allowed"))
        }
        return out
    }
}
