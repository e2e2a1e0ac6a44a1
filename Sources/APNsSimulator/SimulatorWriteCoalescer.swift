import APNs
import Crypto
import Foundation
import HeraldCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Lifecycle
import ServiceLifecycle

/// Joins the buffers written in one tick into one TLS record.
final class SimulatorWriteCoalescer: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var pending: ByteBuffer?
    private var pendingPromise: EventLoopPromise<Void>?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var buffer) = unwrapOutboundIn(data) else {
            writePending(context: context)
            context.write(data, promise: promise)
            return
        }
        if var accumulated = pending {
            pending = nil
            accumulated.writeBuffer(&buffer)
            pending = accumulated
        } else {
            pending = buffer
        }
        if let promise {
            if let existing = pendingPromise { existing.futureResult.cascade(to: promise) } else { pendingPromise = promise }
        }
    }

    func flush(context: ChannelHandlerContext) {
        writePending(context: context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        writePending(context: context)
        context.flush()
        context.close(mode: mode, promise: promise)
    }

    private func writePending(context: ChannelHandlerContext) {
        guard let buffer = pending else { return }
        let promise = pendingPromise
        pending = nil
        pendingPromise = nil
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
