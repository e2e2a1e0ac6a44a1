import Foundation
import Synchronization

/// The formatters of one campaign's run, kept per locale (and time zone):
/// made once, used under a lock because Foundation's formatters are not
/// safe to share between threads.
public final class TemplateFormatCache: Sendable {
    struct Separators: Sendable {
        var grouping: String
        var decimal: String
    }

    private struct State {
        var separators: [String: Separators] = [:]
        var decimals: [String: NumberFormatter] = [:]
        var money: [String: NumberFormatter] = [:]
        var dates: [String: DateFormatter] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    func separators(_ locale: String) -> Separators {
        state.withLock { s in
            if let known = s.separators[locale] { return known }
            let l = Locale(identifier: locale)
            let made = Separators(grouping: l.groupingSeparator ?? ",", decimal: l.decimalSeparator ?? ".")
            s.separators[locale] = made
            return made
        }
    }

    func decimal(_ value: Double, locale: String) -> String? {
        state.withLock { s in
            let f = s.decimals[locale] ?? {
                let f = NumberFormatter()
                f.locale = Locale(identifier: locale)
                f.numberStyle = .decimal
                f.maximumFractionDigits = 6
                return f
            }()
            s.decimals[locale] = f
            return f.string(from: NSNumber(value: value))
        }
    }

    func money(_ value: Double, currency: String, locale: String) -> String? {
        state.withLock { s in
            let key = locale + "|" + currency
            let f = s.money[key] ?? {
                let f = NumberFormatter()
                f.locale = Locale(identifier: locale)
                f.numberStyle = .currency
                f.currencyCode = currency
                return f
            }()
            s.money[key] = f
            return f.string(from: NSNumber(value: value))
        }
    }

    func date(_ date: Date, style: Template.DateStyle, locale: String, timeZone: String) -> String? {
        state.withLock { s in
            let key = locale + "|" + timeZone + "|" + style.rawValue
            let f = s.dates[key] ?? {
                let f = DateFormatter()
                f.locale = Locale(identifier: locale)
                f.timeZone = TimeZone(identifier: timeZone) ?? TimeZone(identifier: "UTC")
                f.timeStyle = .none
                f.dateStyle = switch style {
                case .short: .short
                case .medium: .medium
                case .long: .long
                case .full: .full
                }
                return f
            }()
            s.dates[key] = f
            return f.string(from: date)
        }
    }
}
