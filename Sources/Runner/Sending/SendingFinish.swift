/// How a source's sending ended in this run.
enum SendingFinish: Sendable, Hashable {
    case done, paused, cancelled, expired, stopped
    /// APNs or the database stayed away beyond its budget: the next run continues (exit 75).
    case outage(String)
}
