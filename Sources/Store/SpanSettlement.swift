import Foundation
import HeraldCore
import PostgresNIO

/// What one settlement writes for one span (`herald_settle`): its new watermark, the
/// rows that differ (answers that are not 200) and the rows in flight behind the watermark.
public struct SpanSettlement: Sendable, Hashable {
    public var span: SpanClaim
    /// The span's rows up to this id are sent, unless written below.
    public var settled: Int64
    public var exceptions: [DeliveryOutcome]
    /// Sent and not answered: written `in_flight`, held by the run, answered row by row.
    public var stragglers: [SpanRow]

    public init(span: SpanClaim, settled: Int64, exceptions: [DeliveryOutcome] = [], stragglers: [SpanRow] = []) {
        self.span = span
        self.settled = settled
        self.exceptions = exceptions
        self.stragglers = stragglers
    }
}
