@testable import APNs
import NIOCore
import NIOHPACK
import Testing

/// The client's HTTP/2 connection rules on plain values: events in, frames and completions out.
@Suite("HTTP/2 connection state machine")
struct ConnectionStateMachineTests {
    typealias Machine = HTTP2ConnectionStateMachine<Int>

    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    static func head() -> RequestHead {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: "127.0.0.1")
        headers.add(name: ":path", value: "/3/device/ab")
        return .raw(headers)
    }

    static func body(_ count: Int) -> ByteBuffer { ByteBuffer(repeating: 0x61, count: count) }

    /// The frames written since the last call (the connection preface skipped).
    static func written(_ machine: inout Machine) -> [HTTP2Frame] {
        guard var bytes = machine.takeOutput() else { return [] }
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        if bytes.readableBytesView.starts(with: preface) { bytes.moveReaderIndex(forwardBy: preface.count) }
        var decoder = HTTP2FrameDecoder(maxFrameSize: 1 << 24)
        decoder.append(bytes)
        var frames: [HTTP2Frame] = []
        do {
            while let frame = try decoder.nextFrame() { frames.append(frame) }
        } catch {
            Issue.record("the machine wrote a bad frame: \(error)")
        }
        #expect(decoder.bufferedBytes == 0)
        return frames
    }

    /// A connection that has exchanged SETTINGS and can take streams.
    static func ready(
        _ settings: [HTTP2Frame.Setting] = [],
        limit: Int = 10,
        firstStreamID: Int32 = 1
    ) -> Machine {
        var machine = Machine(localStreamLimit: limit, now: start, firstStreamID: firstStreamID)
        machine.channelActive()
        let actions = machine.receive(.settings(ack: false, settings))
        #expect(actions.notice == .becameReady)
        _ = written(&machine)
        return machine
    }

    static func setting(_ parameter: UInt16, _ value: UInt32) -> HTTP2Frame.Setting {
        .init(parameter: parameter, value: value)
    }

    static func block(status: String, _ encoder: inout HPACKEncoder) -> ByteBuffer {
        var block = ByteBuffer()
        do {
            try encoder.encode(headers: HPACKHeaders([(":status", status), ("apns-id", "x")]), to: &block)
        } catch {
            Issue.record("HPACK: \(error)")
        }
        return block
    }

    /// `:status` from the static table, nothing else: readable without a decoder.
    static func statusBlock(_ status: Int) -> ByteBuffer {
        let index: [Int: UInt8] = [200: 0x88, 204: 0x89, 400: 0x8c, 404: 0x8d, 500: 0x8e]
        return ByteBuffer(bytes: [index[status] ?? 0x88])
    }

    static func answer(_ streamID: Int32, _ status: Int = 200) -> HTTP2Frame {
        .headers(streamID: streamID, endStream: true, endHeaders: true, block: statusBlock(status))
    }

    static func outcomes(_ actions: Machine.Actions) -> [Int: AttemptOutcome] {
        Dictionary(actions.completions.all.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
    }

    static func isGoAway(_ frame: HTTP2Frame?, code: UInt32) -> Bool {
        if case .goAway(_, code, _)? = frame { return true }
        return false
    }

    // MARK: Opening

    @Test("the preface, SETTINGS and a larger connection window open the connection; streams wait for the server's SETTINGS")
    func opening() throws {
        var machine = Machine(localStreamLimit: 10, now: Self.start)
        machine.channelActive()
        var bytes = machine.takeOutput() ?? ByteBuffer()
        #expect(bytes.readString(length: 24) == "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        var decoder = HTTP2FrameDecoder()
        decoder.append(bytes)
        #expect(
            try decoder.nextFrame()
                == .settings(
                    ack: false,
                    [Self.setting(H2.settingMaxConcurrentStreams, 100), Self.setting(H2.settingInitialWindowSize, 1 << 20), Self.setting(H2.settingEnablePush, 0)]
                )
        )
        #expect(try decoder.nextFrame() == .windowUpdate(streamID: 0, increment: (1 << 24) - 65_535))
        #expect(machine.state == .connecting)
        #expect(machine.availableStreams == 0)

        // A request before the server's SETTINGS was not processed: it goes elsewhere.
        let early = machine.send(1, head: Self.head(), body: Self.body(10), deadline: Self.start + .seconds(30))
        #expect(Self.outcomes(early) == [1: .notProcessed])
        #expect(Self.written(&machine).isEmpty)

        let actions = machine.receive(.settings(ack: false, [Self.setting(H2.settingMaxConcurrentStreams, 5)]))
        #expect(actions.notice == .becameReady)
        #expect(Self.written(&machine) == [.settings(ack: true, [])])
        #expect(machine.state == .ready)
        #expect(machine.availableStreams == 5)
        // The server's limit moves later: that frees or takes streams, and the pool hears of it.
        let raised = machine.receive(.settings(ack: false, [Self.setting(H2.settingMaxConcurrentStreams, 50)]))
        #expect(raised.capacityChanged)
        #expect(machine.availableStreams == 10)
    }

    @Test("a request is HEADERS then DATA with END_STREAM; the answer completes it")
    func request() {
        var machine = Self.ready()
        let sent = machine.send(7, head: Self.head(), body: Self.body(300), deadline: Self.start + .seconds(30))
        #expect(sent.completions.isEmpty)
        let frames = Self.written(&machine)
        #expect(frames.count == 2)
        guard case .headers(1, false, true, _, nil, nil)? = frames.first else {
            Issue.record("not HEADERS on stream 1: \(frames)")
            return
        }
        #expect(frames.last == .data(streamID: 1, endStream: true, payload: Self.body(300)))
        #expect(machine.inFlight == 1)
        #expect(machine.availableStreams == 9)

        let answered = machine.receive(Self.answer(1))
        #expect(Self.outcomes(answered) == [7: .response(status: 200, body: nil)])
        #expect(answered.capacityChanged)
        #expect(machine.inFlight == 0)

        // An error answer: HEADERS, CONTINUATION, then the JSON body in two DATA frames.
        _ = machine.send(8, head: Self.head(), body: Self.body(10), deadline: Self.start + .seconds(30))
        _ = Self.written(&machine)
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var block = Self.block(status: "400", &encoder)
        let first = block.readSlice(length: 2) ?? ByteBuffer()
        #expect(machine.receive(.headers(streamID: 3, endStream: false, endHeaders: false, block: first)).completions.isEmpty)
        #expect(machine.receive(.continuation(streamID: 3, endHeaders: true, block: block)).completions.isEmpty)
        #expect(machine.receive(.data(streamID: 3, endStream: false, payload: ByteBuffer(string: "{\"reason\":"))).completions.isEmpty)
        let done = machine.receive(.data(streamID: 3, endStream: true, payload: ByteBuffer(string: "\"BadTopic\"}"), padding: 2))
        #expect(Self.outcomes(done) == [8: .response(status: 400, body: ByteBuffer(string: "{\"reason\":\"BadTopic\"}"))])
    }

    @Test("anything but CONTINUATION of the same stream inside a header block is a PROTOCOL_ERROR")
    func interruptedHeaderBlock() {
        var machine = Self.ready()
        _ = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        _ = Self.written(&machine)
        _ = machine.receive(.headers(streamID: 1, endStream: true, endHeaders: false, block: ByteBuffer(bytes: [0x88])))
        let actions = machine.receive(.ping(ack: false, data: 1))
        #expect(actions.close)
        #expect(Self.isGoAway(Self.written(&machine).last, code: H2.protocolError))
        // Nothing more is read; the streams fail when the channel closes.
        #expect(machine.receive(Self.answer(1)).completions.isEmpty)
        let (closed, wasReady) = machine.channelInactive()
        #expect(wasReady)
        #expect(Self.outcomes(closed) == [1: .connectionFailed])
    }

    // MARK: RST_STREAM

    @Test("RST_STREAM: REFUSED_STREAM was not processed, NO_ERROR after a status is the answer, other codes fail the attempt")
    func rstStreamCodes() {
        var machine = Self.ready()
        for tag in 0..<6 { _ = machine.send(tag, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30)) }
        _ = Self.written(&machine)
        // Streams 1, 3, 5, 7, 9, 11 carry tags 0…5.
        #expect(Self.outcomes(machine.receive(.rstStream(streamID: 1, code: H2.refusedStream))) == [0: .notProcessed])
        #expect(Self.outcomes(machine.receive(.rstStream(streamID: 3, code: H2.cancel))) == [1: .connectionFailed])
        #expect(Self.outcomes(machine.receive(.rstStream(streamID: 5, code: H2.protocolError))) == [2: .connectionFailed])
        // NO_ERROR with no answer yet: the stream is lost.
        #expect(Self.outcomes(machine.receive(.rstStream(streamID: 7, code: H2.noError))) == [3: .connectionFailed])
        // An answer without END_STREAM, then NO_ERROR: the answer counts (RFC 9113 §8.1).
        #expect(machine.receive(.headers(streamID: 9, endStream: false, endHeaders: true, block: Self.statusBlock(200))).completions.isEmpty)
        #expect(Self.outcomes(machine.receive(.rstStream(streamID: 9, code: H2.noError))) == [4: .response(status: 200, body: nil)])
        // INTERNAL_ERROR (2) after an answer's HEADERS: the answer may be incomplete; the attempt failed.
        _ = machine.receive(.headers(streamID: 11, endStream: false, endHeaders: true, block: Self.statusBlock(200)))
        let reset = machine.receive(.rstStream(streamID: 11, code: 0x2))
        #expect(Self.outcomes(reset) == [5: .connectionFailed])
        #expect(reset.capacityChanged)
        // RST_STREAM for a stream that is gone is ignored.
        #expect(machine.receive(.rstStream(streamID: 11, code: H2.cancel)).completions.isEmpty)
        #expect(machine.inFlight == 0)
        #expect(machine.state == .ready)
    }

    @Test("an answer before the whole body was sent stops the body with RST_STREAM NO_ERROR; the server's RST_STREAM NO_ERROR after it changes nothing")
    func earlyAnswer() {
        var machine = Self.ready([Self.setting(H2.settingInitialWindowSize, 10)])
        _ = machine.send(1, head: Self.head(), body: Self.body(25), deadline: Self.start + .seconds(30))
        var frames = Self.written(&machine)
        #expect(frames.last == .data(streamID: 1, endStream: false, payload: Self.body(10)))

        let answered = machine.receive(.headers(streamID: 1, endStream: true, endHeaders: true, block: Self.statusBlock(200)))
        #expect(Self.outcomes(answered) == [1: .response(status: 200, body: nil)])
        frames = Self.written(&machine)
        #expect(frames == [.rstStream(streamID: 1, code: H2.noError)])

        let reset = machine.receive(.rstStream(streamID: 1, code: H2.noError))
        #expect(reset.completions.isEmpty)
        #expect(!reset.close)
        // The rest of the body is never sent, even when the window opens.
        _ = machine.receive(.windowUpdate(streamID: 1, increment: 100))
        _ = machine.receive(.windowUpdate(streamID: 0, increment: 100))
        #expect(Self.written(&machine).isEmpty)
        #expect(machine.state == .ready)
        #expect(machine.availableStreams == 10)
    }

    // MARK: Flow control

    @Test("DATA waits for the stream window and goes on after WINDOW_UPDATE")
    func streamWindow() {
        var machine = Self.ready([Self.setting(H2.settingInitialWindowSize, 10)])
        _ = machine.send(1, head: Self.head(), body: Self.body(25), deadline: Self.start + .seconds(30))
        #expect(Self.written(&machine).last == .data(streamID: 1, endStream: false, payload: Self.body(10)))
        // Another stream's window is its own: it is blocked too, behind the first.
        _ = machine.send(2, head: Self.head(), body: Self.body(4), deadline: Self.start + .seconds(30))
        #expect(Self.written(&machine).count == 2)  // HEADERS and its 4 bytes (within its own window)
        _ = machine.receive(.windowUpdate(streamID: 1, increment: 5))
        #expect(Self.written(&machine) == [.data(streamID: 1, endStream: false, payload: Self.body(5))])
        _ = machine.receive(.windowUpdate(streamID: 1, increment: 100))
        #expect(Self.written(&machine) == [.data(streamID: 1, endStream: true, payload: Self.body(10))])
        // WINDOW_UPDATE for a finished stream is ignored.
        _ = machine.receive(.windowUpdate(streamID: 99, increment: 100))
        #expect(Self.written(&machine).isEmpty)
    }

    @Test("DATA waits for the connection window, and goes in frames no larger than the peer's frame size")
    func connectionWindow() {
        var machine = Self.ready([Self.setting(H2.settingInitialWindowSize, 1 << 20)])
        #expect(machine.connectionSendWindow == 65_535)
        _ = machine.send(1, head: Self.head(), body: Self.body(70_000), deadline: Self.start + .seconds(30))
        var frames = Self.written(&machine).dropFirst()
        #expect(frames.map(\.flowControlledLength) == [16_384, 16_384, 16_384, 16_383])
        #expect(frames.allSatisfy { if case .data(1, false, _, nil) = $0 { return true } else { return false } })
        #expect(machine.connectionSendWindow == 0)
        // A second request's DATA queues behind the first.
        _ = machine.send(2, head: Self.head(), body: Self.body(100), deadline: Self.start + .seconds(30))
        #expect(Self.written(&machine).count == 1)  // HEADERS only
        _ = machine.receive(.windowUpdate(streamID: 0, increment: 5_000))
        frames = Self.written(&machine)[...]
        #expect(frames == [.data(streamID: 1, endStream: true, payload: Self.body(4_465)), .data(streamID: 3, endStream: true, payload: Self.body(100))])
        #expect(machine.connectionSendWindow == 5_000 - 4_465 - 100)

        // A larger SETTINGS_MAX_FRAME_SIZE makes larger frames.
        var roomy = Self.ready([Self.setting(H2.settingInitialWindowSize, 1 << 20), Self.setting(H2.settingMaxFrameSize, 65_536)])
        _ = roomy.receive(.windowUpdate(streamID: 0, increment: 1 << 20))
        _ = roomy.send(1, head: Self.head(), body: Self.body(70_000), deadline: Self.start + .seconds(30))
        #expect(Self.written(&roomy).dropFirst().map(\.flowControlledLength) == [65_536, 4_464])
    }

    @Test("SETTINGS_INITIAL_WINDOW_SIZE changes move every open stream's window, below zero too")
    func initialWindowSizeChanges() {
        var machine = Self.ready([Self.setting(H2.settingInitialWindowSize, 10)])
        _ = machine.send(1, head: Self.head(), body: Self.body(40), deadline: Self.start + .seconds(30))
        _ = Self.written(&machine)  // 10 bytes sent, window 0
        // Raised by 20: 20 more bytes go at once.
        _ = machine.receive(.settings(ack: false, [Self.setting(H2.settingInitialWindowSize, 30)]))
        #expect(Self.written(&machine) == [.settings(ack: true, []), .data(streamID: 1, endStream: false, payload: Self.body(20))])
        // Lowered by 25: the window is -25; an update of 30 leaves 5.
        _ = machine.receive(.settings(ack: false, [Self.setting(H2.settingInitialWindowSize, 5)]))
        #expect(Self.written(&machine) == [.settings(ack: true, [])])
        _ = machine.receive(.windowUpdate(streamID: 1, increment: 20))
        #expect(Self.written(&machine).isEmpty)
        _ = machine.receive(.windowUpdate(streamID: 1, increment: 10))
        #expect(Self.written(&machine) == [.data(streamID: 1, endStream: false, payload: Self.body(5))])
        // New streams start with the new initial window.
        _ = machine.send(2, head: Self.head(), body: Self.body(8), deadline: Self.start + .seconds(30))
        #expect(Self.written(&machine).last == .data(streamID: 3, endStream: false, payload: Self.body(5)))
    }

    @Test("windows past 2^31-1 are FLOW_CONTROL_ERRORs: of the connection, or of the one stream")
    func windowOverflow() {
        // SETTINGS_INITIAL_WINDOW_SIZE above the maximum.
        var machine = Self.ready()
        var actions = machine.receive(.settings(ack: false, [Self.setting(H2.settingInitialWindowSize, 0x8000_0000)]))
        #expect(actions.close)
        #expect(Self.isGoAway(Self.written(&machine).last, code: H2.flowControlError))

        // An INITIAL_WINDOW_SIZE change that pushes an open stream's window past the maximum.
        machine = Self.ready()
        _ = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        _ = machine.receive(.windowUpdate(streamID: 1, increment: 0x7fff_ffff - 65_535))
        _ = Self.written(&machine)
        actions = machine.receive(.settings(ack: false, [Self.setting(H2.settingInitialWindowSize, 0x7fff_ffff)]))
        #expect(actions.close)
        #expect(Self.isGoAway(Self.written(&machine).last, code: H2.flowControlError))

        // The connection window.
        machine = Self.ready()
        actions = machine.receive(.windowUpdate(streamID: 0, increment: 0x7fff_ffff))
        #expect(actions.close)
        #expect(Self.isGoAway(Self.written(&machine).last, code: H2.flowControlError))

        // A zero increment on the connection is a PROTOCOL_ERROR.
        machine = Self.ready()
        actions = machine.receive(.windowUpdate(streamID: 0, increment: 0))
        #expect(actions.close)
        #expect(Self.isGoAway(Self.written(&machine).last, code: H2.protocolError))

        // One stream's window: that stream is reset and fails; the connection goes on.
        machine = Self.ready()
        _ = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        _ = machine.send(2, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        _ = Self.written(&machine)
        actions = machine.receive(.windowUpdate(streamID: 1, increment: 0x7fff_ffff))
        #expect(Self.outcomes(actions) == [1: .connectionFailed])
        #expect(!actions.close)
        #expect(Self.written(&machine) == [.rstStream(streamID: 1, code: H2.flowControlError)])
        #expect(machine.inFlight == 1)
    }

    @Test("answers are acknowledged with WINDOW_UPDATE: the connection every 8 MiB, a stream every 512 KiB")
    func receiveWindow() {
        var machine = Self.ready()
        _ = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        _ = Self.written(&machine)
        _ = machine.receive(.headers(streamID: 1, endStream: false, endHeaders: true, block: Self.statusBlock(200)))
        let chunk = Self.body(16_384)
        var updates: [HTTP2Frame] = []
        for _ in 0..<(1 << 23) / 16_384 {
            _ = machine.receive(.data(streamID: 1, endStream: false, payload: chunk))
            updates += Self.written(&machine)
        }
        #expect(updates.filter { $0 == .windowUpdate(streamID: 1, increment: 1 << 19) }.count == 16)
        #expect(updates.filter { $0 == .windowUpdate(streamID: 0, increment: 1 << 23) }.count == 1)
        #expect(updates.count == 17)
        // DATA for streams that are gone still counts against the connection window.
        machine = Self.ready()
        for _ in 0..<(1 << 23) / 16_384 { _ = machine.receive(.data(streamID: 99, endStream: false, payload: chunk)) }
        #expect(Self.written(&machine) == [.windowUpdate(streamID: 0, increment: 1 << 23)])
    }

    @Test("DATA beyond the connection's receive window is a FLOW_CONTROL_ERROR")
    func receiveWindowExceeded() {
        // Before our preface raised the window, the server may send 65,535 bytes.
        var machine = Machine(localStreamLimit: 10, now: Self.start)
        var actions = Machine.Actions()
        for _ in 0..<4 { actions = machine.receive(.data(streamID: 1, endStream: false, payload: Self.body(16_384))) }
        #expect(actions.close)
        #expect(Self.isGoAway(Self.written(&machine).last, code: H2.flowControlError))
    }

    // MARK: GOAWAY, stream ids

    @Test("GOAWAY: streams above the last stream id were not processed (sent again elsewhere); the rest finish, then the connection closes")
    func goAway() {
        var machine = Self.ready()
        for tag in 1...3 { _ = machine.send(tag, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30)) }
        _ = Self.written(&machine)
        let away = machine.receive(.goAway(lastStreamID: 3, code: H2.noError, debugData: ByteBuffer()))
        #expect(Self.outcomes(away) == [3: .notProcessed])
        #expect(away.notice == .draining)
        #expect(!away.close)
        #expect(machine.state == .draining)
        #expect(machine.availableStreams == 0)
        #expect(Self.outcomes(machine.send(4, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))) == [4: .notProcessed])
        // A second GOAWAY with a lower id drops more; the pool is not told twice.
        let again = machine.receive(.goAway(lastStreamID: 1, code: H2.noError, debugData: ByteBuffer()))
        #expect(Self.outcomes(again) == [2: .notProcessed])
        #expect(again.notice == nil)
        let last = machine.receive(Self.answer(1))
        #expect(Self.outcomes(last) == [1: .response(status: 200, body: nil)])
        #expect(last.close)
    }

    @Test("GOAWAY with no stream open closes at once; one with an error code still lets processed streams finish")
    func goAwayIdle() {
        var machine = Self.ready()
        #expect(machine.receive(.goAway(lastStreamID: 0, code: H2.noError, debugData: ByteBuffer())).close)
        machine = Self.ready()
        _ = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        let away = machine.receive(.goAway(lastStreamID: 1, code: 0x2, debugData: ByteBuffer(string: "maintenance")))
        #expect(away.completions.isEmpty)
        #expect(!away.close)
        #expect(machine.receive(Self.answer(1)).close)
    }

    @Test("running out of stream ids drains the connection after the last usable id")
    func streamIDExhaustion() {
        var machine = Self.ready(firstStreamID: Int32.max - 4)
        let first = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        #expect(first.notice == nil)
        let second = machine.send(2, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        #expect(second.notice == .draining)
        #expect(second.completions.isEmpty)
        let ids = Self.written(&machine).map(\.streamID)
        // HEADERS of both streams, then their DATA.
        #expect(ids == [Int32.max - 4, Int32.max - 2, Int32.max - 4, Int32.max - 2])
        #expect(machine.state == .draining)
        #expect(machine.availableStreams == 0)
        #expect(Self.outcomes(machine.send(3, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))) == [3: .notProcessed])
        #expect(!machine.receive(Self.answer(Int32.max - 4)).close)
        let last = machine.receive(Self.answer(Int32.max - 2))
        #expect(Self.outcomes(last) == [2: .response(status: 200, body: nil)])
        #expect(last.close)
    }

    // MARK: Deadlines, PING

    @Test("a stream past its deadline times out with RST_STREAM CANCEL; a late answer is ignored")
    func deadlines() {
        var machine = Self.ready()
        _ = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(5))
        _ = machine.send(2, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(20))
        _ = Self.written(&machine)
        #expect(machine.tick(now: Self.start + .seconds(4), pingInterval: .seconds(60)).completions.isEmpty)
        let expired = machine.tick(now: Self.start + .seconds(5), pingInterval: .seconds(60))
        #expect(Self.outcomes(expired) == [1: .timedOut])
        #expect(expired.capacityChanged)
        #expect(Self.written(&machine) == [.rstStream(streamID: 1, code: H2.cancel)])
        #expect(machine.inFlight == 1)
        #expect(machine.receive(Self.answer(1)).completions.isEmpty)
        #expect(Self.outcomes(machine.receive(Self.answer(3))) == [2: .response(status: 200, body: nil)])

        // A stream still waiting for window times out too, and its DATA never goes.
        machine = Self.ready([Self.setting(H2.settingInitialWindowSize, 1)])
        _ = machine.send(3, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(5))
        _ = Self.written(&machine)
        #expect(Self.outcomes(machine.tick(now: Self.start + .seconds(6), pingInterval: .seconds(60))) == [3: .timedOut])
        _ = machine.receive(.windowUpdate(streamID: 1, increment: 100))
        #expect(Self.written(&machine) == [.rstStream(streamID: 1, code: H2.cancel)])
    }

    @Test("PING is answered with its data; an idle connection sends PING, and closes when no ack comes")
    func ping() {
        var machine = Self.ready()
        _ = machine.receive(.ping(ack: false, data: 0xDEAD_BEEF))
        #expect(Self.written(&machine) == [.ping(ack: true, data: 0xDEAD_BEEF)])

        // Frames were read since the connection opened: no PING at the first check.
        let interval = TimeAmount.seconds(60)
        _ = machine.tick(now: Self.start + .seconds(60), pingInterval: interval)
        #expect(Self.written(&machine).isEmpty)
        // Nothing read for an interval: PING.
        _ = machine.tick(now: Self.start + .seconds(120), pingInterval: interval)
        #expect(Self.written(&machine) == [.ping(ack: false, data: 0)])
        // The ack arrives: all is well, and later idle intervals ping again.
        _ = machine.receive(.ping(ack: true, data: 0))
        #expect(!machine.tick(now: Self.start + .seconds(200), pingInterval: interval).close)
        _ = Self.written(&machine)
        _ = machine.tick(now: Self.start + .seconds(260), pingInterval: interval)
        #expect(Self.written(&machine) == [.ping(ack: false, data: 0)])
        // No ack within min(interval, 10 s): the connection is dead.
        #expect(!machine.tick(now: Self.start + .seconds(270), pingInterval: interval).close)
        #expect(machine.tick(now: Self.start + .seconds(271), pingInterval: interval).close)
    }

    // MARK: Errors, closing

    @Test("bad frames and settings are connection errors: GOAWAY with the code, then close")
    func connectionErrors() {
        let cases: [(HTTP2Frame, UInt32)] = [
            (.settings(ack: false, [Self.setting(H2.settingMaxFrameSize, 16_383)]), H2.protocolError),
            (.settings(ack: false, [Self.setting(H2.settingMaxFrameSize, 1 << 24)]), H2.protocolError),
            (.settings(ack: false, [Self.setting(H2.settingEnablePush, 2)]), H2.protocolError),
            (.pushPromise(streamID: 1, promisedStreamID: 2), H2.protocolError),
            (.continuation(streamID: 1, endHeaders: true, block: ByteBuffer()), H2.protocolError),
            (.headers(streamID: 1, endStream: true, endHeaders: true, block: ByteBuffer(bytes: [0xff, 0xff, 0xff, 0xff, 0xff])), H2.compressionError),
        ]
        for (frame, code) in cases {
            var machine = Self.ready()
            _ = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
            _ = Self.written(&machine)
            let actions = machine.receive(frame)
            #expect(actions.close, "\(frame)")
            #expect(actions.notice == .draining)
            #expect(Self.isGoAway(Self.written(&machine).last, code: code), "\(frame)")
            #expect(Self.outcomes(machine.channelInactive().actions) == [1: .connectionFailed])
        }
        // What the decoder could not read (an oversize frame) is one too.
        var machine = Self.ready()
        #expect(machine.framingError(HTTP2ConnectionError(code: H2.frameSizeError)).close)
        #expect(Self.isGoAway(Self.written(&machine).last, code: H2.frameSizeError))
        // PRIORITY and unknown frame types are ignored.
        machine = Self.ready()
        #expect(!machine.receive(.priority(streamID: 1, .init(exclusive: false, dependency: 0, weight: 1))).close)
        #expect(!machine.receive(.unknown(type: 0xb, flags: 0, streamID: 0, payload: ByteBuffer())).close)
        #expect(Self.written(&machine).isEmpty)
    }

    @Test("a closed channel fails its streams; a connection that never got going says so; shutdown fails with .shutdown")
    func closing() {
        var machine = Self.ready()
        _ = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        _ = machine.send(2, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        let (actions, wasReady) = machine.channelInactive()
        #expect(wasReady)
        #expect(Self.outcomes(actions) == [1: .connectionFailed, 2: .connectionFailed])
        #expect(machine.state == .closed)
        #expect(Self.outcomes(machine.send(3, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))) == [3: .notProcessed])

        var never = Machine(localStreamLimit: 10, now: Self.start)
        never.channelActive()
        #expect(!never.channelInactive().wasReady)

        machine = Self.ready()
        _ = machine.send(1, head: Self.head(), body: Self.body(5), deadline: Self.start + .seconds(30))
        let shut = machine.shutdown()
        #expect(shut.close)
        #expect(Self.outcomes(shut) == [1: .shutdown])
        #expect(machine.channelInactive().actions.completions.isEmpty)
    }
}
