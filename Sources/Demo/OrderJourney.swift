import APNs
import APNsSimulator
import AppServer
import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import Logging
import PostgresNIO
import Runner
import Store

/// The demo's journey, "After the order" (Sql/sample_data.sql), moved by real runs: the
/// shop reports orders delivered, which enter their users; a run asks each how it went;
/// the devices answer in their own languages; a run sends the apology or the thanks each
/// answer calls for; some of the silent buy (the goal); two days pass (the demo moves the
/// clock) and a run reminds the rest once. What the devices did decides each member's
/// path here, and the analysts' view of the journey must show the same counts.
struct OrderJourney: Sendable {
    let client: Database
    let job: HeraldJob
    let apns: APNsConfiguration
    let simulator: APNsSimulator
    let apps: AppFleet
    let fleet: DeviceFleet
    let devices: [SampleDevice]
    let intake: URL
    let issuer: AppTokenIssuer
    let logger: Logger

    /// Chance that a sample user of the shop has an order delivered; chance that a user
    /// who has not answered buys again before the two days are up.
    static let ordered = 0.7, buysAgain = 0.25

    func execute() async throws -> OrderJourneyReport {
        var report = OrderJourneyReport()
        // The shop's backend reports the orders delivered: each stored event enters its user.
        let shoppers = Set(devices.filter { $0.app == AppRecord.defaultName }.map(\.user)).sorted()
        for user in shoppers where Purchases.draw("delivered \(user)") < Self.ordered {
            if try await Purchases.report("order_delivered", of: user, key: "demo-delivered-\(user)", intake: intake, issuer: issuer) {
                report.ordersDelivered += 1
            }
        }
        report.entered = Int(try await one("""
            SELECT count(*) FROM journey_members m JOIN journeys j ON j.id = m.journey_id WHERE j.name = 'After the order'
            """) ?? 0)

        // The first run asks them; the devices answer.
        let ask = try await sendAndCollect(&report)
        let question = try await one("SELECT id FROM campaigns WHERE name = 'After the order: ask'")
        let asked = ask.filter { (try? HeraldNotification(json: Data($0.payload)))?.campaign == question }
        report.devices = try await fleet.answer(asked, intake: intake)

        // What each user meant, from what their devices did (a user may have two).
        let userOf = Dictionary(devices.map { ($0.token, $0.user) }, uniquingKeysWith: { a, _ in a })
        var meant: [String: OrderJourneyReport.Path] = [:]
        for n in asked {
            guard let user = userOf[n.deviceToken] else { continue }
            let path = Self.path(of: n, locale: fleet.locales[n.deviceToken] ?? "en")
            if let path, path < meant[user] ?? .silent { meant[user] = path }
        }

        // The second run sends what the answers call for.
        _ = try await sendAndCollect(&report)
        // Some of those who said nothing buy again: the goal takes them out.
        var buyers = Set<String>()
        for try await user in try await client.query(try SQLQueries.named("demo/journey-listeners").query([:]), logger: logger)
            .decode(String.self) where Purchases.draw("again \(user)") < Self.buysAgain {
            if try await Purchases.report("purchase", of: user, key: "demo-again-\(user)", amount: "35.00", intake: intake, issuer: issuer) {
                buyers.insert(user)
            }
        }
        // Two days pass; the third run reminds the rest.
        try await client.query(try SQLQueries.named("demo/journey-two-days-later").query([:]), logger: logger)
        _ = try await sendAndCollect(&report)

        let members = try await client.query("""
            SELECT u.external_id FROM journey_members m JOIN journeys j ON j.id = m.journey_id JOIN users u ON u.id = m.user_id
            WHERE j.name = 'After the order'
            """, logger: logger)
        for try await user in members.decode(String.self) {
            report.expected[meant[user] ?? (buyers.contains(user) ? .bought : .silent), default: 0] += 1
        }
        for try await (kind, to, count) in try await client.query(try SQLQueries.named("demo/journey-paths").query([:]), logger: logger)
            .decode((String, String, Int64).self) {
            report.flow.append((kind, to, Int(count)))
        }
        for try await (name, sent, codes) in try await client.query(try SQLQueries.named("demo/journey-sent").query([:]), logger: logger)
            .decode((String, Int64, Int64).self) {
            report.sent.append((name, Int(sent), Int(codes)))
        }
        return report
    }

    /// The one number a statement answers.
    func one(_ sql: PostgresQuery) async throws -> Int64? {
        for try await value in try await client.query(sql, logger: logger).decode(Int64.self) { return value }
        return nil
    }

    /// A run, and the campaign notifications the simulator accepted during it.
    func sendAndCollect(_ report: inout OrderJourneyReport) async throws -> [AcceptedNotification] {
        let before = await simulator.accepted.count
        report.runs.append(try await job.send(client: client, apns: apns))
        return try await apps.handleRefreshes(Array(await simulator.accepted.dropFirst(before)))
    }

    /// The path a device's answer to the question sends its user on (nil: it said nothing).
    static func path(of n: AcceptedNotification, locale: String) -> OrderJourneyReport.Path? {
        guard let herald = try? HeraldNotification(json: Data(n.payload)), !DeviceFleet.isOff(n.deviceToken),
              let (action, text) = DeviceFleet.choice(for: herald, locale: locale) else { return nil }
        switch action {
        case "comment": return DeviceFleet.isComplaint(text) ? .complained : .answered
        case ReplyAction.defaultActionIdentifier, ReplyAction.dismissActionIdentifier: return nil
        default: return .declined
        }
    }
}

/// What the demo's journey did: each path's count as the devices and the backend made it,
/// beside the analysts' view of the journey.
public struct OrderJourneyReport: Sendable, CustomStringConvertible {
    /// A member's way out of the listening step, in the order the journey's edges are tried.
    public enum Path: Int, Sendable, Comparable, CaseIterable {
        case complained, answered, declined, bought, silent

        public static func < (a: Path, b: Path) -> Bool { a.rawValue < b.rawValue }

        /// The edge of analyst.journey_flow this path is (its kind and where it leads).
        var edge: (kind: String, to: String) {
            switch self {
            case .complained: ("text", "sorry")
            case .answered: ("action", "thanks")
            case .declined: ("reply", "out")
            case .bought: ("goal", "out")
            case .silent: ("timeout", "remind")
            }
        }

        var label: String {
            switch self {
            case .complained: "typed that it came damaged or late → an apology with a code"
            case .answered: "typed anything else → a thank-you"
            case .declined: "tapped \"no thanks\" → out"
            case .bought: "bought again → the goal"
            case .silent: "said nothing for two days → one reminder"
            }
        }
    }

    public var ordersDelivered = 0
    public var entered = 0
    public var runs: [RunSummary] = []
    public var devices = DeviceFleet.Report()
    /// Members by the path what their devices did (and the backend's purchases) calls for.
    public var expected: [Path: Int] = [:]
    /// analyst.journey_flow out of the listening step: kind, where it led, members.
    public var flow: [(kind: String, to: String, members: Int)] = []
    /// Each message of the journey: its notifications sent, and codes drawn.
    public var sent: [(message: String, sent: Int, codes: Int)] = []

    /// Members on `path` as analysts see them.
    public func seen(_ path: Path) -> Int {
        flow.filter { $0.kind == path.edge.kind && $0.to == path.edge.to }.reduce(0) { $0 + $1.members }
    }

    /// Whether every path's count in the analysts' view is what the devices did.
    public var matches: Bool {
        Path.allCases.allSatisfy { seen($0) == expected[$0, default: 0] }
            && flow.reduce(0) { $0 + $1.members } == entered
    }

    public var description: String {
        var lines = ["\(ordersDelivered) orders delivered (POST /v1/conversions, order_delivered): \(entered) users entered"]
        for run in runs {
            if let line = run.journeys.line { lines.append(line) }
        }
        lines.append("the question's devices: \(devices)")
        lines.append("  path (from the listening step)                                  devices did   analyst.journey_flow")
        for path in Path.allCases {
            let label = path.label.padding(toLength: 64, withPad: " ", startingAt: 0)
            lines.append("  \(label) \(String(expected[path, default: 0]).leftPadded(11))   \(String(seen(path)).leftPadded(20))")
        }
        lines.append("  sent: " + sent.map { "\($0.message) \($0.sent)" + ($0.codes > 0 ? " (\($0.codes) codes drawn)" : "") }
            .joined(separator: ", "))
        lines.append(matches ? "  every path matches what the devices did" : "  MISMATCH: the journey's paths differ from what the devices did")
        return lines.joined(separator: "\n")
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
