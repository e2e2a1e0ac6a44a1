import ExtensionKit
import Foundation

/// `reply-token-v1.json`
public struct ReplyTokenVectors: Decodable {
    public struct Vector: Decodable {
        public var reply_secret: String
        public var delivery: Int64
        public var message: String
        public var token: String
    }

    public var vectors: [Vector]

    public static func load() throws -> [Vector] {
        try SharedVectors.load("reply-token-v1.json", as: Self.self).vectors
    }
}
