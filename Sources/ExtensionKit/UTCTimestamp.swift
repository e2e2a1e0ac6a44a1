import Foundation

/// RFC 3339 timestamps without Foundation's formatters, so the output is the
/// same on every platform and locale.
///
/// Writing gives `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds), or with
/// `milliseconds` `YYYY-MM-DDTHH:MM:SS.mmmZ`. Reading accepts `Z` or a
/// `±HH:MM` offset and an optional fraction, which is dropped, or with
/// `keepingMilliseconds` kept to the millisecond.
enum UTCTimestamp {
    private static let secondsPerDay: Int64 = 86_400

    static func format(_ date: Date, milliseconds: Bool = false) -> String {
        let whole = format(date)
        guard milliseconds else { return whole }
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) - Int64(date.timeIntervalSince1970.rounded(.down)) * 1000
        var fraction = "."
        append(ms, width: 3, to: &fraction)
        return String(whole.dropLast()) + fraction + "Z"
    }

    static func format(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let (days, secondOfDay) = floorDivMod(seconds, secondsPerDay)
        let (year, month, day) = civil(fromDays: days)
        var text = ""
        text.reserveCapacity(20)
        append(year, width: 4, to: &text)
        text += "-"
        append(month, width: 2, to: &text)
        text += "-"
        append(day, width: 2, to: &text)
        text += "T"
        append(secondOfDay / 3600, width: 2, to: &text)
        text += ":"
        append(secondOfDay / 60 % 60, width: 2, to: &text)
        text += ":"
        append(secondOfDay % 60, width: 2, to: &text)
        text += "Z"
        return text
    }

    static func parse(_ text: String, keepingMilliseconds: Bool = false) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0

        func digits(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + count] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }

        guard let year = digits(4), expect("-"),
              let month = digits(2), expect("-"),
              let day = digits(2), expect("Tt"),
              let hour = digits(2), expect(":"),
              let minute = digits(2), expect(":"),
              let second = digits(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second < 60
        else { return nil }

        var milliseconds: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                if index - start < 3 { milliseconds = milliseconds * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
                index += 1
            }
            guard index > start else { return nil }
            for _ in min(index - start, 3)..<3 { milliseconds *= 10 }
        }

        var offset: Int64 = 0
        if expect("Zz") {
            offset = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHours = digits(2), expect(":"), let offsetMinutes = digits(2),
                  offsetHours < 24, offsetMinutes < 60
            else { return nil }
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }

        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * secondsPerDay + hour * 3600 + minute * 60 + second - offset
        guard keepingMilliseconds else { return Date(timeIntervalSince1970: TimeInterval(seconds)) }
        return Date(timeIntervalSince1970: TimeInterval(seconds * 1000 + milliseconds) / 1000)
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, H. Hinnant's algorithms)

    private static func floorDivMod(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b
        let r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func append(_ value: Int64, width: Int, to text: inout String) {
        let digits = String(value)
        if digits.count < width {
            text += String(repeating: "0", count: width - digits.count)
        }
        text += digits
    }
}
