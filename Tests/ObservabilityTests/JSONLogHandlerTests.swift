import Foundation
import Logging
@testable import Observability
import Testing

@Suite("JSON logs")
struct JSONLogHandlerTests {
    func logger(_ writer: LineWriter) -> Logger {
        var logger = Logger(label: "herald.test") { label in JSONLogHandler(label: label, sink: writer) }
        logger.logLevel = .trace
        return logger
    }

    func decode(_ line: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(object as? [String: Any])
    }

    @Test func eachRecordIsOneJSONObjectWithItsMetadata() throws {
        let writer = LineWriter.memory()
        var log = logger(writer)
        log[metadataKey: "run"] = "12"
        log.info("campaign sent", metadata: ["campaign": "3", "sent": .stringConvertible(1500)])
        let lines = writer.lines
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1)
        let object = try decode(line)
        #expect(object["msg"] as? String == "campaign sent")
        #expect(object["level"] as? String == "info")
        #expect(object["label"] as? String == "herald.test")
        #expect(object["run"] as? String == "12")
        #expect(object["campaign"] as? String == "3")
        #expect(object["sent"] as? String == "1500")
        let ts = try #require(object["ts"] as? String)
        #expect(ts.count == 24 && ts.hasSuffix("Z"))
    }

    @Test func textThatWouldBreakTheLineIsEscaped() throws {
        let writer = LineWriter.memory()
        logger(writer).warning("two\nlines \"quoted\" \\ and \u{1}", metadata: ["nested": ["a": ["x", "y"]]])
        let line = try #require(writer.lines.first)
        #expect(line.filter { $0 == "\n" }.count == 1)
        let object = try decode(line)
        #expect(object["msg"] as? String == "two\nlines \"quoted\" \\ and \u{1}")
        let nested = try #require(object["nested"] as? [String: Any])
        #expect(nested["a"] as? [String] == ["x", "y"])
        #expect((object["source"] as? String)?.contains("JSONLogHandlerTests.swift") == true)
    }

    @Test func secretsUnderSecretKeysAreRedacted() throws {
        let writer = LineWriter.memory()
        logger(writer).info("configured", metadata: [
            "password": "hunter2", "Authorization": "bearer abc.def", "settings": ["token": "xyz", "port": "8080"],
        ])
        let line = try #require(writer.lines.first)
        #expect(!line.contains("hunter2") && !line.contains("abc.def") && !line.contains("xyz"))
        #expect(line.contains("8080"))
    }

    @Test func theFormatComesFromTheEnvironmentOrTheTerminal() throws {
        #expect(try LogFormat.from(environment: ["HERALD_LOG_FORMAT": "json"]) == .json)
        #expect(try LogFormat.from(environment: ["HERALD_LOG_FORMAT": "text"]) == .text)
        #expect(LogFormat.automatic(isTerminal: true) == .text)
        #expect(LogFormat.automatic(isTerminal: false) == .json)
        #expect {
            try LogFormat.from(environment: ["HERALD_LOG_FORMAT": "yaml"])
        } throws: { "\($0)".contains("HERALD_LOG_FORMAT") && "\($0)".contains("yaml") }
    }
}
