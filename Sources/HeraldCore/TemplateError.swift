import Foundation

/// A template that does not parse: where, and what is wrong. It fails its
/// campaign at preview and at the run.
public struct TemplateError: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var message: String

    public init(line: Int, column: Int, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String { "line \(line), column \(column): \(message)" }
}
