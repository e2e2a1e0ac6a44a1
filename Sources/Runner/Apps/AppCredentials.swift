import APNs
import Foundation
import Logging
import Store

/// The apps' APNs credentials as the client takes them: each credential in
/// use read from its files when a run starts. One that cannot be read (a
/// missing file, a key others may read, a wrong password) is left out with
/// why: that app's notifications are refused by the client (UnknownCredential)
/// and its campaigns fail with the reason, while the other apps' go out.
public enum AppCredentials {
    /// Warned about this long before a certificate expires.
    public static let expiryWarning: TimeInterval = 30 * 86_400

    /// Reads one credential's files.
    public static func load(_ r: AppCredentialRecord) throws -> APNsCredential {
        switch r.kind {
        case .token:
            guard let path = r.keyPath, let keyID = r.keyID, let teamID = r.teamID else {
                throw Incomplete(credential: r.qualifiedName, needs: "key_path, key_id and team_id")
            }
            return .token(signingKey: try APNsSigningKey(pemPath: path), keyID: keyID, teamID: teamID)
        case .certificate:
            guard let path = r.certificatePath else { throw Incomplete(credential: r.qualifiedName, needs: "certificate_path") }
            if let key = r.privateKeyPath {
                return .certificate(try APNsClientCertificate(certificatePEMPath: path, privateKeyPEMPath: key))
            }
            return .certificate(try APNsClientCertificate(p12Path: path, passwordFile: r.passwordFile))
        }
    }

    /// `token, key id K, team T` or `certificate UID=…, expires 2027-01-01 (in 401 days)`.
    public static func summary(_ credential: APNsCredential, now: Date) -> String {
        switch credential {
        case .token(_, let keyID, let teamID):
            return "token, key id \(keyID), team \(teamID)"
        case .certificate(let c):
            let days = Int((c.notAfter.timeIntervalSince(now) / 86_400).rounded(.down))
            let when = c.isExpired(at: now) ? "EXPIRED \(-days) days ago" : "in \(days) days"
            let topics = c.topics.isEmpty ? "" : ", topics \(c.topics.joined(separator: " "))"
            return "certificate \(c.subject)\(topics), expires \(day(c.notAfter)) (\(when))"
        }
    }

    /// Every credential in use by `apps`, read; those that could not be, with why.
    public static func loadAll(_ apps: [AppRecord]) -> (credentials: [String: APNsCredential], problems: [String: String]) {
        var credentials: [String: APNsCredential] = [:]
        var problems: [String: String] = [:]
        for app in apps {
            let inUse = Set(app.current.values)
            for record in app.credentials where inUse.contains(record.name) {
                do {
                    credentials[record.qualifiedName] = try load(record)
                } catch {
                    problems[record.qualifiedName] = "\(error)"
                }
            }
        }
        return (credentials, problems)
    }

    /// Logs what an operator must know before the night: a certificate in
    /// use that expires within 30 days (or has), and a credential that could
    /// not be read.
    public static func warn(_ credentials: [String: APNsCredential], problems: [String: String], logger: Logger, now: Date = Date()) {
        for (name, credential) in credentials.sorted(by: { $0.key < $1.key }) {
            guard case .certificate(let c) = credential, c.expiresWithin(expiryWarning, of: now) else { continue }
            logger.warning(c.isExpired(at: now) ? "APNs certificate expired" : "APNs certificate expires soon", metadata: [
                "credential": "\(name)", "not_after": "\(day(c.notAfter))",
            ])
        }
        for (name, problem) in problems.sorted(by: { $0.key < $1.key }) {
            logger.error("APNs credential unusable; its app's campaigns fail", metadata: ["credential": "\(name)", "error": "\(problem)"])
        }
    }

    struct Incomplete: Error, CustomStringConvertible {
        var credential: String
        var needs: String
        var description: String { "credential \(credential) needs \(needs)" }
    }

    static func day(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withFullDate]
        return f.string(from: date)
    }
}
