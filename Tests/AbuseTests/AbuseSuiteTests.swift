import AppServer
import Foundation
@testable import HeraldCore
import PostgresNIO
import Store
import TestSupport
import Testing

@Suite("Abuse: hostile requests and ingest lines")
struct AbuseSuiteTests {
    @Test func everyHostileRequestGetsItsDocumentedAnswerAndNothingIsStored() async throws {
        let keys = try await AppKeys.make()
        let replies = HostileTable.cases()
        let registrations = try await HostileTable.registrationCases(keys: keys)
        let receipts = HostileTable.receiptCases()
        let conversions = try await HostileTable.conversionCases(keys: keys)
        let table = replies + registrations + receipts + conversions
        #expect(replies.count >= 500)
        #expect(registrations.count >= 150)
        #expect(receipts.count >= 250)
        #expect(conversions.count >= 250)
        let allowedCodes = Set(ReplyError.allCodes + ["malformed_http", "not_found", "method_not_allowed",
                                                       "unsupported_media_type", "headers_too_large", "rate_limited"]
                               + HostileTable.registrationStatusOfCode.keys + HostileTable.receiptConversionStatusOfCode.keys)
        try await withIntakeDatabase { intake, db, _ in
            // What the device tables hold before: nothing may change them.
            let snapshot = """
                SELECT (SELECT coalesce(md5(string_agg(t::text, ',' ORDER BY t.id)), '') FROM devices t) || ' ' ||
                       (SELECT coalesce(md5(string_agg(t::text, ',' ORDER BY t.id)), '') FROM users t) || ' ' ||
                       (SELECT count(*) FROM receipts) || ' ' || (SELECT count(*) FROM conversions)
                """
            let before = try await db.scalar(snapshot, as: String.self)
            let outcome: TableOutcome = try await withServer(intake, app: keys.endpoints(db), limits: unlimited) { port in
                var registrationStatuses: [Int: Int] = [:]
                let registrationNames = Set(registrations.map(\.name))
                var receiptConversionStatuses: [Int: Int] = [:]
                let receiptConversionNames = Set((receipts + conversions).map(\.name))
                var byStatus: [Int: Int] = [:]
                var serverErrors = 0
                var unanswered = 0
                var mismatches: [String] = []
                for hostile in table {
                    guard let response = try await RawHTTP.exchange(port: port, hostile.request, halfClose: hostile.halfClose) else {
                        unanswered += 1
                        mismatches.append("\(hostile.name): no answer")
                        continue
                    }
                    byStatus[response.status, default: 0] += 1
                    if registrationNames.contains(hostile.name) { registrationStatuses[response.status, default: 0] += 1 }
                    if receiptConversionNames.contains(hostile.name) { receiptConversionStatuses[response.status, default: 0] += 1 }
                    if response.status >= 500 { serverErrors += 1 }
                    var wrong: [String] = []
                    if response.status != hostile.status { wrong.append("status \(response.status), expected \(hostile.status)") }
                    if let code = hostile.code {
                        let json = response.json
                        if json?["error"] != code { wrong.append("error \(json?["error"] ?? "(none)"), expected \(code)") }
                        if (json?["message"] ?? "").isEmpty { wrong.append("no message") }
                        if json.map({ Set($0.keys) }) != ["error", "message"] { wrong.append("body is not {error, message}") }
                        if let got = json?["error"], !allowedCodes.contains(got) { wrong.append("undocumented code \(got)") }
                        if response.headers["content-type"] != "application/json" { wrong.append("content type \(response.headers["content-type"] ?? "none")") }
                    }
                    if response.status == 405, response.headers["allow"]?.isEmpty ?? true { wrong.append("405 without Allow") }
                    if !wrong.isEmpty { mismatches.append("\(hostile.name): " + wrong.joined(separator: "; ")) }
                }
                let figures = registrationStatuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
                print("abuse: \(registrations.count) of them device registrations; by status: \(figures)")
                let receiptFigures = receiptConversionStatuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
                print("abuse: \(receipts.count) of them receipts and \(conversions.count) conversions; by status: \(receiptFigures)")
                return TableOutcome(byStatus: byStatus, serverErrors: serverErrors, unanswered: unanswered, mismatches: mismatches)
            }
            let after = try await db.scalar(snapshot, as: String.self)
            let (byStatus, serverErrors, unanswered, mismatches) = (outcome.byStatus, outcome.serverErrors, outcome.unanswered, outcome.mismatches)
            let stored = try await db.scalar("SELECT (SELECT count(*) FROM replies) + (SELECT count(*) FROM receipts) + (SELECT count(*) FROM conversions)", as: Int64.self) ?? -1
            let figures = byStatus.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
            print("abuse: \(table.count) hostile requests tried; by status: \(figures); 5xx: \(serverErrors); unanswered: \(unanswered); stored: \(stored)")
            #expect(mismatches.isEmpty, "\(mismatches.count) answers differ:\n\(mismatches.prefix(40).joined(separator: "\n"))")
            #expect(serverErrors == 0)
            #expect(unanswered == 0)
            #expect(stored == 0)
            #expect(before == after, "a hostile request changed the devices or users, or stored a receipt or conversion")
        }
    }

    @Test func everyHostileIngestLineIsReportedByNumberAndNothingIsStored() async throws {
        let lines = HostileTable.cases().compactMap { c -> (body: [UInt8], code: String)? in
            guard let body = c.body, let code = c.ingestCode,
                  !body.contains(UInt8(ascii: "\n")), !body.contains(UInt8(ascii: "\r")),
                  !body.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) else { return nil }
            return (body, code)
        }
        #expect(lines.count >= 500)
        try await withIntakeDatabase { intake, db, _ in
            // A good line first and last: the bad ones in between must not stop the file.
            let good1 = HostileTable.object(HostileTable.fields(delivery: 1, action: "love_it"))
            let good2 = HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "e" + String(repeating: "\u{0301}", count: 1999)))
            var file: [UInt8] = good1 + [0x0A]
            for line in lines { file += line.body + [0x0A] }
            file += good2 + [0x0A]
            // A line far over the body limit, without its bytes being kept.
            file += Array(repeating: UInt8(ascii: "x"), count: 200_000) + [0x0A]
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID()).jsonl").path
            try Data(file).write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }

            let report = try await intake.ingest(file: path, batch: 50)
            let bad = Dictionary(report.bad.map { ($0.line, $0.error.code) }, uniquingKeysWith: { a, _ in a })
            var mismatches: [String] = []
            for (i, line) in lines.enumerated() where bad[i + 2] != line.code {
                mismatches.append("line \(i + 2): \(bad[i + 2] ?? "accepted"), expected \(line.code): \(String(decoding: line.body.prefix(100), as: UTF8.self))")
            }
            let lastLine = lines.count + 3
            #expect(bad[lastLine] == "body_too_large")
            #expect(bad[1] == nil && bad[lines.count + 2] == nil)
            let byCode = Dictionary(grouping: report.bad, by: { $0.error.code }).mapValues(\.count)
                .sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
            let stored = try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) ?? -1
            print("abuse: \(lines.count + 1) hostile ingest lines tried; refused by code: \(byCode); stored: \(report.stored) good lines of 2 (rows: \(stored))")
            #expect(mismatches.isEmpty, "\(mismatches.count) lines differ:\n\(mismatches.prefix(40).joined(separator: "\n"))")
            #expect(report.bad.count == lines.count + 1)
            #expect(report.stored == 2)
            #expect(stored == 2)
        }
    }

    @Test func theDatabaseRefusingOneLineDoesNotSinkTheOthers() async throws {
        try await withIntakeDatabase { intake, db, _ in
            // A rule the code does not know: the database refuses "bad" texts.
            try await db.exec("ALTER TABLE replies ADD CONSTRAINT \"reply text must not say bad\" CHECK (text IS NULL OR text <> 'bad')")
            let lines = [
                HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "good")),
                HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "bad")),
                HostileTable.object(HostileTable.fields(delivery: 1, action: "love_it")),
            ]
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("refused-\(UUID()).jsonl").path
            try Data(lines.joined(separator: [0x0A])).write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let report = try await intake.ingest(file: path)
            #expect(report.stored == 2)
            #expect(report.bad.map(\.line) == [2])
            #expect(report.bad.first?.error.code == "reply_refused")
            #expect(report.bad.first?.error.message.contains("reply text must not say bad") == true)

            // And over HTTP: 422, not 500.
            try await withServer(intake, limits: unlimited) { port in
                let body = HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "bad"))
                let response = try await RawHTTP.exchange(port: port, RawHTTP.request(body: body))
                #expect(response?.status == 422)
                #expect(response?.json?["error"] == "reply_refused")
            }
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 2)
        }
    }
}

struct TableOutcome: Sendable {
    var byStatus: [Int: Int]
    var serverErrors: Int
    var unanswered: Int
    var mismatches: [String]
}
