import Foundation
import HeraldCore

/// The lines of a file, read in chunks. A line longer than a request body
/// may be is reported as too long without being kept in memory: its bytes
/// are dropped up to its newline.
struct LineReader {
    struct Line {
        enum Content {
            case bytes([UInt8])
            case tooLong
        }
        var number: Int
        var content: Content
    }

    let handle: FileHandle
    private var carry: [UInt8] = []
    private var start = 0
    private var lineNumber = 0
    private var overlong = false
    private var ended = false
    private let longest = ReplyRules.maxBodyBytes + 1

    init(handle: FileHandle) {
        self.handle = handle
    }

    /// Up to `count` lines; none at the end of the file.
    mutating func next(_ count: Int) throws -> [Line] {
        var lines: [Line] = []
        lines.reserveCapacity(min(count, 1 << 16))
        while lines.count < count {
            if let nl = carry[start...].firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(finish(Array(carry[start..<nl])))
                start = nl + 1
                continue
            }
            if ended {
                if start < carry.count || overlong {
                    lines.append(finish(Array(carry[start...])))
                }
                carry.removeAll()
                start = 0
                break
            }
            carry.removeFirst(start)
            start = 0
            if carry.count > longest {
                overlong = true
                carry.removeAll(keepingCapacity: true)
            }
            let chunk = try handle.read(upToCount: 1 << 16) ?? Data()
            if chunk.isEmpty {
                ended = true
            } else {
                carry.append(contentsOf: chunk)
            }
        }
        return lines
    }

    private mutating func finish(_ bytes: [UInt8]) -> Line {
        lineNumber += 1
        if overlong {
            overlong = false
            return Line(number: lineNumber, content: .tooLong)
        }
        return Line(number: lineNumber, content: .bytes(bytes))
    }
}
