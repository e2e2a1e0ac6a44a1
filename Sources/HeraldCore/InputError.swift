/// Something a command was given that it cannot use: a file it cannot read
/// or write, a value of the demo's data. Said with the path or value, so the
/// person who gave it can fix it.
public struct InputError: Error, Hashable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
