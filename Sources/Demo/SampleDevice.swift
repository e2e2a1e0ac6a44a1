import APNsSimulator
import AppServer
import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import Logging
import Store

/// One of the demo's devices as its app knows itself (Sql/sample_devices.tsv).
public struct SampleDevice: Sendable, Hashable {
    public var n: Int
    public var user: String
    public var token: String
    public var environment: String
    public var locale: String
    public var timeZone: String
    public var appVersion: String
    public var keyID: String?
    /// The app logs out after registering.
    public var logsOut: Bool
    /// The app it runs (`apps.name`): `default` (the shop) or `companion`.
    public var app: String = AppRecord.defaultName

    /// The device's own X25519 key (when it registers one): SHA-256("herald demo device n").
    public var privateKey: Curve25519.KeyAgreement.PrivateKey? {
        guard keyID != nil else { return nil }
        return try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Data(SHA256.hash(data: Data("herald demo device \(n)".utf8))))
    }

    /// Reads the tab-separated file (lines starting with # are comments; the first other line names the columns).
    public static func load(_ files: SQLFiles) throws -> [SampleDevice] {
        let text = try files.text("sample_devices.tsv")
        var out: [SampleDevice] = []
        var header: [String]?
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let cells = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard let names = header else {
                header = cells
                continue
            }
            var row: [String: String] = [:]
            for (name, cell) in zip(names, cells) { row[name] = cell }
            guard let n = row["n"].flatMap(Int.init), let user = row["user"], let token = row["token"] else { continue }
            out.append(SampleDevice(
                n: n, user: user, token: token, environment: row["environment"] ?? "production",
                locale: row["locale"] ?? "en", timeZone: row["time_zone"] ?? "UTC", appVersion: row["app_version"] ?? "1.0",
                keyID: row["key_id"].flatMap { $0.isEmpty ? nil : $0 }, logsOut: row["unregistered"] == "1",
                app: row["app"].flatMap { $0.isEmpty ? nil : $0 } ?? AppRecord.defaultName))
        }
        return out
    }
}
