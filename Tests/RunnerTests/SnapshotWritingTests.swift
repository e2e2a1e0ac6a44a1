import Testing
@testable import Runner

/// When a run starts the next slice of an audience it is sending: the rule
/// on plain values (the run's check of it: SnapshotSliceTests).
@Suite("The audience written shortly before it is sent")
struct SnapshotWritingTests {
    @Test func theNextSliceWaitsWhileTheRowsNotYetReadExceedTheLead() {
        let writing = SnapshotWriting(written: 50_000, lead: 100_000)
        #expect(writing.mayWriteNext, "50,000 written, none read: within the lead")
        writing.wrote(150_000)
        #expect(!writing.mayWriteNext, "200,000 not yet read")
        writing.claimed(read: 99_999, empty: false, slicesBefore: 1)
        #expect(!writing.mayWriteNext, "100,001 not yet read")
        writing.claimed(read: 1, empty: false, slicesBefore: 1)
        #expect(writing.mayWriteNext, "100,000 not yet read")
    }

    @Test func aClaimThatFindsNothingLetsTheNextSliceStart() {
        // The claims may read fewer rows than were written (another worker
        // read the rest, a session began again from the first claimable
        // row): a claim with nothing to take never leaves the audience unwritten.
        let writing = SnapshotWriting(written: 500_000, lead: 100_000)
        writing.claimed(read: 1_000, empty: true, slicesBefore: writing.slicesWritten)
        #expect(writing.mayWriteNext)
        writing.wrote(1_000)
        #expect(!writing.mayWriteNext, "a slice committed: its rows are to be read first")
        writing.claimed(read: 1_000, empty: false, slicesBefore: writing.slicesWritten)
        #expect(!writing.mayWriteNext)
        writing.claimed(read: 0, empty: true, slicesBefore: writing.slicesWritten)
        #expect(writing.mayWriteNext)
    }

    @Test func aClaimThatBeganBeforeASliceCommittedSaysNothingOfItsRows() {
        let writing = SnapshotWriting(written: 200, lead: 100)
        let before = writing.slicesWritten
        writing.wrote(600)
        // The claim read the ledger before the slice's rows were there.
        writing.claimed(read: 0, empty: true, slicesBefore: before)
        #expect(!writing.mayWriteNext, "800 written, none read")
        writing.claimed(read: 0, empty: true, slicesBefore: writing.slicesWritten)
        #expect(writing.mayWriteNext)
    }
}
