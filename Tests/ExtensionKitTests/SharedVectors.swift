import ExtensionKit
import Foundation

/// Known answers in `../shared/test-vectors`, beside the repository root.
/// A missing folder fails the test that asked, with a message that says where
/// the files were looked for.
enum SharedVectors {
    struct Missing: Error, CustomStringConvertible {
        let path: String
        var description: String {
            "shared test vector not found at \(path): Herald's tests read known answers from ../shared/test-vectors beside the repository root"
        }
    }

    static func directory(filePath: String = #filePath) -> URL {
        // <root>/Tests/<Target>/<File>.swift → <root>/../shared/test-vectors
        URL(fileURLWithPath: filePath)
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("../shared/test-vectors", isDirectory: true)
            .standardizedFileURL
    }

    static func load<T: Decodable>(_ name: String, as type: T.Type, filePath: String = #filePath) throws -> T {
        let url = directory(filePath: filePath).appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw Missing(path: url.path)
        }
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }
}

/// `sealed-envelope-v1.json`
struct SealedEnvelopeVectors: Decodable {
    struct Vector: Decodable {
        var campaign: Int64
        var delivery: Int64
        var device_private_key: String
        var device_public_key: String
        var info: String
        var aad: String
        var plaintext: String
        var envelope: SealedEnvelope
    }

    var vectors: [Vector]

    static func load() throws -> [Vector] {
        try SharedVectors.load("sealed-envelope-v1.json", as: Self.self).vectors
    }
}
