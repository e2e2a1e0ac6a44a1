import APNs
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle

// MARK: - Write coalescing

/// Between TLS and HTTP/2: gathers the buffers written until a flush into one, so that a tick's
/// frames become one TLS record (NIOSSL encrypts each write as a record of its own) and one
/// socket write.
final class WriteCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var buffer: ByteBuffer
    private var promise: EventLoopPromise<Void>?

    init(allocator: ByteBufferAllocator) {
        buffer = allocator.buffer(capacity: 16 * 1024)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .byteBuffer(let bytes):
            buffer.writeImmutableBuffer(bytes)
            if let promise {
                if let combined = self.promise {
                    combined.futureResult.cascade(to: promise)
                } else {
                    self.promise = promise
                }
            }
        case .fileRegion:
            writePending(context: context)
            context.write(data, promise: promise)
        }
    }

    func flush(context: ChannelHandlerContext) {
        writePending(context: context)
        context.flush()
        // NIOSSL has encrypted the bytes by now: the buffer is ours alone again, cleared in place.
        buffer.clear()
    }

    private func writePending(context: ChannelHandlerContext) {
        guard buffer.readableBytes > 0 else { return }
        let promise = self.promise
        self.promise = nil
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
        buffer.moveReaderIndex(to: buffer.writerIndex)
    }
}
