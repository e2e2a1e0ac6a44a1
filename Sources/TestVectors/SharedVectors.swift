import ExtensionKit
import Foundation

// Shared by the test targets that check the wire contracts against the
// known answers in Tests/Vectors (made with independent implementations; that
// folder's README says which).

/// Known answers in `Tests/Vectors` of the repository.
/// A missing folder fails the test that asked, with a message that says where
/// the files were looked for.
public enum SharedVectors {
    public struct Missing: Error, CustomStringConvertible {
        public let path: String
        public var description: String {
            "known-answer vector not found at \(path): Herald's tests read known answers from Tests/Vectors in the repository"
        }
    }

    public static func directory(filePath: String = #filePath) -> URL {
        // <root>/{Sources,Tests}/<Target>/<File>.swift → <root>/Tests/Vectors
        URL(fileURLWithPath: filePath)
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Tests/Vectors", isDirectory: true)
            .standardizedFileURL
    }

    public static func load<T: Decodable>(_ name: String, as type: T.Type, filePath: String = #filePath) throws -> T {
        let url = directory(filePath: filePath).appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw Missing(path: url.path)
        }
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }
}
