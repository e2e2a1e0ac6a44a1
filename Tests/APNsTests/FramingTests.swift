@testable import APNs
import NIOCore
import NIOEmbedded
import NIOHPACK
import Testing

/// The connection handler's HTTP/2 framing, driven frame by frame on an EmbeddedChannel.
@Suite("HTTP/2 framing")
struct FramingTests {
    struct Frame {
        var type: UInt8
        var flags: UInt8
        var streamID: Int32
        var payload: ByteBuffer
    }

    static func frame(_ type: UInt8, flags: UInt8 = 0, stream: Int32 = 0, _ payload: ByteBuffer = ByteBuffer()) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(payload.readableBytes) << 8 | UInt32(type))
        buffer.writeInteger(flags)
        buffer.writeInteger(UInt32(stream))
        buffer.writeImmutableBuffer(payload)
        return buffer
    }

    static func u32(_ values: UInt32...) -> ByteBuffer {
        var buffer = ByteBuffer()
        for value in values { buffer.writeInteger(value) }
        return buffer
    }

    /// Everything the handler wrote since the last call, as frames (the preface skipped).
    static func written(_ channel: EmbeddedChannel) throws -> [Frame] {
        channel.embeddedEventLoop.run()
        var bytes = ByteBuffer()
        while var chunk = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&chunk) }
        if bytes.readableBytesView.starts(with: Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)) {
            bytes.moveReaderIndex(forwardBy: 24)
        }
        var frames: [Frame] = []
        while let header = bytes.readInteger(as: UInt32.self), let flags = bytes.readInteger(as: UInt8.self),
            let stream = bytes.readInteger(as: UInt32.self), let payload = bytes.readSlice(length: Int(header >> 8))
        {
            frames.append(Frame(type: UInt8(truncatingIfNeeded: header), flags: flags, streamID: Int32(stream), payload: payload))
        }
        return frames
    }

    static func request(body: Int, continuation: CheckedContinuation<AttemptOutcome, Never>) -> OutboundRequest {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":path", value: "/3/device/ab")
        return OutboundRequest(
            head: .raw(headers),
            body: ByteBuffer(repeating: 0x61, count: body),
            endpoint: Endpoint(host: "127.0.0.1", port: 443),
            deadline: .now() + .seconds(30),
            continuation: continuation
        )
    }

    static func settings(_ entries: (UInt16, UInt32)...) -> ByteBuffer {
        var payload = ByteBuffer()
        for (parameter, value) in entries {
            payload.writeInteger(parameter)
            payload.writeInteger(value)
        }
        return frame(0x4, payload)
    }

    static func responseBlock(_ encoder: inout HPACKEncoder, status: String) throws -> ByteBuffer {
        var block = ByteBuffer()
        try encoder.encode(headers: HPACKHeaders([(":status", status), ("server", "test"), ("date", "today")]), to: &block)
        return block
    }

    @Test("flow control holds DATA until WINDOW_UPDATE; PING is answered; CONTINUATION, padding and GOAWAY are handled")
    func framing() async throws {
        let channel = EmbeddedChannel()
        let handler = APNsConnectionHandler(endpoint: Endpoint(host: "127.0.0.1", port: 443), localStreamLimit: 10)
        try channel.pipeline.syncOperations.addHandler(handler)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()
        let opening = try Self.written(channel)
        #expect(opening.map(\.type) == [0x4, 0x8])  // SETTINGS, connection WINDOW_UPDATE
        #expect(handler.state == .connecting)

        // Server SETTINGS: 5 streams, a 10-byte stream window.
        try channel.writeInbound(Self.settings((0x3, 5), (0x4, 10)))
        #expect(try Self.written(channel).map { [$0.type, $0.flags] } == [[0x4, 0x1]])  // SETTINGS ACK
        #expect(handler.state == .ready)
        #expect(handler.availableStreams == 5)

        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        let first = await withCheckedContinuation { (continuation: CheckedContinuation<AttemptOutcome, Never>) in
            do {
                handler.send(Self.request(body: 25, continuation: continuation))
                var frames = try Self.written(channel)
                #expect(frames.map(\.type) == [0x1, 0x0])
                #expect(frames.last?.payload.readableBytes == 10)
                #expect(frames.last?.flags == 0)
                // The stream's window opens: the other 15 bytes, with END_STREAM.
                try channel.writeInbound(Self.frame(0x8, stream: 1, Self.u32(100)))
                frames = try Self.written(channel)
                #expect(frames.map(\.type) == [0x0])
                #expect(frames.first?.payload.readableBytes == 15)
                #expect(frames.first?.flags == 0x1)
                // PING is answered with the same data.
                try channel.writeInbound(Self.frame(0x6, Self.u32(0xDEAD, 0xBEEF)))
                frames = try Self.written(channel)
                #expect(frames.map { [$0.type, $0.flags] } == [[0x6, 0x1]])
                #expect(frames.first?.payload == Self.u32(0xDEAD, 0xBEEF))
                // The answer: HEADERS split by CONTINUATION, then a padded DATA with END_STREAM.
                var block = try Self.responseBlock(&encoder, status: "400")
                let head = block.readSlice(length: 3) ?? ByteBuffer()
                try channel.writeInbound(Self.frame(0x1, stream: 1, head))
                try channel.writeInbound(Self.frame(0x9, flags: 0x4, stream: 1, block))
                var data = ByteBuffer()
                data.writeInteger(UInt8(4))
                data.writeString("{\"reason\":\"BadTopic\"}")
                data.writeBytes([0, 0, 0, 0])
                try channel.writeInbound(Self.frame(0x0, flags: 0x9, stream: 1, data))
            } catch {
                Issue.record(error)
            }
        }
        guard case .response(let status, let body) = first else {
            Issue.record("not a response: \(first)")
            return
        }
        #expect(status == 400)
        #expect(body.map { String(buffer: $0) } == "{\"reason\":\"BadTopic\"}")

        // GOAWAY with last stream 1: stream 3 was not processed (retried elsewhere), and the
        // drained connection closes.
        let third = await withCheckedContinuation { (continuation: CheckedContinuation<AttemptOutcome, Never>) in
            handler.send(Self.request(body: 5, continuation: continuation))
            do {
                try channel.writeInbound(Self.frame(0x7, Self.u32(1, 0)))
            } catch {
                Issue.record(error)
            }
        }
        guard case .notProcessed = third else {
            Issue.record("not .notProcessed: \(third)")
            return
        }
        #expect(handler.state == .closed || handler.state == .draining)
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
    }

    @Test("frames split across reads, one byte at a time, reach the connection whole")
    func splitReads() async throws {
        let channel = EmbeddedChannel()
        let handler = APNsConnectionHandler(endpoint: Endpoint(host: "127.0.0.1", port: 443), localStreamLimit: 10)
        try channel.pipeline.syncOperations.addHandler(handler)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()
        _ = try Self.written(channel)
        var bytes = Self.settings((0x3, 7))
        bytes.writeImmutableBuffer(Self.frame(0x6, Self.u32(1, 2)))
        while let byte = bytes.readSlice(length: 1) {
            try channel.writeInbound(byte)
        }
        #expect(handler.state == .ready)
        #expect(handler.availableStreams == 7)
        #expect(try Self.written(channel).map { [$0.type, $0.flags] } == [[0x4, 0x1], [0x6, 0x1]])
    }

    @Test("a frame over the announced size closes the connection with GOAWAY FRAME_SIZE_ERROR")
    func oversizeFrame() async throws {
        let channel = EmbeddedChannel()
        let handler = APNsConnectionHandler(endpoint: Endpoint(host: "127.0.0.1", port: 443), localStreamLimit: 10)
        try channel.pipeline.syncOperations.addHandler(handler)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()
        try channel.writeInbound(Self.settings())
        _ = try Self.written(channel)
        var header = ByteBuffer()
        header.writeInteger(UInt32(16_385) << 8 | 0x0)
        header.writeInteger(UInt8(0))
        header.writeInteger(UInt32(1))
        try channel.writeInbound(header)
        let frames = try Self.written(channel)
        #expect(frames.map(\.type) == [0x7])
        #expect(frames.first?.payload.getInteger(at: 4, as: UInt32.self) == 0x6)
        #expect(!channel.isActive)
    }

    @Test("an answer's status is read without the decoder only when the block leaves the dynamic table alone")
    func quickStatus() throws {
        func block(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }
        let date = Array("today".utf8)
        // :status 200, date (static name 33) without indexing, x-a: b never indexed, static index 54.
        let plain: [UInt8] = [0x88, 0x0f, 0x12, UInt8(date.count)] + date + [0x10, 0x03] + Array("x-a".utf8) + [0x01, 0x62, 0xb6]
        #expect(ResponseStatusReader.quickStatus(of: block(plain)) == 200)
        // An indexed field from the dynamic table (index 62) leaves the table as it is.
        #expect(ResponseStatusReader.quickStatus(of: block([0x88, 0xbe])) == 200)
        #expect(ResponseStatusReader.quickStatus(of: block([0x8d])) == 404)
        // Incremental indexing or a size update anywhere: the decoder must see the block.
        #expect(ResponseStatusReader.quickStatus(of: block([0x88, 0x40, 0x01, 0x61, 0x01, 0x62])) == nil)
        #expect(ResponseStatusReader.quickStatus(of: block([0x88, 0x3f, 0xe1, 0x1f])) == nil)
        // A literal :status, and truncated blocks.
        #expect(ResponseStatusReader.quickStatus(of: block([0x08, 0x03] + Array("403".utf8))) == nil)
        #expect(ResponseStatusReader.quickStatus(of: block([0x88, 0x0f])) == nil)
        #expect(ResponseStatusReader.quickStatus(of: block([0x88, 0x0f, 0x12, 0x09, 0x61])) == nil)
        // Whatever the quick path accepts, the decoder decodes to the same status.
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var full = block(plain)
        let headers = try decoder.decodeHeaders(from: &full)
        #expect(headers.first?.name == ":status" && headers.first?.value == "200")
    }
}
