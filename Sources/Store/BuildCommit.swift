import Embedded
import Foundation

/// The commit the binary was built from, for `herald --version`.
public enum BuildCommit {
    /// The commit's id, "" when the build was not made in a git checkout.
    public static var id: String { EmbeddedFiles.commit }
    /// The commit's date, YYYY-MM-DD.
    public static var date: String { EmbeddedFiles.commitDate }
    /// Whether tracked files differed from the commit at build time.
    public static var modified: Bool { EmbeddedFiles.modified }
}
