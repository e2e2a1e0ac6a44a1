import Foundation

/// Writes lines to a file or standard output, buffered.
public actor LineFile: PayloadSink {
    private let handle: FileHandle
    private let closeOnFinish: Bool
    private var buffer: [UInt8] = []

    public static func standardOutput() -> LineFile { LineFile(handle: .standardOutput, close: false) }

    public init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
        }
        self.init(handle: handle, close: true)
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
