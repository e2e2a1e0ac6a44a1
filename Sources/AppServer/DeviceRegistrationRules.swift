import Foundation
import HeraldCore
import Hummingbird
import Store

extension AppServerError {
    /// 400 `malformed_json`: not strict JSON, not an object, a missing,
    /// unknown or mistyped field, a control character in an identifier.
    public static func malformed(_ message: String) -> Self {
        Self(status: .badRequest, code: "malformed_json", message: message)
    }

    /// 422: a well-formed value Herald cannot use; `code` names the field.
    public static func invalid(_ code: String, _ message: String) -> Self {
        Self(status: .unprocessableContent, code: code, message: message)
    }

    /// 401 `bad_app_token` with `WWW-Authenticate`; the message never holds the token.
    public static func unauthorized(_ message: String) -> Self {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = "Bearer realm=\"herald\""
        return Self(status: .unauthorized, code: "bad_app_token", message: message, headers: headers)
    }

    /// 403 `user_mismatch`.
    public static func userMismatch(_ message: String) -> Self {
        Self(status: .forbidden, code: "user_mismatch", message: message)
    }

    public static let unknownDevice = Self(status: .notFound, code: "unknown_device", message: "no such device token")

    /// 404 `unknown_app`: `?app=` names no app of the deployment.
    public static func unknownApp(_ name: String) -> Self {
        Self(status: .notFound, code: "unknown_app",
             message: "no app \(StrictJSON.quote(name, max: 64)) in this deployment; ?app= takes the name its operator gave it (herald apps list)")
    }

    public static let registrationDisabled = Self(
        status: .serviceUnavailable, code: "registration_disabled",
        message: "device registration is not configured: set HERALD_APP_JWT_PUBLIC_KEY")

    /// 503 `unavailable` for a registration the database did not take.
    public static func notStored(_ what: String) -> Self {
        var headers = HTTPFields()
        headers[.retryAfter] = "5"
        return Self(status: .serviceUnavailable, code: "unavailable", message: "\(what) could not be stored; retry later", headers: headers)
    }
}

/// The checks of contract 6 on `PUT /v1/devices/{token}`. The body is read
/// by ``StrictJSON`` as reply bodies are: valid UTF-8, no duplicate keys, no
/// trailing commas, bounded numbers and depth.
public enum DeviceRegistrationRules {
    public static let maxBodyBytes = 16 * 1024
    /// How deep `attributes` (and so the body) may nest.
    public static let maxDepth = 8
    /// The longest locale tag (BCP 47 advises 35 characters) and time zone name.
    public static let maxLocaleBytes = 35
    public static let maxTimeZoneBytes = 64
    static let fields: Set<String> = [
        "environment", "user", "locale", "time_zone", "app_version", "public_key", "key_id", "attributes",
        "marketing", "config_etag",
    ]

    /// The path's APNs token: 64 to 200 hex digits, stored lowercase.
    public static func token(_ text: String) throws(AppServerError) -> String {
        let lower = text.lowercased()
        guard (64...200).contains(lower.utf8.count),
              lower.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .invalid("bad_device_token", "the device token must be the APNs token as 64 (up to 200) hex digits")
        }
        return lower
    }

    /// Control characters (Unicode category Cc, and the line and paragraph
    /// separators): never part of an identifier.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}"
    }

    /// The shape of an IANA zone name (`Europe/Paris`, `Etc/GMT+5`, `UTC`):
    /// ASCII letters, digits, `_`, `-`, `+` in segments joined by `/`; no
    /// `.` or `..` segment, so nothing reads outside the zone database.
    static func isZoneName(_ name: String) -> Bool {
        guard (1...maxTimeZoneBytes).contains(name.utf8.count) else { return false }
        return name.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { segment in
            !segment.isEmpty && segment.first != "." && segment.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                    || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+")
            }
        }
    }

    static func containsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let s): s.unicodeScalars.contains("\u{0}")
        case .array(let items): items.contains(where: containsNUL)
        case .object(let members): members.contains { $0.key.unicodeScalars.contains("\u{0}") || containsNUL($0.value) }
        default: false
        }
    }

    /// Parses and checks a registration body for `token`: bad JSON, a field
    /// of the wrong type, a missing or unknown field, or a control character
    /// in an identifier is 400; a value Herald cannot use is 422 naming the field.
    public static func decode(_ bytes: some Collection<UInt8>, token: String) throws(AppServerError) -> DeviceRegistration {
        guard bytes.count <= maxBodyBytes else { throw .bodyTooLarge }
        let document: JSONValue
        do {
            document = try StrictJSON.parse(bytes, limits: .init(maxDepth: maxDepth))
        } catch {
            throw .malformed("the body is not valid JSON: \(error.description)")
        }
        guard case .object(let o) = document else {
            throw .malformed("the body is not a JSON object")
        }
        if let unknown = o.keys.sorted().first(where: { !fields.contains($0) }) {
            throw .malformed("unknown field \(StrictJSON.quote(unknown, max: 64)); the fields are \(fields.sorted().joined(separator: ", "))")
        }
        func string(_ name: String, required: Bool = false) throws(AppServerError) -> String? {
            switch o[name] {
            case nil, .null?:
                if required { throw .malformed("\"\(name)\" is missing") }
                return nil
            case .string(let s)?:
                if s.unicodeScalars.contains(where: isControl) {
                    throw .malformed("\"\(name)\" must not contain control characters")
                }
                return s
            case let v?: throw .malformed("\"\(name)\" must be a string, not \(v.typeName)")
            }
        }
        guard let environment = try string("environment", required: true).flatMap(APNsEnvironment.init(rawValue:)) else {
            throw .invalid("bad_environment", "\"environment\" must be production or sandbox")
        }
        let user = try string("user", required: true) ?? ""
        guard !user.isEmpty, user.utf8.count <= 256 else {
            throw .invalid("bad_user", "\"user\" must be the app's user id, 1 to 256 bytes")
        }
        let locale = try string("locale")
        if let locale, locale.utf8.count > maxLocaleBytes || !LocaleMatch.isTag(locale) {
            throw .invalid("bad_locale", "\"locale\" must be a BCP 47 tag such as en, fr-CA or zh-Hans (at most \(maxLocaleBytes) characters)")
        }
        let timeZone = try string("time_zone")
        if let timeZone, !isZoneName(timeZone) || TimeZone(identifier: timeZone) == nil {
            throw .invalid("bad_time_zone", "\"time_zone\" must be an IANA zone name such as Europe/Paris")
        }
        let appVersion = try string("app_version")
        if let appVersion, appVersion.isEmpty || appVersion.utf8.count > 64 {
            throw .invalid("bad_app_version", "\"app_version\" must be 1 to 64 bytes, such as 2.10.3")
        }
        var publicKey: String?
        var keyID = try string("key_id")
        if let text = try string("public_key") {
            do {
                let key = try DeviceKey(base64: text)
                publicKey = key.base64
                keyID = keyID ?? key.keyID
            } catch {
                throw .invalid("bad_public_key", "\"public_key\": \(error.description)")
            }
        }
        if let keyID {
            guard publicKey != nil else {
                throw .invalid("bad_key_id", "\"key_id\" names a key: send it with \"public_key\"")
            }
            guard (1...DeviceKeyLimits.maxKeyIDBytes).contains(keyID.utf8.count) else {
                throw .invalid("bad_key_id", "\"key_id\" must be 1 to \(DeviceKeyLimits.maxKeyIDBytes) bytes")
            }
        }
        var attributes: [String: JSONValue]?
        switch o["attributes"] {
        case nil, .null?: break
        case .object(let a)?:
            if let key = a.keys.first(where: { $0.unicodeScalars.contains(where: isControl) }) {
                throw .malformed("attribute names must not contain control characters: \(StrictJSON.quote(key, max: 40))")
            }
            if let key = a.keys.first(where: { $0.isEmpty || $0.utf8.count > 64 }) {
                throw .invalid("bad_attributes", "attribute names must be 1 to 64 bytes, not \(StrictJSON.quote(key, max: 40))")
            }
            // PostgreSQL's jsonb cannot hold U+0000.
            if a.values.contains(where: containsNUL) {
                throw .invalid("bad_attributes", "attribute values must not contain U+0000")
            }
            attributes = a
        case let v?: throw .malformed("\"attributes\" must be an object, not \(v.typeName)")
        }
        var marketing: Bool?
        switch o["marketing"] {
        case nil, .null?: break
        case .bool(let b)?: marketing = b
        case let v?: throw .malformed("\"marketing\" must be true or false, not \(v.typeName)")
        }
        let etag = try string("config_etag")
        if let etag, etag.isEmpty || etag.utf8.count > 128 {
            throw .invalid("bad_config_etag", "\"config_etag\" must be the ETag of /v1/notification-config, 1 to 128 bytes")
        }
        return DeviceRegistration(token: token, environment: environment, user: user, locale: locale, timeZone: timeZone,
                                  appVersion: appVersion, publicKey: publicKey, keyID: keyID, attributes: attributes,
                                  marketing: marketing, configETag: etag)
    }
}
