/// One device's values of the variables its campaign's templates name, in
/// the order of `PayloadBuilder.variables` (the store reads them for each
/// claimed batch; nil where the user or recipient has none).
public struct PersonalValues: Sendable, Hashable {
    public var values: [String?]
    /// The user's time zone, for the date filter.
    public var timeZone: String?

    public init(values: [String?], timeZone: String?) {
        self.values = values
        self.timeZone = timeZone
    }
}
