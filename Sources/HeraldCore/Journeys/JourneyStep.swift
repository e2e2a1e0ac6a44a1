import Foundation

/// A step of one version of a journey (`journey_steps`), as the decision reads it.
public struct JourneyStep: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case send, wait, waitFor = "wait_for", branch, split, exit
    }

    public var key: String
    public var kind: Kind
    /// A `wait` step's wait.
    public var wait: JourneyWait?
    /// A `wait_for` step's timeout.
    public var timeout: TimeInterval?

    public init(key: String, kind: Kind, wait: JourneyWait? = nil, timeout: TimeInterval? = nil) {
        self.key = key
        self.kind = kind
        self.wait = wait
        self.timeout = timeout
    }

    /// Whether a member arriving here is decided on in the same batch (it waits for nothing).
    public var decidesAtOnce: Bool { kind == .send || kind == .branch || kind == .split || kind == .exit }
}
