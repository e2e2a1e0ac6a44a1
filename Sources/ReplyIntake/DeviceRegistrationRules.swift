import Foundation
import HeraldCore
import Store

/// A refused app request: an HTTP status, a stable code and a message for
/// the app developer (`{"error": code, "message": text}`, as in contract 4).
/// The message never holds a token, a key or the JWT.
public struct AppAPIError: Error, Hashable, Sendable, CustomStringConvertible {
    public let status: Int
    public let code: String
    public let message: String

    public init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public var description: String { "\(status) \(code): \(message)" }

    public static func malformed(_ message: String) -> Self { Self(status: 400, code: "malformed_json", message: message) }
    public static func invalid(_ code: String, _ message: String) -> Self { Self(status: 422, code: code, message: message) }
    public static func unauthorized(_ message: String) -> Self { Self(status: 401, code: "bad_app_token", message: message) }
    public static let tooLarge = Self(status: 413, code: "body_too_large",
                                      message: "the body is larger than \(DeviceRegistrationRules.maxBodyBytes) bytes")

    /// The JSON error body.
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 160)
        w.raw("{\"error\":")
        w.string(code)
        w.raw(",\"message\":")
        w.string(message)
        w.raw("}")
        return w.bytes
    }
}

/// The checks of contract 6 on `PUT /v1/devices/{token}`.
public enum DeviceRegistrationRules {
    public static let maxBodyBytes = 16 * 1024
    static let fields: Set<String> = [
        "environment", "user", "locale", "time_zone", "app_version", "public_key", "key_id", "attributes",
        "marketing", "config_etag",
    ]

    /// The path's APNs token: 64 to 200 hex digits, stored lowercase.
    public static func token(_ text: String) throws(AppAPIError) -> String {
        let lower = text.lowercased()
        guard (64...200).contains(lower.utf8.count),
              lower.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .invalid("bad_device_token", "the device token must be the APNs token as 64 (up to 200) hex digits")
        }
        return lower
    }

    /// Parses and checks a registration body for `token`: a field of the
    /// wrong type, a missing field, an unknown field or bad JSON is 400; a
    /// value Herald cannot use is 422 naming the field.
    public static func decode(_ bytes: some DataProtocol, token: String) throws(AppAPIError) -> DeviceRegistration {
        guard bytes.count <= maxBodyBytes else { throw .tooLarge }
        guard case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            throw .malformed("the body is not a JSON object")
        }
        if let unknown = o.keys.sorted().first(where: { !fields.contains($0) }) {
            throw .malformed("unknown field \"\(unknown.prefix(64))\"; the fields are \(fields.sorted().joined(separator: ", "))")
        }
        func string(_ name: String, required: Bool = false) throws(AppAPIError) -> String? {
            switch o[name] {
            case nil, .null?:
                if required { throw .malformed("\"\(name)\" is missing") }
                return nil
            case .string(let s)?: return s
            case let v?: throw .malformed("\"\(name)\" must be a string, not \(v.typeName)")
            }
        }
        let environment = try string("environment", required: true) ?? ""
        guard environment == "production" || environment == "sandbox" else {
            throw .invalid("bad_environment", "\"environment\" must be production or sandbox")
        }
        let user = try string("user", required: true) ?? ""
        guard !user.isEmpty, user.utf8.count <= 256 else {
            throw .invalid("bad_user", "\"user\" must be the app's user id, 1 to 256 bytes")
        }
        let locale = try string("locale")
        if let locale, !LocaleMatch.isTag(locale) {
            throw .invalid("bad_locale", "\"locale\" must be a BCP 47 tag such as en, fr-CA or zh-Hans")
        }
        let timeZone = try string("time_zone")
        if let timeZone, TimeZone(identifier: timeZone) == nil || timeZone.isEmpty {
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
        case .object(let a)?: attributes = a
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
