import APNs
import Foundation
import Store

/// What `herald apps list` and `herald config check` say of the apps: each
/// app's topic and registration keys, and each credential (read from its
/// files, so a certificate's expiry and a file that cannot be used show).
public enum AppsReport {
    public static func lines(_ apps: [AppRecord], defaultTopic: String, now: Date) -> [String] {
        var out: [String] = []
        for app in apps {
            let topic = app.topic ?? "\(defaultTopic) (APNS_TOPIC)"
            var keys = "\(app.registrationKeys.count) registration key\(app.registrationKeys.count == 1 ? "" : "s")"
            if app.name == AppRecord.defaultName { keys += " (and HERALD_APP_JWT_PUBLIC_KEY)" }
            out.append("app \(app.name) \"\(app.displayName)\": topic \(topic), \(keys)")
            if app.credentials.isEmpty {
                out.append(app.name == AppRecord.defaultName
                    ? "  credential: the APNS_* settings"
                    : "  no APNs credential: its campaigns fail until one is added (herald apps add-credential)")
            }
            for record in app.credentials {
                let uses = app.current.filter { $0.value == record.name }.keys.map(\.rawValue).sorted()
                let state = record.retired ? "retired" : uses.isEmpty ? "not in use" : "in use for \(uses.joined(separator: ", "))"
                let what: String
                do {
                    let credential = try AppCredentials.load(record)
                    what = AppCredentials.summary(credential, now: now)
                        + (warning(credential, now: now).map { "; WARNING: \($0)" } ?? "")
                } catch {
                    what = "UNUSABLE: \(error)"
                }
                out.append("  credential \(record.qualifiedName) [\(record.environment); \(state)]: \(what)")
            }
        }
        return out
    }

    /// A certificate that expires within 30 days, or has.
    public static func warning(_ credential: APNsCredential, now: Date) -> String? {
        guard case .certificate(let c) = credential, c.expiresWithin(AppCredentials.expiryWarning, of: now) else { return nil }
        return c.isExpired(at: now) ? "the certificate has expired; its app's campaigns fail until it is replaced"
                                    : "the certificate expires within 30 days; add its successor"
    }
}
