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
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // APNs HTTP/2 + TLS client with token auth.
        .target(
            name: "APNs",
            dependencies: [
                "Lifecycle",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // An APNs stand-in: HTTP/2 + TLS server that validates like APNs and injects faults.
        .target(
            name: "APNsSimulator",
            dependencies: [
                "APNs", "Lifecycle",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // PostgreSQL: migrations, campaigns, audience snapshot, delivery ledger, replies, runs.
        .target(
            name: "Store",
            dependencies: [
                "HeraldCore", "Embedded",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The analysts' report, read from the analyst views and rendered as text or one HTML page.
        .target(
            name: "Reporting",
            dependencies: [
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The one typed configuration (the settings): every key, read from the environment over a TOML file.
        .target(
            name: "Settings",
            dependencies: [
                "HeraldCore", "Store", "APNs",
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The batch run: due campaigns → snapshot → payloads → send → ledger.
        .target(
            name: "Runner",
            dependencies: [
                "HeraldCore", "Store", "APNs", "Lifecycle", "Settings",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Logs a machine can parse (JSON lines); metrics in Prometheus's text format.
        .target(
            name: "Observability",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // Reply intake and notification config over HTTP (Hummingbird).
        .target(
            name: "ReplyIntake",
            dependencies: [
                "HeraldCore", "Store",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            // The OpenAPI document of every endpoint, served at /v1/openapi.json.
            resources: [.embedInCode("openapi.json")]
        ),
        // The demo: a device fleet that answers what the APNs simulator accepted, and the whole loop.
        .target(
            name: "Demo",
            dependencies: [
                "ExtensionKit", "HeraldCore", "Store", "Runner", "APNs", "APNsSimulator", "ReplyIntake", "Reporting", "Settings",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldCore", "Store", "Runner", "APNs", "APNsSimulator", "ReplyIntake", "Demo", "Observability", "Lifecycle", "Reporting", "Settings",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Load generator for the APNs transport (scripts/bench), and the reply
        // bodies of the intake's benchmark (scripts/bench-replies).
        .executableTarget(
            name: "HeraldBench",
            dependencies: [
                "APNs", "APNsSimulator", "HeraldCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The A/B transport on swift-nio-http2 (herald-bench --transport nio-http2).
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Shared by the test targets: a throwaway database per test, the simulator.
        .target(
            name: "TestSupport",
            dependencies: [
                "HeraldCore", "Store", "APNs", "APNsSimulator",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
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
                "Demo", "TestSupport", "Runner", "Settings", "ReplyIntake", "ExtensionKit", "APNsSimulator",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore", "TestVectors"]),
        .testTarget(
            name: "APNsTests",
            dependencies: [
                "APNs", "APNsSimulator", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "ObservabilityTests",
            dependencies: [
                "Observability", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "StoreTests",
            dependencies: ["Store", "HeraldCore", "TestSupport", .product(name: "PostgresNIO", package: "postgres-nio")]
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
            dependencies: ["Reporting", "Store", "TestSupport", .product(name: "PostgresNIO", package: "postgres-nio")]
        ),
        .testTarget(
            name: "RunnerTests",
            dependencies: [
                "Runner", "Reporting", "Settings", "TestSupport", "APNs", "APNsSimulator",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The delivery promise under real faults: `herald run` and `herald apns-sim`
        // as child processes, killed, stopped and restarted (needs the built herald).
        .testTarget(
            name: "FaultTests",
            dependencies: [
                "Store", "TestSupport", "HeraldCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "ReplyIntakeTests",
            dependencies: [
                "ReplyIntake", "TestSupport", "Settings",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // Hostile input, throttling, slow clients, roles and secrets: the abuse suite.
        .testTarget(
            name: "AbuseTests",
            dependencies: [
                "ReplyIntake", "TestSupport", "Demo", "Runner", "Settings", "Store", "HeraldCore", "ExtensionKit", "Observability",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
