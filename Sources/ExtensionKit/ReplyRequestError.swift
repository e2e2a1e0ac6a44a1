import Foundation

/// Why a reply request could not be built.
public struct ReplyRequestError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case noReplyToken
        case emptyAction
        case encodingFailed
    }

    private let code: Code

    /// The notification carries no reply token (`herald.r`): the campaign takes no replies.
    public static let noReplyToken = Self(code: .noReplyToken)
    /// The action identifier is empty.
    public static let emptyAction = Self(code: .emptyAction)
    /// The body could not be encoded as JSON.
    public static let encodingFailed = Self(code: .encodingFailed)

    /// A one-line reason.
    public var description: String {
        switch code {
        case .noReplyToken: "notification has no reply token; its campaign takes no replies"
        case .emptyAction: "reply action identifier is empty"
        case .encodingFailed: "reply body could not be encoded"
        }
    }
}
