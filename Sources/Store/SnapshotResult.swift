import Foundation
import HeraldCore
import Logging
import PostgresNIO

public struct SnapshotResult: Sendable, Hashable {
    public var inserted: Int
    public var queued: Int
    public var skipped: Int
    public var deferred: Int
    /// Of `skipped`: devices without a key for the campaign's sealed fields.
    public var skippedNoKey: Int = 0
    /// Of `skipped`: users at their frequency cap.
    public var skippedCapped: Int = 0
    /// Written as `held_out` (never sent): a holdout or the global control group.
    public var heldOut: Int = 0
    /// Per variant (name order), when the campaign has variants: the
    /// devices assigned to it and how many of them are queued.
    public var variants: [VariantCount] = []
    /// False while slices of the audience remain to be written (`campaigns.snapshot_through`).
    public var complete = true

    public init(inserted: Int = 0, queued: Int = 0, skipped: Int = 0, deferred: Int = 0,
                skippedNoKey: Int = 0, skippedCapped: Int = 0, complete: Bool = true) {
        self.inserted = inserted
        self.queued = queued
        self.skipped = skipped
        self.deferred = deferred
        self.skippedNoKey = skippedNoKey
        self.skippedCapped = skippedCapped
        self.complete = complete
    }

    /// Adds a later slice's counts.
    public mutating func add(_ slice: SnapshotResult) {
        inserted += slice.inserted
        queued += slice.queued
        skipped += slice.skipped
        deferred += slice.deferred
        skippedNoKey += slice.skippedNoKey
        skippedCapped += slice.skippedCapped
        heldOut += slice.heldOut
        for count in slice.variants {
            if let i = variants.firstIndex(where: { $0.name == count.name }) {
                variants[i].devices += count.devices
                variants[i].queued += count.queued
            } else {
                variants.append(count)
                variants.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            }
        }
        complete = slice.complete
    }

    public struct VariantCount: Sendable, Hashable {
        public var name: String
        public var devices: Int
        public var queued: Int

        public init(name: String, devices: Int, queued: Int) {
            self.name = name
            self.devices = devices
            self.queued = queued
        }
    }
}
