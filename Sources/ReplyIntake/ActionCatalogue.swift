import ExtensionKit
import Foundation
import HeraldCore
import NIOConcurrencyHelpers
import Store

/// The categories' actions that replies are checked against, read from the
/// database at most once per `maxAge` instead of once per batch.
///
/// What is stored is what the committed catalogue allows (Sql/0018): this
/// copy only says why a reply was refused, so it is read when a batch has a
/// refusal, not for every batch (reading it was 80 µs of PostgreSQL's
/// planning per intake batch). A refusal explained with a copy read before
/// its batch began is checked again with one read after, so a reply the
/// database refused is told the reason as committed.
final class ActionCatalogue: Sendable {
    typealias Actions = [String: [CategoryAction]]

    private struct Copy {
        var actions: Actions
        /// When the read that made it began: it shows every change committed before.
        var readAt: ContinuousClock.Instant
    }

    private let read: @Sendable () async throws -> Actions
    let maxAge: Duration
    private let copy = NIOLockedValueBox<Copy?>(nil)

    init(maxAge: Duration = .seconds(1), read: @escaping @Sendable () async throws -> Actions) {
        self.maxAge = maxAge
        self.read = read
    }

    convenience init(store: ReplyStore, maxAge: Duration = .seconds(1)) {
        self.init(maxAge: maxAge) { try await store.categoryActions() }
    }

    /// Why each body is refused (nil: it passes), checked against its
    /// delivery (none in `targets`: no such delivery) and the catalogue, as
    /// `ReplyRules.check` does, in order. `since`: when the bodies had all
    /// arrived; a refusal for the catalogue's sake made with a copy read
    /// before then is made again with a copy read after. A database fault
    /// throws.
    /// `readNow`: with a copy read at `since` or later, whatever its age.
    func check(
        _ bodies: [ReplyBody], targets: [Int64: ReplyTarget], since: ContinuousClock.Instant, readNow: Bool = false
    ) async throws -> [ReplyError?] {
        var copy = readNow ? try await fresh(since: since) : try await current()
        var results = bodies.map { Self.check($0, targets: targets, actions: copy.actions) }
        if copy.readAt < since, results.contains(where: Self.mayBeStale) {
            copy = try await fresh(since: since)
            for index in results.indices where Self.mayBeStale(results[index]) {
                results[index] = Self.check(bodies[index], targets: targets, actions: copy.actions)
            }
        }
        return results
    }

    private static func check(_ body: ReplyBody, targets: [Int64: ReplyTarget], actions: Actions) -> ReplyError? {
        let target = targets[body.delivery]
        do throws(ReplyError) {
            try ReplyRules.check(body, target: target, actions: target?.categoryID.flatMap { actions[$0] } ?? [])
        } catch {
            return error
        }
        return nil
    }

    /// A refusal that another copy of the catalogue could turn.
    private static func mayBeStale(_ result: ReplyError?) -> Bool {
        guard let error = result else { return false }
        return error.code == ReplyError.textNotAllowed.code || error.code == ReplyError.actionNotAllowed("", category: nil).code
    }

    /// A copy read at most `maxAge` ago.
    private func current() async throws -> Copy {
        if let copy = copy.withLockedValue({ $0 }), ContinuousClock.now - copy.readAt < maxAge { return copy }
        return try await reread()
    }

    /// A copy whose read began at `instant` or later.
    private func fresh(since instant: ContinuousClock.Instant) async throws -> Copy {
        if let copy = copy.withLockedValue({ $0 }), copy.readAt >= instant { return copy }
        return try await reread()
    }

    private func reread() async throws -> Copy {
        let readAt = ContinuousClock.now
        let made = Copy(actions: try await read(), readAt: readAt)
        copy.withLockedValue { kept in
            if kept.map({ $0.readAt < readAt }) ?? true { kept = made }
        }
        return made
    }
}
