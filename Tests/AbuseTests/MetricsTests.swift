import AppServer
import Foundation
import HeraldCore
import Observability
import TestSupport
import Testing

@Suite("GET /metrics")
struct MetricsTests {
    /// The samples of one scrape, read with the strict exposition parser.
    static func scrape(_ port: Int, as client: (String, String)) async throws -> [String: Double] {
        let response = try #require(try await RawHTTP.exchange(port: port, RawHTTP.request(method: "GET", path: "/metrics", headers: [client])))
        #expect(response.status == 200)
        #expect(response.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        return try PrometheusExposition.parse(String(decoding: response.body, as: UTF8.self))
    }

    @Test func requestsRepliesRegistrationsAndRefusalsAreCounted() async throws {
        let registry = ProcessMetrics.registry()
        let keys = try await AppKeys.make()
        var limits = unlimited
        limits.perDelivery = .init(2, per: .seconds(86_400))
        limits.perDevice = .init(1, per: .seconds(86_400))
        // The loopback peer is a trusted proxy: each request below is
        // forwarded for its own client address, except four for 192.0.2.7,
        // whose allowance is three.
        limits.trustedProxies = ["127.0.0.1"]
        limits.perAddress = .init(3, per: .seconds(86_400))
        let serverLimits = limits
        try await withIntakeDatabase { intake, db, _ in
            try await withServer(intake, app: keys.endpoints(db), limits: serverLimits, metrics: { registry.emitToString() }) { port in
                // Tests running beside this one share the process's registry:
                // what this test did is the least each counter grew by.
                let client = { (n: Int) in ("X-Forwarded-For", "198.51.100.\(n)") }
                let before = try await Self.scrape(port, as: client(1))
                let reply = HostileTable.object(HostileTable.fields(delivery: 3, action: "love_it"))
                let json = ("Content-Type", "application/json")
                let statuses = [
                    try await RawHTTP.exchange(port: port, RawHTTP.request(headers: [json, client(2)], body: reply))?.status,  // stored
                    try await RawHTTP.exchange(port: port, RawHTTP.request(headers: [json, client(3)], body: reply))?.status,  // duplicate
                    try await RawHTTP.exchange(port: port, RawHTTP.request(headers: [json, client(4)], body: reply))?.status,  // 429 delivery
                    try await RawHTTP.exchange(port: port, AppKeys.put(AppKeys.device(0x3E7), bearer: try await keys.bearer("ivy"),
                                                                       body: AppKeys.registration("ivy"), headers: [client(5)]))?.status,  // registered
                    try await RawHTTP.exchange(port: port, AppKeys.put(AppKeys.device(0x3E7), bearer: try await keys.bearer("ivy"),
                                                                       body: AppKeys.registration("ivy"), headers: [client(6)]))?.status,  // 429 device
                    try await RawHTTP.exchange(port: port, RawHTTP.request(method: "GET", path: "/nowhere", headers: [client(7)]))?.status,
                ]
                #expect(statuses == [202, 200, 429, 201, 429, 404])
                var forwarded: [Int?] = []
                for _ in 0..<4 {
                    let request = RawHTTP.request(method: "GET", path: "/healthz", headers: [("X-Forwarded-For", "192.0.2.7")])
                    forwarded.append(try await RawHTTP.exchange(port: port, request)?.status)
                }
                #expect(forwarded == [200, 200, 200, 429])
                let after = try await Self.scrape(port, as: client(8))
                func grew(_ key: String) -> Double { (after[key] ?? 0) - (before[key] ?? 0) }

                #expect(grew("herald_replies_stored_total") >= 1)
                #expect(grew("herald_replies_duplicate_total") >= 1)
                #expect(grew(#"herald_rate_limited_total{limit="delivery"}"#) >= 1)
                #expect(grew(#"herald_rate_limited_total{limit="device"}"#) >= 1)
                #expect(grew(#"herald_rate_limited_total{limit="address"}"#) >= 1)
                #expect(grew("herald_devices_registered_total") >= 1)
                // Requests by route, method and final status, refusals included.
                func request(_ route: String, _ method: String, _ status: Int) -> String {
                    "hb_requests{http_route=\"\(route)\",http_request_method=\"\(method)\",http_response_status_code=\"\(status)\"}"
                }
                #expect(grew(request("/v1/replies", "POST", 202)) >= 1)
                #expect(grew(request("/v1/replies", "POST", 200)) >= 1)
                #expect(grew(request("/v1/replies", "POST", 429)) >= 1)
                #expect(grew(request("/v1/devices/{token}", "PUT", 201)) >= 1)
                #expect(grew(request("/v1/devices/{token}", "PUT", 429)) >= 1)
                #expect(grew(request("/healthz", "GET", 200)) >= 3)
                #expect(grew(request("/healthz", "GET", 429)) >= 1)
                #expect(after.keys.contains { $0.hasPrefix("hb_requests{") && $0.contains("http_response_status_code=\"404\"") })
                #expect(after[request("/metrics", "GET", 200)] ?? 0 >= 1)
                // The latency histogram of the stored reply's route.
                // (One series per status: all of them together.)
                let count = after.filter { $0.key.hasPrefix("http_server_request_duration_count{http_route=\"/v1/replies\"") }
                    .map(\.value).reduce(0, +)
                #expect(count >= 3)
                #expect(after.keys.contains { $0.hasPrefix("http_server_request_duration_bucket{") && $0.contains("le=\"+Inf\"") })
                // The device token in the path is never a label.
                #expect(!after.keys.contains { $0.contains(AppKeys.device(0x3E7)) })
            }
        }
    }
}
