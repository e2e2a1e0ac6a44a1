import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes lines to a file or standard output, buffered.
public actor LineFile: PayloadSink {
    private let handle: FileHandle
    private let closeOnFinish: Bool
    private var buffer: [UInt8] = []

    public static func standardOutput() -> LineFile { LineFile(handle: .standardOutput, close: false) }

    /// Opens `path` for writing in place: a regular file is truncated, a
    /// device such as `/dev/null` or a pipe is written as it is, and a
    /// directory is refused. The file is never replaced by renaming a new one
    /// over it (which would swap a device node for a regular file).
    public init(path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw OutputFileError(path: path, reason: String(cString: strerror(errno)))
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw OutputFileError(path: path, reason: reason)
        }
        if (info.st_mode & S_IFMT) == S_IFREG, ftruncate(fd, 0) != 0 {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw OutputFileError(path: path, reason: reason)
        }
        self.init(handle: FileHandle(fileDescriptor: fd, closeOnDealloc: false), close: true)
    }

    init(handle: FileHandle, close: Bool) {
        self.handle = handle
        self.closeOnFinish = close
        buffer.reserveCapacity(1 << 16)
    }

    public func write(_ line: [UInt8]) throws {
        buffer.append(contentsOf: line)
        if buffer.count >= 1 << 16 { try flush() }
    }

    public func flush() throws {
        guard !buffer.isEmpty else { return }
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    public func finish() throws {
        try flush()
        if closeOnFinish { try handle.close() }
    }
}

/// An output file that cannot be opened for writing.
public struct OutputFileError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "cannot write \(path): \(reason)" }
}
