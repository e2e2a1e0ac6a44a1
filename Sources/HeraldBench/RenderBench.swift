import Foundation
import HeraldCore

/// `herald-bench render [-n N]`: CPU per device of building a poster's
/// payload with and without templates, back to back on one core: the
/// same campaign as plain text, then with three variables, one default and
/// one number filter (the personalized poster of the target), each
/// device with its own values. Prints both and the difference, which is
/// what rendering costs a device.
enum RenderBench {
    static func run(_ arguments: [String]) -> Int32 {
        var count = 1_000_000
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "-n":
                guard let value = iterator.next().flatMap(Int.init), value > 0 else { return usage() }
                count = value
            default:
                return usage()
            }
        }
        let plain = Campaign(
            id: 1, name: "Autumn", kind: .poster,
            content: ["en": LocalizedText(title: "Hello, your points", body: "Your points expire on Sunday"),
                      "fr": LocalizedText(title: "Bonjour, vos points", body: "Vos points expirent dimanche")],
            mediaURL: "https://cdn.example.com/p.gif", mediaType: "gif", categoryID: "poster.v1")
        var personal = plain
        personal.content = [
            "en": LocalizedText(title: "{{ user.first_name | default: \"Hello\" }}, your points",
                                body: "Your {{ recipient.points | number }} points expire on {{ recipient.day }}"),
            "fr": LocalizedText(title: "{{ user.first_name | default: \"Bonjour\" }}, vos points",
                                body: "Vos {{ recipient.points | number }} points expirent {{ recipient.day }}"),
        ]
        do {
            let a = try measure(PayloadBuilder(campaign: plain), count: count)
            let b = try measure(PayloadBuilder(campaign: personal), count: count)
            let a2 = try measure(PayloadBuilder(campaign: plain), count: count)
            let base = min(a.cpu, a2.cpu)
            print(String(format: "render: plain %.3f µs of CPU a device (%d bytes), personalized %.3f µs (%d bytes); rendering %.3f µs a device (%d devices each, best of two plain rounds)",
                         base, a.bytes, b.cpu, b.bytes, b.cpu - base, count))
            return 0
        } catch {
            FileHandle.standardError.write(Data("herald-bench render: \(error)\n".utf8))
            return 1
        }
    }

    static func measure(_ builder: PayloadBuilder, count: Int) throws -> (cpu: Double, bytes: Int) {
        let names = ["Anna", "Luc", "Mei", nil, "Ólafur", "Zoë", nil, "Sam"]
        let days = ["Sunday", "Monday", "dimanche"]
        var targets: [DeliveryTarget] = []
        for i in 0..<1024 {
            let values: [String?] = builder.variables.map { v in
                switch v.description {
                case "user.first_name": names[i % names.count]
                case "recipient.points": String(1_000 + i * 37)
                case "recipient.day": days[i % days.count]
                default: nil
                }
            }
            targets.append(DeliveryTarget(deliveryID: Int64(i), deviceToken: String(repeating: "a", count: 64),
                                          environment: .production, locale: i % 2 == 0 ? "en-US" : "fr-FR",
                                          personal: PersonalValues(values: values, timeZone: "Europe/Paris")))
        }
        var bytes = 0
        let before = cpuMicroseconds()
        for i in 0..<count {
            var t = targets[i & 1023]
            t.deliveryID = Int64(i)
            let parts = try builder.parts(for: t)
            bytes &+= builder.payload(parts, for: t, replyToken: "UTG3JXNbLl8qh3Nzh1Gd1w", sealed: nil).count
        }
        return ((cpuMicroseconds() - before) / Double(count), bytes / count)
    }

    static func usage() -> Int32 {
        FileHandle.standardError.write(Data("usage: herald-bench render [-n N]\n".utf8))
        return 2
    }
}
