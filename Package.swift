// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "herald",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "ExtensionKit", targets: ["ExtensionKit"]),
        .executable(name: "herald-bench", targets: ["HeraldBench"]),
    ],
    // Every product dependency but swift-crypto's is conditional on the Server
    // trait, on by default: an app that adds ExtensionKit with `traits: []`
    // resolves only swift-crypto (and its swift-asn1), not the server's 30 packages
    // (docs/app-developers.md, "Adding ExtensionKit to an iOS project").
    traits: [
        .trait(name: "Server", description: "herald, herald-bench and their tests, with the packages they need (ExtensionKit needs none of them)"),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // The demo's device fleet posts over HTTP with it: Foundation's URLSession
        // (FoundationNetworking) needs libcurl and does not link statically.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        // The configuration file (`--config FILE`) is TOML (Sources/Runner/ConfigurationFile.swift says why).
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        // `swift package generate-documentation --target ExtensionKit` (DocC). No target
        // depends on it, so an app's resolution leaves it out.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // What an iOS notification extension links: Foundation + Crypto only.
        .target(
            name: "ExtensionKit",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        // What herald reads at run time (the migrations, the demo's sample data) and the
        // commit it was built from, embedded at build time: a copied binary needs no Sql/.
        .target(name: "Embedded", plugins: ["EmbedFiles"]),
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["herald-embed"]),
        .executableTarget(name: "herald-embed", path: "Sources/HeraldEmbed"),
        // Domain types, segment rules, payload builder, sealing, reply tokens. No I/O.
        .target(
            name: "HeraldCore",
            dependencies: [
                "ExtensionKit",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The one stop type of every long-lived part (graceful, then immediate).
        .target(
            name: "Lifecycle",
            dependencies: [
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        // APNs HTTP/2 + TLS client with token or certificate auth (X509 reads the client
        // certificates' validity and topics).
        .target(
            name: "APNs",
            dependencies: [
                "Lifecycle", "HeraldCore",
                // The broadcast channel API (a few calls a sale).
                server("AsyncHTTPClient", "async-http-client"),
                server("NIOHTTP1", "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                server("X509", "swift-certificates"),
                server("SwiftASN1", "swift-asn1"),
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOHPACK", "swift-nio-http2"),
                server("NIOSSL", "swift-nio-ssl"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        // An APNs stand-in: HTTP/2 + TLS server that validates like APNs and injects faults.
        .target(
            name: "APNsSimulator",
            dependencies: [
                "APNs", "Lifecycle", "HeraldCore",
                .product(name: "Crypto", package: "swift-crypto"),
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOHTTP2", "swift-nio-http2"),
                server("NIOSSL", "swift-nio-ssl"),
                server("X509", "swift-certificates"),
                server("SwiftASN1", "swift-asn1"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        // PostgreSQL: migrations, campaigns, audience snapshot, delivery ledger, replies, runs.
        .target(
            name: "Store",
            dependencies: [
                "HeraldCore", "Embedded", "Lifecycle",
                server("PostgresNIO", "postgres-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOCore", "swift-nio"),
                server("NIOSSL", "swift-nio-ssl"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                server("Logging", "swift-log"),
            ]
        ),
        // The analysts' report, read from the analyst views and rendered as text or one HTML page.
        .target(
            name: "Reporting",
            dependencies: [
                "Store",
                server("PostgresNIO", "postgres-nio"),
                server("Logging", "swift-log"),
            ]
        ),
        // The one typed configuration (the settings): every key, read from the environment over a TOML file.
        .target(
            name: "Settings",
            dependencies: [
                "HeraldCore", "Store", "APNs",
                server("TOMLKit", "TOMLKit"),
                server("Logging", "swift-log"),
            ]
        ),
        // The batch run: due campaigns → snapshot → payloads → send → ledger.
        .target(
            name: "Runner",
            dependencies: [
                "HeraldCore", "Store", "APNs", "Lifecycle", "Settings",
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("UnixSignals", "swift-service-lifecycle"),
                server("Prometheus", "swift-prometheus"),
                server("PostgresNIO", "postgres-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("Logging", "swift-log"),
            ]
        ),
        // Logs a machine can parse (JSON lines); metrics in Prometheus's text format.
        .target(
            name: "Observability",
            dependencies: [
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
                server("Prometheus", "swift-prometheus"),
                server("NIOConcurrencyHelpers", "swift-nio"),
            ]
        ),
        // The app's endpoints over HTTP (Hummingbird): replies, device registration, the notification config, receipts, conversions.
        .target(
            name: "AppServer",
            dependencies: [
                "HeraldCore", "Store", "Lifecycle",
                server("Hummingbird", "hummingbird"),
                server("HummingbirdCore", "hummingbird"),
                server("HTTPTypes", "swift-http-types"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOHTTPTypes", "swift-nio-extras"),
                server("JWTKit", "jwt-kit"),
                server("PostgresNIO", "postgres-nio"),
                server("Logging", "swift-log"),
                server("Metrics", "swift-metrics"),
            ],
            // The OpenAPI document of every endpoint, served at /v1/openapi.json.
            resources: [.embedInCode("openapi.json")]
        ),
        // The demo: a device fleet that answers what the APNs simulator accepted, and the whole loop.
        .target(
            name: "Demo",
            dependencies: [
                "ExtensionKit", "HeraldCore", "Store", "Runner", "APNs", "APNsSimulator", "AppServer", "Reporting", "Settings",
                server("AsyncHTTPClient", "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("Hummingbird", "hummingbird"),
                server("PostgresNIO", "postgres-nio"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("Logging", "swift-log"),
            ]
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldCore", "Store", "Runner", "APNs", "APNsSimulator", "AppServer", "Demo", "Observability", "Lifecycle", "Reporting", "Settings",
                server("ArgumentParser", "swift-argument-parser"),
                // `herald healthcheck` asks `herald serve` for /healthz.
                server("AsyncHTTPClient", "async-http-client"),
                server("NIOCore", "swift-nio"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("NIOPosix", "swift-nio"),
                server("Logging", "swift-log"),
            ]
        ),
        // Load generator for the APNs transport (scripts/bench), and the reply
        // bodies of the intake's benchmark (scripts/bench-replies).
        .executableTarget(
            name: "HeraldBench",
            dependencies: [
                "APNs", "APNsSimulator", "HeraldCore",
                .product(name: "Crypto", package: "swift-crypto"),
                server("Logging", "swift-log"),
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                // The intake's same-sitting baseline (herald-bench bare-intake).
                server("Hummingbird", "hummingbird"),
                // The A/B transport on swift-nio-http2 (herald-bench --transport nio-http2).
                server("NIOHTTP2", "swift-nio-http2"),
                server("NIOHPACK", "swift-nio-http2"),
                server("NIOSSL", "swift-nio-ssl"),
            ]
        ),
        // Shared by the test targets: a throwaway database per test, the simulator.
        .target(
            name: "TestSupport",
            dependencies: [
                "HeraldCore", "Store", "APNs", "APNsSimulator", "Lifecycle",
                server("NIOConcurrencyHelpers", "swift-nio"),
                server("PostgresNIO", "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                server("Logging", "swift-log"),
                server("NIOPosix", "swift-nio"),
            ]
        ),
        // The shared known answers of the wire contracts, for the test targets.
        .target(name: "TestVectors", dependencies: ["ExtensionKit"]),
        .testTarget(
            name: "ExtensionKitTests",
            dependencies: ["ExtensionKit", "TestVectors", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "DemoTests",
            dependencies: [
                "Demo", "TestSupport", "Runner", "Settings", "AppServer", "ExtensionKit", "APNsSimulator",
                server("PostgresNIO", "postgres-nio"),
                server("Hummingbird", "hummingbird"),
                server("HummingbirdTesting", "hummingbird"),
            ]
        ),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore", "TestVectors"]),
        .testTarget(
            name: "APNsTests",
            dependencies: [
                "APNs", "APNsSimulator", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                server("NIOCore", "swift-nio"),
                server("NIOEmbedded", "swift-nio"),
                server("NIOHPACK", "swift-nio-http2"),
                server("NIOPosix", "swift-nio"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "ObservabilityTests",
            dependencies: [
                "Observability", "TestSupport",
                server("Logging", "swift-log"),
                server("Prometheus", "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "StoreTests",
            dependencies: ["Store", "HeraldCore", "TestSupport", server("PostgresNIO", "postgres-nio")]
        ),
        .testTarget(
            name: "SettingsTests",
            dependencies: [
                "Settings", "Store", "HeraldCore", "APNs", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "ReportingTests",
            dependencies: ["Reporting", "Store", "TestSupport", server("PostgresNIO", "postgres-nio")]
        ),
        .testTarget(
            name: "RunnerTests",
            dependencies: [
                "Runner", "Reporting", "Settings", "TestSupport", "APNs", "APNsSimulator",
                server("PostgresNIO", "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The delivery promise under real faults: `herald run` and `herald apns-sim`
        // as child processes, killed, stopped and restarted (needs the built herald).
        .testTarget(
            name: "FaultTests",
            dependencies: [
                "Store", "TestSupport", "HeraldCore", "AppServer",
                server("PostgresNIO", "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The documents held to the code: README's layout and the tests it names, DESIGN's
        // components, the commands the guides give (against the built herald's help), the
        // fault table and the configuration table of docs/operators.md.
        .testTarget(
            name: "DocsTests",
            dependencies: ["Settings", "TestSupport"]
        ),
        .testTarget(
            name: "AppServerTests",
            dependencies: [
                "AppServer", "TestSupport", "Settings",
                server("Hummingbird", "hummingbird"),
                server("JWTKit", "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                server("HummingbirdTesting", "hummingbird"),
                server("PostgresNIO", "postgres-nio"),
            ]
        ),
        // Hostile input, throttling, slow clients, roles and secrets: the abuse suite.
        .testTarget(
            name: "AbuseTests",
            dependencies: [
                "AppServer", "TestSupport", "Demo", "Runner", "Settings", "Store", "HeraldCore", "ExtensionKit", "Observability",
                server("Hummingbird", "hummingbird"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("PostgresNIO", "postgres-nio"),
                server("NIOCore", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("Logging", "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                server("NIOConcurrencyHelpers", "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

/// A product of one of the server's packages: a dependency only with the
/// Server trait (see `traits`), so that an app adding ExtensionKit with
/// `traits: []` does not resolve the package.
func server(_ product: String, _ package: String) -> Target.Dependency {
    .product(name: product, package: package, condition: .when(traits: ["Server"]))
}
