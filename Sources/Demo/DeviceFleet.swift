import APNsSimulator
import Crypto
import ExtensionKit
import Foundation
import Logging

/// Plays the devices: for each notification the APNs simulator accepted, it
/// does what the app's extensions would — parse the Herald part, open the
/// sealed fields with the device's own key, choose a button or type an answer
/// — and POSTs the reply to the intake, like the app.
public struct DeviceFleet: Sendable {
    /// Device token → that device's private key (devices without one never get sealed fields).
    public let keys: [String: Curve25519.KeyAgreement.PrivateKey]
    /// Device token → the device's locale (what its user types in).
    public var locales: [String: String]
    public let logger: Logger

    public init(keys: [String: Curve25519.KeyAgreement.PrivateKey], locales: [String: String] = [:], logger: Logger) {
        self.keys = keys
        self.locales = locales
        self.logger = logger
    }

    /// The sample data's devices: device n's token is SHA-256("herald demo token n") and its
    /// private key SHA-256("herald demo device n") (Sql/sample_data.sql).
    public static func sampleDevices(count: Int = 400, logger: Logger) -> DeviceFleet {
        var keys: [String: Curve25519.KeyAgreement.PrivateKey] = [:]
        for n in 1...count {
            let token = sampleToken(n)
            let seed = Data(SHA256.hash(data: Data("herald demo device \(n)".utf8)))
            keys[token] = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: seed)
        }
        return DeviceFleet(keys: keys, logger: logger)
    }

    /// Sample device n's APNs token.
    public static func sampleToken(_ n: Int) -> String {
        SHA256.hash(data: Data("herald demo token \(n)".utf8)).map { String(format: "%02x", $0) }.joined()
    }

    public struct Report: Sendable, CustomStringConvertible {
        public var notifications = 0
        public var sealedOpened = 0
        public var sealedFailed = 0
        public var ignored = 0
        public var posted = 0
        public var stored = 0
        public var duplicates = 0
        public var refused: [Int: Int] = [:]
        /// Notifications whose category the device had not registered (iOS would show no buttons).
        public var withoutButtons = 0
        /// Notifications that reached their device (its service extension ran)…
        public var arrived = 0
        /// …and those whose device stayed off for the whole expiry, as some do:
        /// no receipt, no reply (APNs said 200 all the same).
        public var neverArrived = 0
        /// Receipts posted (contract 8): stored, and answered as duplicates.
        public var receiptsStored = 0
        public var receiptsDuplicate = 0

        public var description: String {
            var s = "devices: \(notifications) notifications, \(sealedOpened) sealed envelopes opened"
            if sealedFailed > 0 { s += " (\(sealedFailed) failed to open)" }
            s += ", \(ignored) ignored by their users, \(posted) replies posted: \(stored) stored (202), \(duplicates) retries answered 200"
            s += "; \(withoutButtons) shown without their buttons"
            s += "; \(arrived) arrived (\(receiptsStored) receipts stored, \(receiptsDuplicate) duplicates), \(neverArrived) never arrived (device off)"
            if !refused.isEmpty { s += ", refused: \(refused.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "))" }
            return s
        }
    }

    /// Answers the notifications; every `retryEvery`-th reply is sent twice,
    /// as an app whose first attempt timed out would.
    public func answer(_ accepted: [AcceptedNotification], intake: URL, concurrency: Int = 16,
                       retryEvery: Int = 10) async throws -> Report {
        var report = Report()
        let builder = ReplyRequestBuilder(baseURL: intake)
        let receiptBuilder = ReceiptRequestBuilder(baseURL: intake)
        var requests: [(ReplyHTTPRequest, repeats: Int)] = []
        var receipts: [Receipt] = []
        for (i, notification) in accepted.enumerated() {
            report.notifications += 1
            guard let herald = try? HeraldNotification(json: Data(notification.payload)) else { continue }
            if Self.isOff(notification.deviceToken) {
                report.neverArrived += 1
                continue
            }
            report.arrived += 1
            var opened: Bool?
            if let envelope = herald.sealed {
                opened = keys[notification.deviceToken].map {
                    (try? EnvelopeOpener(privateKey: $0).openFields(envelope, campaign: herald.campaign, delivery: herald.delivery)) != nil
                } ?? false
            }
            if herald.replyToken != nil {
                receipts.append(try receiptBuilder.receipt(
                    for: herald, arrivedAt: Date(), sealedOpened: opened,
                    mediaAttached: herald.media.map { _ in !Self.mediaFails(herald.delivery) }))
            }
            if let opened {
                guard opened else {
                    report.sealedFailed += 1
                    continue
                }
                report.sealedOpened += 1
            }
            guard let (action, text) = Self.choice(for: herald, locale: locales[notification.deviceToken] ?? "en") else {
                report.ignored += 1
                continue
            }
            let occurred = Date()
            let request = try builder.request(for: herald, action: action, text: text, occurredAt: occurred,
                                              replyID: Self.replyID(delivery: herald.delivery))
            requests.append((request, i % retryEvery == 0 ? 2 : 1))
        }
        try await withThrowingTaskGroup(of: [Int].self) { group in
            var running = 0
            for (request, repeats) in requests {
                if running >= concurrency, let statuses = try await group.next() {
                    running -= 1
                    report.count(statuses)
                }
                group.addTask { try await Self.post(request, times: repeats) }
                running += 1
            }
            for try await statuses in group { report.count(statuses) }
        }
        // The receipts, as an app that queued them sends them: 25 a request.
        for start in stride(from: 0, to: receipts.count, by: 25) {
            let request = try receiptBuilder.request(Array(receipts[start..<min(start + 25, receipts.count)]))
            let answer = try await DemoHTTP.send(request)
            let body = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
            report.receiptsStored += body?["stored"] as? Int ?? 0
            report.receiptsDuplicate += body?["duplicates"] as? Int ?? 0
        }
        return report
    }

    /// Devices that stay off for a notification's whole expiry: about 7%, by token.
    static func isOff(_ token: String) -> Bool {
        Array(SHA256.hash(data: Data("herald demo off \(token)".utf8)))[0] < 18
    }

    /// A media download that fails (a flaky network): about 3%, by delivery.
    static func mediaFails(_ delivery: Int64) -> Bool {
        UInt64(bitPattern: delivery) &* 0x9E37_79B9_7F4A_7C15 % 100 < 3
    }

    static func post(_ request: ReplyHTTPRequest, times: Int) async throws -> [Int] {
        var statuses: [Int] = []
        for _ in 0..<times {
            statuses.append(try await DemoHTTP.send(request).status)
        }
        return statuses
    }

    /// A stable id per delivery, so a replayed demo sends the same reply ids.
    static func replyID(delivery: Int64) -> UUID {
        let digest = Array(SHA256.hash(data: Data("herald demo reply \(delivery)".utf8)))
        var bytes = Array(digest.prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// What users type, by language, and whether the text says something went wrong (the
    /// damaged box, the late parcel): what the demo's journey branches on, known here as
    /// the user meant it, not by Herald's text rules.
    static let answers: [String: [(text: String, complaint: Bool)]] = [
        "en": [("Arrived a day early, thanks!", false), ("The box was damaged but the shoes are fine.", true),
               ("Took two weeks — too slow.", true), ("Love it ❤️", false)],
        "zh": [("非常满意，包装很好。", false), ("配送有点慢。", true), ("质量不错，会再买。", false)],
        "fr": [("Livraison rapide, très bien 👍", false), ("Le colis était abîmé.", true)],
        "de": [("Schnell und gut verpackt.", false), ("Leider zu spät angekommen.", true)],
        "ja": [("とても良かったです！", false), ("配送が少し遅かった。", true)],
        "es": [("¡Llegó rapidísimo!", false), ("La caja llegó dañada.", true)],
    ]

    /// Whether `text` is one of the answers that say something went wrong.
    static func isComplaint(_ text: String?) -> Bool {
        guard let text else { return false }
        return answers.values.contains { $0.contains { $0.text == text && $0.complaint } }
    }

    /// What this device's user does, decided by the delivery id so that a demo
    /// run is reproducible: nil when the user ignores the notification.
    static func choice(for n: HeraldNotification, locale: String) -> (action: String, text: String?)? {
        let roll = Int(UInt64(bitPattern: n.delivery &* 2_654_435_761) % 100)
        switch n.kind {
        case .poster:
            if roll < 50 { return ("love_it", nil) }
            if roll < 70 { return ("dont_care", nil) }
            if roll < 85 { return (ReplyAction.defaultActionIdentifier, nil) }
            return nil
        case .flashSale:
            if roll < 45 { return ("reserve", nil) }
            if roll < 65 { return ("remind", nil) }
            if roll < 80 { return (ReplyAction.dismissActionIdentifier, nil) }
            return nil
        case .feedback:
            if roll < 60 {
                let language = String(locale.prefix { $0 != "-" && $0 != "_" })
                let texts = answers[language] ?? answers["en"] ?? []
                return ("comment", texts.isEmpty ? nil : texts[Int(n.delivery % Int64(texts.count))].text)
            }
            if roll < 75 { return ("dont_care", nil) }
            return nil
        default:
            return nil
        }
    }
}

extension DeviceFleet.Report {
    mutating func count(_ statuses: [Int]) {
        for (i, status) in statuses.enumerated() {
            posted += 1
            switch status {
            case 202: stored += 1
            case 200 where i > 0: duplicates += 1
            default: refused[status, default: 0] += 1
            }
        }
    }
}
