import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Store
import TestSupport
import Testing

/// Collects a dry run's JSON lines.
actor CollectingSink: PayloadSink {
    var raw: [String] = []
    func write(_ line: [UInt8]) throws {
        raw.append(String(decoding: line, as: UTF8.self))
    }
    func lines() -> [String] { raw }
}

extension CollectingSink {
    /// The payload lines of one campaign, parsed.
    nonisolated func payloads(campaign: Int) async -> [[String: Any]] {
        await lines().compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }.filter { ($0["campaign"] as? Int) == campaign && $0["payload"] != nil }
    }
}
