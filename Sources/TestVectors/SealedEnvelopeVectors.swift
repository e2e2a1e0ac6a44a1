import ExtensionKit
import Foundation

/// `sealed-envelope-v1.json`
public struct SealedEnvelopeVectors: Decodable {
    public struct Vector: Decodable {
        public var campaign: Int64
        public var delivery: Int64
        public var device_private_key: String
        public var device_public_key: String
        public var info: String
        public var aad: String
        public var plaintext: String
        public var envelope: SealedEnvelope
    }

    public var vectors: [Vector]

    public static func load() throws -> [Vector] {
        try SharedVectors.load("sealed-envelope-v1.json", as: Self.self).vectors
    }
}
