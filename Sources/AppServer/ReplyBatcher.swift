import ExtensionKit
import Foundation
import HeraldCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Store

/// How concurrent replies are gathered into batches (group commit).
public struct ReplyBatching: Sendable, Hashable {
    /// Replies checked and stored together at most: one statement, one
    /// commit.
    public var maxBatch: Int
    /// Batches in progress at once, each on one database connection at a
    /// time. While they are busy, new replies queue up and form the next
    /// batch: there is no timer, a batch is whatever arrived meanwhile, so a
    /// lone reply is stored at once and a busy server stores many per commit.
    /// One by default: a batch costs round trips and a commit whatever its
    /// size, so under load one batch of everything that waits beats two of
    /// half.
    public var maxConcurrentBatches: Int
    /// Replies waiting for a batch at most; past it a reply is answered 503
    /// with `Retry-After` instead of queueing without end.
    public var maxQueued: Int

    public init(maxBatch: Int = 500, maxConcurrentBatches: Int = 1, maxQueued: Int = 10_000) {
        self.maxBatch = max(1, maxBatch)
        self.maxConcurrentBatches = max(1, maxConcurrentBatches)
        self.maxQueued = max(1, maxQueued)
    }
}

/// Stores the replies of concurrent requests together: each waits for the
/// batch it joined and gets its own answer (stored, already stored, or its
/// own refusal), never before the batch's transaction has committed. A
/// database fault fails the batch's requests with that fault (503 for the
/// client to retry with the same `reply_id`), never as a refusal.
///
/// Nothing runs without a request waiting for it: the batches are processed
/// by tasks started when replies are queued, which end when the queue is
/// empty. A server shutting down gracefully waits for its open requests, so
/// it drains the batcher before the database client stops.
final class ReplyBatcher: Sendable {
    typealias Answer = Result<ReplyIntake.Stored, ReplyError>

    struct Item: Sendable {
        let body: ReplyBody
        let source: String
        let continuation: CheckedContinuation<Answer, any Error>
    }

    private struct State {
        var queue = CircularBuffer<Item>()
        var running = 0
        /// Replies queued or in a batch being processed: not answered yet.
        var outstanding = 0
    }

    let store: ReplyStore
    let logger: Logger
    let batching: ReplyBatching
    private let state = NIOLockedValueBox(State())

    init(store: ReplyStore, logger: Logger, batching: ReplyBatching) {
        self.store = store
        self.logger = logger
        self.batching = batching
    }

    /// Queues a reply whose token checked out; returns its answer once its
    /// batch is done.
    func submit(_ body: ReplyBody, source: String) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            enum Next { case queued, start, full }
            let next = state.withLockedValue { s -> Next in
                guard s.queue.count < batching.maxQueued else { return .full }
                s.queue.append(Item(body: body, source: source, continuation: continuation))
                s.outstanding += 1
                guard s.running < batching.maxConcurrentBatches else { return .queued }
                s.running += 1
                return .start
            }
            switch next {
            case .queued: break
            case .start: Task { await self.drain() }
            case .full: continuation.resume(throwing: AppServerError.busy)
            }
        }
    }

    /// Takes batches off the queue until it is empty.
    private func drain() async {
        while true {
            let batch = state.withLockedValue { s -> [Item] in
                guard !s.queue.isEmpty else {
                    s.running -= 1
                    return []
                }
                let n = min(s.queue.count, batching.maxBatch)
                var taken: [Item] = []
                taken.reserveCapacity(n)
                for _ in 0..<n { taken.append(s.queue.removeFirst()) }
                return taken
            }
            if batch.isEmpty { return }
            await process(batch)
        }
    }

    /// Answers a reply (each exactly once).
    private func answer(_ item: Item, _ result: Result<Answer, any Error>) {
        state.withLockedValue { $0.outstanding -= 1 }
        item.continuation.resume(with: result)
    }

    /// Replies queued or being stored, not answered yet.
    var outstanding: Int { state.withLockedValue { $0.outstanding } }

    /// Checks a batch against its deliveries and stores what passes, with
    /// the same checks in the same order as one reply alone: one statement
    /// per source (in practice one: "api").
    private func process(_ batch: [Item]) async {
        var sources: [String] = []
        var bySource: [String: [Item]] = [:]
        for item in batch {
            if bySource[item.source] == nil { sources.append(item.source) }
            bySource[item.source, default: []].append(item)
        }
        for source in sources {
            await take(bySource[source] ?? [], source: source)
        }
    }

    /// One `herald_commit_replies` call for the batch: it
    /// looks the deliveries up, stores what passes the checks that need them,
    /// says why it refused the rest and commits before it answers. Of two
    /// replies with the same delivery and `reply_id`, the first that passes
    /// is stored and the other answered as a duplicate, as if they had come
    /// one after the other. A reply whose values the database itself refuses
    /// sinks no other (`ReplyStore.storeTakingApart`).
    private func take(_ items: [Item], source: String) async {
        guard !items.isEmpty else { return }
        let batch: ReplyStore.StoredBatch
        do {
            batch = try await store.storeTakingApart(items.map { ReplyIntake.incoming($0.body) }, source: source)
        } catch {
            for item in items { answer(item, .failure(error)) }
            return
        }
        // What was stored is answered first: nothing after it may fail it.
        let refused = Set(batch.refused + batch.refusedByDatabase.map(\.position))
        let duplicates = Set(batch.duplicates)
        AppServerMetrics.replies(stored: batch.stored, duplicates: batch.duplicates.count)
        for (index, item) in items.enumerated() where !refused.contains(index) {
            if duplicates.contains(index) {
                answer(item, .success(.success(.duplicate)))
            } else {
                logger.debug("reply stored", metadata: ["delivery": "\(item.body.delivery)"])
                answer(item, .success(.success(.stored)))
            }
        }
        for refusal in batch.refusals {
            let item = items[refusal.position]
            answer(item, .success(.failure(ReplyIntake.reason(refusal, of: item.body))))
        }
        for refused in batch.refusedByDatabase {
            answer(items[refused.position], .success(.failure(ReplyIntake.refusal(refused))))
        }
    }
}
