import Store

/// Herald's release number and the commit the binary was built from.
enum HeraldVersion {
    /// The release number: the one place it is written (scripts/package names
    /// the archive after it, scripts/check-jobs holds Jobs/ to it).
    static let number = "1.0.0"

    /// `herald --version`: "1.0.0 (commit 0123456789ab, 2026-11-25)", with
    /// "modified" when tracked files differed from the commit at build time.
    static var text: String {
        guard !BuildCommit.id.isEmpty else { return "\(number) (built outside a git checkout)" }
        var parts = ["commit \(BuildCommit.id.prefix(12))"]
        if !BuildCommit.date.isEmpty { parts.append(BuildCommit.date) }
        if BuildCommit.modified { parts.append("modified") }
        return "\(number) (\(parts.joined(separator: ", ")))"
    }
}
