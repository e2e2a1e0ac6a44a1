import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Which token a claimed delivery goes to besides its device's own (DESIGN, contract 10).
public enum ClaimToken: Sendable, Hashable {
    /// The device's token only (every alert).
    case device
    /// Also its push-to-start token for Herald's sales (a sale's start; nil: the device gets the alert).
    case pushToStart
    /// The update token of its activity of `sale` (a sale's update or end); a device whose
    /// activity ended, or registered none, is skipped.
    case activity(sale: Int64)
    /// The device's widget token (a widget push); a device that registered none is skipped.
    case widget

    /// The claim's join, its token column and the skip it adds.
    var sql: (join: String, column: String, missing: String?) {
        sqlParts
    }

    /// Why a row the claim finds without its token is skipped.
    var missingReason: String {
        self == .widget ? "no widget token" : "activity ended or gave no update token"
    }

    private var sqlParts: (join: String, column: String, missing: String?) {
        switch self {
        case .device: ("", "NULL::text", nil)
        case .pushToStart:
            ("LEFT JOIN push_to_start_tokens pts ON pts.device_id = picked.device_id AND pts.attributes_type = 'HeraldSaleAttributes'",
             "pts.token", nil)
        case .activity(let sale):
            ("LEFT JOIN live_activities la ON la.campaign_id = \(sale) AND la.device_id = picked.device_id AND la.ended_at IS NULL",
             "la.update_token", "la.update_token IS NULL")
        case .widget:
            ("LEFT JOIN widget_tokens wt ON wt.device_id = picked.device_id", "wt.token", "wt.token IS NULL")
        }
    }
}
