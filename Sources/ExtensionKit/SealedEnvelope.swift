/// The sealed part of a payload (`herald.sealed`): HPKE-sealed sensitive fields.
public struct SealedEnvelope: Codable, Sendable, Hashable {
    public var v: Int
    public var kid: String
    public var enc: String
    public var ct: String

    public init(v: Int = 1, kid: String, enc: String, ct: String) {
        self.v = v
        self.kid = kid
        self.enc = enc
        self.ct = ct
    }
}
