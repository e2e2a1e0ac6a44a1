/// RFC 9180 §7.1.4 asks X25519 users to refuse an all-zero shared secret, and
/// not every backend does. Such a secret comes exactly from a point of small
/// order, so both ends refuse those points up front: the sealer as a device
/// key, the opener as an encapsulated key.
package enum X25519Points {
    /// The encodings of the points of order 1, 2, 4 and 8 (the list libsodium
    /// checks), compared with bit 255 cleared because X25519 ignores it.
    private static let smallOrder: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [0x01] + [UInt8](repeating: 0, count: 31),
        [
            0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
            0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00,
        ],
        [
            0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef, 0x5b,
            0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57,
        ],
        [0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f], // p - 1
        [0xed] + [UInt8](repeating: 0xff, count: 30) + [0x7f], // p
        [0xee] + [UInt8](repeating: 0xff, count: 30) + [0x7f], // p + 1
    ]

    /// Whether the 32-byte encoding `bytes` is a point of small order. Any
    /// other length answers `false`; lengths are checked elsewhere.
    package static func hasSmallOrder(_ bytes: some Collection<UInt8>) -> Bool {
        hasSmallOrder(Array(bytes))
    }

    /// The same on an array, with plain indexing: a generic sequence walk
    /// (zip, enumerated) across the module boundary runs unspecialized, in
    /// the runtime's metadata lookups, too costly for a seal.
    package static func hasSmallOrder(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == 32 else { return false }
        var found = false
        for candidate in smallOrder {
            var difference: UInt8 = 0
            for index in 0..<32 {
                difference |= (index == 31 ? bytes[index] & 0x7f : bytes[index]) ^ candidate[index]
            }
            found = found || difference == 0
        }
        return found
    }
}
