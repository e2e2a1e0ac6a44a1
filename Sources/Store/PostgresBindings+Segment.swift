import Foundation
import HeraldCore
import Logging
import PostgresNIO

extension PostgresBindings {
    /// Appends a compiled segment's binds, in order (their placeholders
    /// follow the statement's own).
    mutating func append(segment: CompiledSegment) {
        for b in segment.binds {
            switch b {
            case .text(let s): append(s)
            case .texts(let a): append(a)
            case .int(let i): append(i)
            case .double(let d): append(d)
            case .bool(let v): append(v)
            case .json(let j): append(j)
            }
        }
    }
}
