import Foundation
import Observability
import TestSupport
import Prometheus
import Testing

@Suite("Prometheus text")
struct PrometheusTests {
    @Test func aRegistryEmitsTextThatParses() throws {
        let registry = PrometheusCollectorRegistry()
        registry.makeCounter(descriptor: MetricNameDescriptor(metricName: "herald_test_sent", unitName: "total", helpText: "Sent"),
                             labels: [("campaign", "3")]).increment(by: Int64(1500))
        registry.makeGauge(descriptor: MetricNameDescriptor(metricName: "herald_test_rate", unitName: "", helpText: "Rate"),
                           labels: [("campaign", "3")]).set(12_500.5)
        let text = registry.emitToString()
        let samples = try PrometheusExposition.parse(text)
        #expect(samples["herald_test_sent_total{campaign=\"3\"}"] == 1500)
        #expect(samples["herald_test_rate{campaign=\"3\"}"] == 12_500.5)
    }

    @Test func theTextfileIsReplacedWholeAndDevicesAreRefused() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-prom-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("herald.prom").path
        try PrometheusTextfile.write("a 1\n", to: path)
        try PrometheusTextfile.write("b 2\n", to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "b 2\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["herald.prom"])
        let link = dir.appendingPathComponent("link.prom").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/dev/null")
        #expect(throws: TextfileError.self) { try PrometheusTextfile.write("c 3\n", to: link) }
        #expect(throws: TextfileError.self) { try PrometheusTextfile.write("c 3\n", to: dir.path) }
    }
}
