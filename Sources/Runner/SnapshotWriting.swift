import NIOConcurrencyHelpers

/// Whether a campaign's audience is still being written by a run's child
/// task, whether that task should stop starting slices, and whether it may
/// start the next one yet.
///
/// A slice is started only while the rows written and not yet read by the
/// campaign's claims are at most `lead`, or when a claim found nothing to
/// take: the audience is written shortly before it is sent, not minutes
/// ahead. Written far ahead, a large campaign's ledger pages left the
/// database's buffers and a checkpoint came between a page's insert and its
/// claim, which then wrote the whole page to the WAL again.
final class SnapshotWriting: Sendable {
    private struct State {
        var writing = true
        var stopRequested = false
        var written: Int
        var slices = 0
        var read = 0
        var caughtUp = false
    }
    private let state: NIOLockedValueBox<State>
    let lead: Int

    /// `written`: the rows of the slices written before sending began.
    init(written: Int, lead: Int) {
        state = NIOLockedValueBox(State(written: written))
        self.lead = lead
    }

    var isWriting: Bool { state.withLockedValue { $0.writing } }
    var stopRequested: Bool { state.withLockedValue { $0.stopRequested } }
    func finish() { state.withLockedValue { $0.writing = false } }
    func requestStop() { state.withLockedValue { $0.stopRequested = true } }

    /// A slice of `rows` committed.
    func wrote(_ rows: Int) {
        state.withLockedValue {
            $0.written += rows
            $0.slices += 1
            $0.caughtUp = false
        }
    }

    /// The slices committed so far: a claim notes them before it reads.
    var slicesWritten: Int { state.withLockedValue { $0.slices } }

    /// A claim read `read` rows of the campaign's ledger; `empty`: it found
    /// none to take, which says the claims caught up only when no slice
    /// committed since it began (`slicesBefore`).
    func claimed(read: Int, empty: Bool, slicesBefore: Int) {
        state.withLockedValue {
            $0.read += read
            $0.caughtUp = empty && slicesBefore == $0.slices
        }
    }

    /// Whether the next slice may start now.
    var mayWriteNext: Bool {
        state.withLockedValue { $0.caughtUp || $0.written - $0.read <= lead }
    }
}
