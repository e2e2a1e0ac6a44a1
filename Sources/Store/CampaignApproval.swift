import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A campaign's approval (docs/marketers.md, "Approval").
public struct CampaignApproval: Sendable, Hashable {
    /// Whether the deployment requires one (`settings.require_approval`).
    public var required: Bool
    /// The role that wrote the campaign.
    public var author: String
    public var approvedBy: String?
    public var approvedAt: Date?

    /// Whether a run may send it, as far as approval goes.
    public var allowsSending: Bool { !required || approvedAt != nil }

    public var description: String {
        if let approvedBy, let approvedAt {
            return "approved by \(approvedBy) at \(approvedAt.ISO8601Format()) (written by \(author))"
        }
        return required
            ? "awaiting approval: written by \(author); a member of herald_approver other than \(author) runs SELECT herald_approve(id)"
            : "not required (written by \(author))"
    }
}
