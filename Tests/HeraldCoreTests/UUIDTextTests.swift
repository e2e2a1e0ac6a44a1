import Foundation
import HeraldCore
import Testing

/// UUIDText reads the canonical text form as Foundation's `UUID(uuidString:)`
/// does, and nothing else: where Foundation on Linux (which parses with
/// `sscanf`) also takes a sign, an `0x` or a space inside a field, UUIDText
/// refuses, as Foundation on Apple's platforms does. It writes what
/// `uuidString` writes.
@Suite("UUID text without C formatting")
struct UUIDTextTests {
    @Test func readsTheCanonicalFormAsFoundationDoes() {
        var inputs = [
            "6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5F", "6f1b5c2e-8c1d-4e0a-9b77-2a9c1f3d4e5f", "6f1B5c2E-8C1d-4e0A-9b77-2A9c1F3d4E5f",
            "00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
            "", "6F1B5C2E", "6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5", "6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5F0",
            "6F1B5C2E8C1D-4E0A-9B77-2A9C1F3D4E5F0", "6F1B5C2E-8C1D-4E0A-9B77_2A9C1F3D4E5F", "{6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5F}",
            "6F1B5C2G-8C1D-4E0A-9B77-2A9C1F3D4E5F", "6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4É5",
        ]
        for _ in 0..<200 { inputs.append(UUID().uuidString.lowercased()) }
        for input in inputs {
            #expect(UUIDText.parse(input) == UUID(uuidString: input), "\(input)")
        }
    }

    @Test func refusesWhatOnlyAScanfParserTakes() {
        for input in ["6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5 ", " 6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5", "6F1B5C2E-+C1D-4E0A-9B77-2A9C1F3D4E5F", "6F1B5C2E--C1D-4E0A-9B77-2A9C1F3D4E5F",
                      "6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E-F", "0x1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5F", "6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5\u{00}"] {
            #expect(UUIDText.parse(input) == nil, "\(input)")
        }
    }

    @Test func writesWhatFoundationWrites() {
        for id in (0..<500).map({ _ in UUID() }) + [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))] {
            #expect(UUIDText.parse(id.uuidString) == id)
        }
    }
}
