@testable import APNs
import NIOCore
import Testing

/// The HTTP/2 frame codec on plain bytes: every frame is written, then read back whole and split
/// at every byte boundary.
@Suite("HTTP/2 frame codec")
struct FrameCodecTests {
    static func bytes(_ values: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: values) }

    /// One frame of every type, with and without the optional parts.
    static let frames: [HTTP2Frame] = [
        .data(streamID: 1, endStream: false, payload: bytes([1, 2, 3])),
        .data(streamID: 3, endStream: true, payload: ByteBuffer(string: "{\"reason\":\"BadTopic\"}"), padding: 4),
        .data(streamID: 5, endStream: true, payload: ByteBuffer(), padding: 0),
        .data(streamID: 7, endStream: true, payload: ByteBuffer()),
        .headers(streamID: 1, endStream: true, endHeaders: true, block: bytes([0x88])),
        .headers(streamID: 9, endStream: false, endHeaders: false, block: bytes([0x88, 0x0f, 0x12]), padding: 3),
        .headers(
            streamID: 11, endStream: true, endHeaders: true, block: bytes([0x8d]), padding: 1,
            priority: .init(exclusive: true, dependency: 3, weight: 200)
        ),
        .headers(
            streamID: 13, endStream: false, endHeaders: true, block: bytes([0x88]),
            priority: .init(exclusive: false, dependency: 0, weight: 15)
        ),
        .priority(streamID: 15, .init(exclusive: false, dependency: 1, weight: 16)),
        .rstStream(streamID: 1, code: H2.refusedStream),
        .rstStream(streamID: 0x7fff_ffff, code: H2.noError),
        .settings(ack: false, [.init(parameter: H2.settingMaxConcurrentStreams, value: 1000), .init(parameter: H2.settingInitialWindowSize, value: 10)]),
        .settings(ack: false, []),
        .settings(ack: true, []),
        .pushPromise(streamID: 1, promisedStreamID: 2),
        .ping(ack: false, data: 0xDEAD_BEEF_0000_0001),
        .ping(ack: true, data: 0),
        .goAway(lastStreamID: 149, code: H2.noError, debugData: ByteBuffer()),
        .goAway(lastStreamID: 0, code: H2.protocolError, debugData: ByteBuffer(string: "bye")),
        .windowUpdate(streamID: 0, increment: 1 << 24),
        .windowUpdate(streamID: 3, increment: 0x7fff_ffff),
        .continuation(streamID: 9, endHeaders: true, block: bytes([0x12, 0x34])),
        .continuation(streamID: 9, endHeaders: false, block: ByteBuffer()),
        .unknown(type: 0xa, flags: 0xff, streamID: 0, payload: bytes([9, 9])),
    ]

    static func encoded(_ frame: HTTP2Frame) -> ByteBuffer {
        var buffer = ByteBuffer()
        HTTP2FrameEncoder.write(frame, into: &buffer)
        return buffer
    }

    static func readAll(_ decoder: inout HTTP2FrameDecoder) throws -> [HTTP2Frame] {
        var frames: [HTTP2Frame] = []
        while let frame = try decoder.nextFrame() { frames.append(frame) }
        return frames
    }

    @Test("every frame reads back whole, and split at every byte boundary")
    func roundTrip() throws {
        for frame in Self.frames {
            let bytes = Self.encoded(frame)
            var whole = HTTP2FrameDecoder()
            whole.append(bytes)
            #expect(try Self.readAll(&whole) == [frame])
            #expect(whole.bufferedBytes == 0)
            for split in 1..<bytes.readableBytes {
                var decoder = HTTP2FrameDecoder()
                decoder.append(bytes.getSlice(at: 0, length: split) ?? ByteBuffer())
                #expect(try decoder.nextFrame() == nil, "frame \(frame) split at \(split) came out early")
                decoder.append(bytes.getSlice(at: split, length: bytes.readableBytes - split) ?? ByteBuffer())
                #expect(try Self.readAll(&decoder) == [frame], "frame \(frame) split at \(split)")
            }
        }
    }

    @Test("all frames back to back, fed one byte at a time and in uneven pieces, come out in order")
    func stream() throws {
        var all = ByteBuffer()
        for frame in Self.frames { HTTP2FrameEncoder.write(frame, into: &all) }
        var decoder = HTTP2FrameDecoder()
        var read: [HTTP2Frame] = []
        for index in 0..<all.readableBytes {
            decoder.append(all.getSlice(at: index, length: 1) ?? ByteBuffer())
            read += try Self.readAll(&decoder)
        }
        #expect(read == Self.frames)

        for piece in [2, 7, 9, 10, 31] {
            var decoder = HTTP2FrameDecoder()
            var read: [HTTP2Frame] = []
            var offset = 0
            while offset < all.readableBytes {
                let length = min(piece, all.readableBytes - offset)
                decoder.append(all.getSlice(at: offset, length: length) ?? ByteBuffer())
                read += try Self.readAll(&decoder)
                offset += length
            }
            #expect(read == Self.frames, "pieces of \(piece)")
        }
    }

    @Test("a frame longer than SETTINGS_MAX_FRAME_SIZE is a FRAME_SIZE_ERROR as soon as its header arrives")
    func oversize() throws {
        var header = ByteBuffer()
        HTTP2FrameEncoder.writeFrameHeader(length: 16_385, type: H2.data, flags: 0, streamID: 1, into: &header)
        for split in 0...header.readableBytes {
            var decoder = HTTP2FrameDecoder()
            decoder.append(header.getSlice(at: 0, length: split) ?? ByteBuffer())
            if split < header.readableBytes {
                #expect(try decoder.nextFrame() == nil)
                decoder.append(header.getSlice(at: split, length: header.readableBytes - split) ?? ByteBuffer())
            }
            #expect(throws: HTTP2ConnectionError(code: H2.frameSizeError)) { try decoder.nextFrame() }
        }
        // Exactly the limit is fine, and a larger announced limit takes larger frames.
        let largest = HTTP2Frame.data(streamID: 1, endStream: true, payload: ByteBuffer(repeating: 7, count: 16_384))
        var decoder = HTTP2FrameDecoder()
        decoder.append(Self.encoded(largest))
        #expect(try decoder.nextFrame() == largest)
        let larger = HTTP2Frame.data(streamID: 1, endStream: true, payload: ByteBuffer(repeating: 7, count: 20_000))
        var roomy = HTTP2FrameDecoder(maxFrameSize: 32_768)
        roomy.append(Self.encoded(larger))
        #expect(try roomy.nextFrame() == larger)
    }

    @Test("payloads of the wrong length, bad padding and frames on the wrong stream are connection errors")
    func malformed() throws {
        func frame(_ type: UInt8, flags: UInt8 = 0, stream: UInt32, _ payload: [UInt8]) -> ByteBuffer {
            var buffer = ByteBuffer()
            HTTP2FrameEncoder.writeFrameHeader(length: payload.count, type: type, flags: flags, streamID: Int32(bitPattern: stream), into: &buffer)
            buffer.writeBytes(payload)
            return buffer
        }
        let cases: [(ByteBuffer, UInt32)] = [
            (frame(H2.ping, stream: 0, [0, 0, 0, 0, 0, 0, 0]), H2.frameSizeError),
            (frame(H2.ping, stream: 1, [0, 0, 0, 0, 0, 0, 0, 0]), H2.protocolError),
            (frame(H2.settings, stream: 0, [0, 3, 0, 0, 0]), H2.frameSizeError),
            (frame(H2.settings, flags: H2.ackFlag, stream: 0, [0, 3, 0, 0, 0, 1]), H2.frameSizeError),
            (frame(H2.settings, stream: 1, []), H2.protocolError),
            (frame(H2.rstStream, stream: 1, [0, 0, 0]), H2.frameSizeError),
            (frame(H2.rstStream, stream: 0, [0, 0, 0, 0]), H2.protocolError),
            (frame(H2.windowUpdate, stream: 0, [0, 0, 0, 1, 0]), H2.frameSizeError),
            (frame(H2.goAway, stream: 0, [0, 0, 0, 1]), H2.frameSizeError),
            (frame(H2.goAway, stream: 1, [0, 0, 0, 1, 0, 0, 0, 0]), H2.protocolError),
            (frame(H2.priority, stream: 1, [0, 0, 0, 1]), H2.frameSizeError),
            (frame(H2.data, stream: 0, [1]), H2.protocolError),
            (frame(H2.headers, stream: 0, [0x88]), H2.protocolError),
            (frame(H2.continuation, stream: 0, [0x88]), H2.protocolError),
            // A pad length equal to or past the rest of the payload.
            (frame(H2.data, flags: H2.paddedFlag, stream: 1, [4, 1, 2, 3]), H2.protocolError),
            (frame(H2.data, flags: H2.paddedFlag, stream: 1, []), H2.protocolError),
            (frame(H2.headers, flags: H2.paddedFlag, stream: 1, [5, 0x88]), H2.protocolError),
            // PRIORITY flag with fewer than 5 bytes.
            (frame(H2.headers, flags: H2.priorityFlag, stream: 1, [0, 0, 0, 1]), H2.frameSizeError),
        ]
        for (bytes, code) in cases {
            var decoder = HTTP2FrameDecoder()
            decoder.append(bytes)
            #expect(throws: HTTP2ConnectionError(code: code)) { try decoder.nextFrame() }
        }
    }

    @Test("a header block larger than the peer's frame size goes as HEADERS and CONTINUATION frames")
    func headerBlockSplit() throws {
        let block = ByteBuffer(bytes: (0..<40_000).map { UInt8(truncatingIfNeeded: $0) })
        for endStream in [false, true] {
            var buffer = ByteBuffer()
            HTTP2FrameEncoder.writeHeaders(streamID: 5, endStream: endStream, maxFrameSize: 16_384, into: &buffer) {
                $0.writeImmutableBuffer(block)
            }
            var decoder = HTTP2FrameDecoder()
            decoder.append(buffer)
            let frames = try Self.readAll(&decoder)
            #expect(frames.count == 3)
            var joined = ByteBuffer()
            for (index, frame) in frames.enumerated() {
                switch frame {
                case .headers(5, let end, let endHeaders, var part, nil, nil) where index == 0:
                    #expect(end == endStream)
                    #expect(!endHeaders)
                    #expect(part.readableBytes == 16_384)
                    joined.writeBuffer(&part)
                case .continuation(5, let endHeaders, var part) where index > 0:
                    #expect(endHeaders == (index == 2))
                    joined.writeBuffer(&part)
                default:
                    Issue.record("unexpected frame \(index): \(frame)")
                }
            }
            #expect(joined == block)
        }
        // A block that fits is one HEADERS frame, END_HEADERS set.
        var small = ByteBuffer()
        HTTP2FrameEncoder.writeHeaders(streamID: 1, endStream: false, maxFrameSize: 16_384, into: &small) {
            $0.writeBytes([0x82, 0x87])
        }
        var decoder = HTTP2FrameDecoder()
        decoder.append(small)
        #expect(try decoder.nextFrame() == .headers(streamID: 1, endStream: false, endHeaders: true, block: Self.bytes([0x82, 0x87])))
    }
}
