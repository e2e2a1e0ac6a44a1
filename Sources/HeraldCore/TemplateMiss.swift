import Foundation

/// Why one device's text cannot be made: the variable and what it lacks.
/// The device is skipped with this as its reason.
public struct TemplateMiss: Error, Sendable, Hashable, CustomStringConvertible {
    public var variable: Template.Variable
    public var why: String

    public init(variable: Template.Variable, why: String) {
        self.variable = variable
        self.why = why
    }

    public var description: String { "\(variable) \(why)" }
}
