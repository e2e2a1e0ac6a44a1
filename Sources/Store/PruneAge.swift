import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// An age on the command line: a whole number and a unit, `90d`, `12h`,
/// `30m`, `45s`, `2w`.
public enum PruneAge {
    public static func parse(_ text: String) throws(InputError) -> Duration {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
        guard let unit = text.last, let factor = units[unit],
              let n = Int64(text.dropLast()), n > 0, n <= Int64.max / factor / 2 else {
            throw InputError(
                "--older-than \"\(text)\" is not an age; write a whole number and a unit: 90d, 12h, 30m, 45s or 2w")
        }
        return .seconds(n * factor)
    }
}
