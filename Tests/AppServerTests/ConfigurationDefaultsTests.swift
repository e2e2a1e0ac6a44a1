import AppServer
import Settings

import Testing

/// docs/operators.md's defaults of `herald serve`'s limits (from `ConfigurationKey.all`)
/// are the app server's own (`AppServerLimits`), which apply when a key is unset.
@Suite("Configuration defaults of herald serve")
struct ConfigurationDefaultsTests {
    static func documented(_ variable: String) -> Int? {
        ConfigurationKey.all.first { $0.environment == variable }.flatMap { Int($0.defaultText) }
    }

    @Test func theDocumentedDefaultsAreTheIntakes() {
        let defaults = AppServerLimits()
        #expect(Self.documented("HERALD_RATE_ADDRESS") == defaults.perAddress.count)
        #expect(Self.documented("HERALD_RATE_ADDRESS_BURST") == defaults.perAddress.burst)
        #expect(Self.documented("HERALD_RATE_DELIVERY") == defaults.perDelivery.count)
        #expect(Self.documented("HERALD_RATE_DEVICE") == defaults.perDevice.count)
        #expect(Self.documented("HERALD_HTTP_MAX_CONNECTIONS") == defaults.maxConnections)
        #expect(Self.documented("HERALD_HTTP_MAX_CONNECTIONS_PER_ADDRESS") == defaults.maxConnectionsPerAddress)
        #expect(Self.documented("HERALD_HTTP_HEADER_TIMEOUT").map { .seconds($0) } == defaults.headerTimeout)
        #expect(Self.documented("HERALD_HTTP_BODY_TIMEOUT").map { .seconds($0) } == defaults.bodyTimeout)
        #expect(Self.documented("HERALD_HTTP_MAX_HEADER_BYTES") == defaults.maxHeaderBytes)
    }
}
