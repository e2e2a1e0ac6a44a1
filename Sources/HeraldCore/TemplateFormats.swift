import Foundation
import Synchronization

/// Formats a template's numbers, money and dates for one device: its locale
/// (`device.locale`) and its user's time zone.
public struct TemplateFormats: Sendable {
    public var locale: String
    public var timeZone: String?
    let cache: TemplateFormatCache

    public init(locale: String, timeZone: String?, cache: TemplateFormatCache) {
        self.locale = locale
        self.timeZone = timeZone
        self.cache = cache
    }

    /// The value formatted by `filter` (number, money or date); nil when it
    /// is not a number or a date.
    func format(_ value: String, _ filter: Template.Filter) -> String? {
        switch filter {
        case .number:
            if let plain = PlainNumber(value) { return plain.grouped(cache.separators(locale)) }
            guard let d = Double(value), d.isFinite else { return nil }
            return cache.decimal(d, locale: locale)
        case .money(let currency):
            guard let d = Double(value.trimmingCharacters(in: .whitespaces)), d.isFinite else { return nil }
            return cache.money(d, currency: currency, locale: locale)
        case .date(let style):
            guard let (date, dateOnly) = Self.date(value) else { return nil }
            return cache.date(date, style: style, locale: locale, timeZone: dateOnly ? "UTC" : timeZone ?? "UTC")
        default:
            return value
        }
    }

    /// A date as data holds it: `2026-12-06` (a day, shown as that day
    /// everywhere), an ISO 8601 time with its offset, or epoch seconds.
    static func date(_ text: String) -> (Date, dateOnly: Bool)? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.utf8.count == 10, let d = try? Date("\(t)T12:00:00Z", strategy: .iso8601) { return (d, true) }
        if let d = try? Date(t, strategy: .iso8601) { return (d, false) }
        if let s = Double(t), s.isFinite { return (Date(timeIntervalSince1970: s), false) }
        return nil
    }
}

/// A number written plainly (`-1250.5`): grouped by hand, because a
/// NumberFormatter alone is over a device's render budget.
struct PlainNumber {
    var negative: Bool
    var whole: ArraySlice<UInt8>
    var fraction: ArraySlice<UInt8>?

    init?(_ text: String) {
        let bytes = Array(text.utf8)
        var s = bytes[...]
        negative = s.first == UInt8(ascii: "-")
        if negative { s = s.dropFirst() }
        let isDigit = { (b: UInt8) in b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
        let dot = s.firstIndex(of: UInt8(ascii: "."))
        let w = s[..<(dot ?? s.endIndex)]
        guard !w.isEmpty, w.allSatisfy(isDigit) else { return nil }
        whole = w
        if let dot {
            let f = s[(dot + 1)...]
            guard !f.isEmpty, f.allSatisfy(isDigit) else { return nil }
            fraction = f
        }
    }

    func grouped(_ sep: TemplateFormatCache.Separators) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(whole.count * 2 + 8)
        if negative { out.append(UInt8(ascii: "-")) }
        let n = whole.count
        for (i, d) in whole.enumerated() {
            if i > 0, (n - i) % 3 == 0 { out.append(contentsOf: sep.grouping.utf8) }
            out.append(d)
        }
        if let fraction {
            out.append(contentsOf: sep.decimal.utf8)
            out.append(contentsOf: fraction)
        }
        return String(decoding: out, as: UTF8.self)
    }
}
