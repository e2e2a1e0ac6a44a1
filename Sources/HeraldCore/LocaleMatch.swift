import Foundation

/// The fallback chain of localized text (campaign content, action titles).
public enum LocaleMatch {
    /// The key of `available` to show for `wanted`: the exact tag (case and
    /// `_`/`-` ignored), then the tag with trailing parts dropped
    /// (`zh-Hans-CN` → `zh-Hans` → `zh`), then any entry of the same language
    /// (the first in sorted order), then `defaultKey`.
    public static func best(for wanted: String, among available: some Collection<String>, default defaultKey: String) -> String {
        Table(available, default: defaultKey).best(for: wanted)
    }

    /// The keys of a collection prepared once for many look-ups (a run
    /// resolves every device's locale against the same campaign text).
    public struct Table: Sendable {
        private var byNormal: [String: String] = [:]
        private let defaultKey: String
        /// Normalized keys in sorted order, for the same-language fallback.
        private let sortedNormal: [String]

        public init(_ available: some Collection<String>, default defaultKey: String) {
            for key in available { byNormal[LocaleMatch.normalize(key)] = key }
            self.defaultKey = defaultKey
            sortedNormal = byNormal.keys.sorted()
        }

        public func best(for wanted: String) -> String {
            let wanted = LocaleMatch.normalize(wanted)
            var candidate = Substring(wanted)
            while !candidate.isEmpty {
                if let key = byNormal[String(candidate)] { return key }
                guard let dash = candidate.lastIndex(of: "-") else { break }
                candidate = candidate[..<dash]
            }
            let language = wanted.split(separator: "-").first.map(String.init) ?? wanted
            if let key = sortedNormal.first(where: { $0.split(separator: "-").first.map(String.init) == language }) {
                return byNormal[key] ?? defaultKey
            }
            return defaultKey
        }
    }

    /// `_` as `-`, lower case. Tags are ASCII, handled without Foundation:
    /// a run normalizes every device's locale, too often for NSString's replacing.
    public static func normalize(_ tag: String) -> String {
        guard tag.utf8.allSatisfy({ $0 < 0x80 }) else {
            return tag.replacingOccurrences(of: "_", with: "-").lowercased()
        }
        guard tag.utf8.contains(where: { $0 == UInt8(ascii: "_") || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
            return tag
        }
        return String(decoding: tag.utf8.map { byte -> UInt8 in
            if byte == UInt8(ascii: "_") { return UInt8(ascii: "-") }
            if (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) { return byte + 32 }
            return byte
        }, as: UTF8.self)
    }

    /// A BCP 47 tag as apps report them (`en`, `fr-CA`, `zh-Hans`, `zh_Hant_TW`).
    public static func isTag(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let first = parts.first, (2...3).contains(first.count),
              first.unicodeScalars.allSatisfy({ $0.isASCII && CharacterSet.letters.contains($0) }) else { return false }
        return parts.dropFirst().allSatisfy { p in
            (1...8).contains(p.count) && p.unicodeScalars.allSatisfy { $0.isASCII && CharacterSet.alphanumerics.contains($0) }
        }
    }
}
