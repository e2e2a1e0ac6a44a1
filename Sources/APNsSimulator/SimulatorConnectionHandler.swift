import APNs
import Foundation
import HeraldCore
import NIOCore
import NIOSSL
import NIOHPACK
import NIOHTTP2

/// One client connection of the simulator: reads each request's HEADERS and DATA frames, and
/// once the body is complete (APNs reads the whole body before answering) validates and answers.
final class SimulatorConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct PendingStream {
        var headers: HPACKHeaders
        var body: ByteBuffer?
    }

    /// Pushes (`/3/device`, `/4/broadcasts`), or the channel management API (`/1/apps`), which
    /// APNs serves on hosts and ports of its own.
    enum Role { case push, management }

    let state: SimulatorState
    private let role: Role
    private var connectionNumber = 0
    private var context: ChannelHandlerContext?
    private var streams: [HTTP2StreamID: PendingStream] = [:]
    /// Streams received and not yet answered.
    private var open = 0
    private var limitedToOne: Bool
    private var streamsSeen = 0
    private var goAwayLastStreamID: HTTP2StreamID?
    /// GOAWAY after N streams, done in two steps so that no stream above the last one is still
    /// on the wire when the GOAWAY goes out (NIOHTTP2 takes DATA of a stream it ignored after its
    /// GOAWAY for a connection error): first SETTINGS_MAX_CONCURRENT_STREAMS = 0, then, once the
    /// client acknowledged it (so every stream it opened has arrived), GOAWAY with the Nth stream
    /// as the last one. Streams above it are held unprocessed meanwhile, then dropped.
    private var goAwayTarget: HTTP2StreamID?
    private var goAwayAtAcknowledgement: Int?
    /// SETTINGS frames sent (NIOHTTP2's initial one included) and acknowledged.
    private var settingsSent = 1
    private var settingsAcknowledged = 0
    private var flushScheduled = false
    /// The provider token accepted last on this connection.
    private var currentToken: VerifiedToken?
    private var currentAuthorization: String?
    private var firstKeyID: String?
    /// The client certificate of this connection (read once, at its first request); nil on
    /// token connections.
    private lazy var clientCertificate: ClientCertificateFields? = {
        guard let context, let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate(),
            let der = try? certificate.toDERBytes()
        else { return nil }
        return ClientCertificateFields(der: der)
    }()
    /// DATA bytes received since the last connection-level WINDOW_UPDATE (no multiplexer
    /// replenishes the connection window for us).
    private var unacknowledgedInboundBytes = 0
    private var windowWidened = false
    static let connectionWindow = 1 << 24

    init(state: SimulatorState, limitedToOne: Bool, role: Role = .push) {
        self.state = state
        self.role = role
        self.limitedToOne = limitedToOne && role == .push
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        connectionNumber = state.register(context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        state.unregister(context.channel)
        self.context = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            if let last = goAwayLastStreamID, streamID > last { return }
            if let existing = streams[streamID] {
                // Trailers: nothing to keep, but they may end the stream.
                if headers.endStream {
                    streams.removeValue(forKey: streamID)
                    process(streamID, existing, context: context)
                }
                return
            }
            streamsSeen += 1
            open += 1
            state.stats.peakStreams = max(state.stats.peakStreams, open)
            if limitedToOne {
                state.stats.peakStreamsWhileLimitedToOne = max(state.stats.peakStreamsWhileLimitedToOne, open)
            }
            let pending = PendingStream(headers: headers.headers, body: nil)
            if state.configuration.faults.answerBeforeBody, !headers.endStream, !isHeld(streamID) {
                answerEarly(streamID, context: context)
                return
            }
            if headers.endStream, !isHeld(streamID) {
                process(streamID, pending, context: context)
            } else {
                streams[streamID] = pending
            }
            if let limit = state.configuration.faults.goAwayAfterStreams, streamsSeen == limit, goAwayTarget == nil {
                goAwayTarget = streamID
                sendSettings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 0)], context: context)
                goAwayAtAcknowledgement = settingsSent
            }
        case .data(let data):
            consumedInbound(data.data.readableBytes + (data.paddingBytes ?? 0), context: context)
            guard var pending = streams[streamID] else { return }
            if case .byteBuffer(var chunk) = data.data, chunk.readableBytes > 0 {
                if var body = pending.body {
                    pending.body = nil
                    body.writeBuffer(&chunk)
                    pending.body = body
                } else {
                    pending.body = chunk
                }
            }
            if data.endStream, !isHeld(streamID) {
                streams.removeValue(forKey: streamID)
                process(streamID, pending, context: context)
            } else {
                streams[streamID] = pending
            }
        case .rstStream:
            if streams.removeValue(forKey: streamID) != nil { open -= 1 }
        case .ping(_, ack: false):
            state.stats.pingsReceived += 1
        case .settings(.ack):
            settingsAcknowledged += 1
            if let target = goAwayTarget, let awaited = goAwayAtAcknowledgement, settingsAcknowledged >= awaited,
                goAwayLastStreamID == nil
            {
                sendGoAway(lastStreamID: target, context: context)
            }
        case .settings(.settings):
            if !windowWidened {
                windowWidened = true
                sendWindowUpdate(Self.connectionWindow - 65_535, context: context)
            }
        default:
            break
        }
    }

    /// 200 and END_STREAM before the body was read, then RST_STREAM NO_ERROR (legal HTTP/2).
    private func answerEarly(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        state.stats.requests += 1
        open -= 1
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: "200")
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true)))),
            promise: nil
        )
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.noError))), promise: nil)
        scheduleFlush(context: context)
    }

    /// A stream above the coming GOAWAY's last stream: not processed.
    private func isHeld(_ streamID: HTTP2StreamID) -> Bool {
        guard let target = goAwayTarget else { return false }
        return streamID > target
    }

    private func sendSettings(_ settings: HTTP2Settings, context: ChannelHandlerContext) {
        settingsSent += 1
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings)))),
            promise: nil
        )
        scheduleFlush(context: context)
    }

    private func consumedInbound(_ bytes: Int, context: ChannelHandlerContext) {
        unacknowledgedInboundBytes += bytes
        guard unacknowledgedInboundBytes >= Self.connectionWindow / 2 else { return }
        let increment = unacknowledgedInboundBytes
        unacknowledgedInboundBytes = 0
        sendWindowUpdate(increment, context: context)
    }

    private func sendWindowUpdate(_ increment: Int, context: ChannelHandlerContext) {
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil
        )
        scheduleFlush(context: context)
    }

    private func sendGoAway(lastStreamID: HTTP2StreamID, context: ChannelHandlerContext) {
        goAwayLastStreamID = lastStreamID
        state.stats.goAwaysSent += 1
        for id in streams.keys where id > lastStreamID {
            streams.removeValue(forKey: id)
            open -= 1
        }
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil))
            ),
            promise: nil
        )
        scheduleFlush(context: context)
        closeIfDone(context: context)
    }

    private func process(_ streamID: HTTP2StreamID, _ stream: PendingStream, context: ChannelHandlerContext) {
        state.stats.requests += 1
        var request = ParsedRequest(headers: stream.headers)
        let body = stream.body.map { Array($0.readableBytesView) } ?? []
        let verdict = judge(&request, body: body)
        let apnsID = (role == .management || request.broadcast ? request.requestID ?? request.apnsID : request.apnsID)
            ?? UUID().uuidString.lowercased()
        if role == .push, !request.broadcast {
            var collapseID: String?
            for (name, value, _) in stream.headers where name == "apns-collapse-id" { collapseID = value }
            state.recordAttempt(token: request.deviceToken, status: verdict.status, collapseID: collapseID,
                                credential: request.credential)
        }
        if verdict.status == 200, role == .push {
            var headerMap: [String: String] = [:]
            for (name, value, _) in stream.headers { headerMap[name] = value }
            if request.broadcast, let channel = request.channelID {
                // One request, every subscribed activity: the log shows each device's copy.
                state.stats.broadcasts += 1
                for device in state.channels.channel(channel, of: request.bundle)?.subscribers ?? [] {
                    state.record(
                        AcceptedNotification(deviceToken: device, headers: headerMap, payload: body, apnsID: apnsID,
                                             connection: connectionNumber, channel: channel),
                        topic: request.bundle)
                }
            } else {
                if let channel = request.startsOnChannel {
                    state.channels.subscribe(request.deviceToken, to: channel, of: request.bundle)
                }
                state.record(
                    AcceptedNotification(
                        deviceToken: request.deviceToken,
                        headers: headerMap,
                        payload: body,
                        apnsID: apnsID,
                        connection: connectionNumber
                    ),
                    topic: request.topic ?? ""
                )
            }
        } else if verdict.status >= 300 {
            state.reject(verdict.detail ?? verdict.reason ?? "HTTP \(verdict.status)")
        }
        let latency = state.configuration.faults.latency
        if state.heldTokens.contains(request.deviceToken) {
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            state.heldAnswers.append {
                let (handler, context) = bound.value
                handler.answer(streamID, verdict: verdict, apnsID: apnsID, context: context)
            }
        } else if latency > .zero {
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: TimeAmount(latency)) {
                let (handler, context) = bound.value
                handler.answer(streamID, verdict: verdict, apnsID: apnsID, context: context)
            }
        } else {
            answer(streamID, verdict: verdict, apnsID: apnsID, context: context)
        }
    }

    private func answer(_ streamID: HTTP2StreamID, verdict: Verdict, apnsID: String, context: ChannelHandlerContext) {
        guard self.context != nil else { return }
        open -= 1
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(verdict.status))
        headers.add(name: verdict.requestIDHeader ? "apns-request-id" : "apns-id", value: apnsID, indexing: .nonIndexable)
        for (name, value) in verdict.headers { headers.add(name: name, value: value, indexing: .nonIndexable) }
        var json = verdict.body
        if let reason = verdict.reason {
            json = "{\"reason\":\"\(reason)\""
            if let timestamp = verdict.timestampMilliseconds { json! += ",\"timestamp\":\(timestamp)" }
            json! += "}"
        }
        if let json {
            headers.add(name: "content-type", value: "application/json")
            let body = context.channel.allocator.buffer(string: json)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers)))), promise: nil)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
                promise: nil
            )
        } else {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true)))),
                promise: nil
            )
        }
        if goAwayLastStreamID != nil {
            // After our GOAWAY the client may still send streams it had in flight. NIOHTTP2 ignores
            // their HEADERS but takes their DATA for a connection error and closes at once, dropping
            // what was written and not yet flushed: flush each answer now so none is lost.
            context.flush()
        } else {
            scheduleFlush(context: context)
        }
        closeIfDone(context: context)
    }

    private func closeIfDone(context: ChannelHandlerContext) {
        guard goAwayLastStreamID != nil, open == 0, streams.isEmpty else { return }
        // Let the answers go out, then close.
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .milliseconds(20)) {
            bound.value.close(promise: nil)
        }
    }

    private func scheduleFlush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = bound.value
            handler.flushScheduled = false
            if handler.context != nil { context.flush() }
        }
    }

    // MARK: Validation

    struct ParsedRequest {
        var method: String?
        var path: String?
        var authorization: String?
        var topic: String?
        var pushType: String?
        var priority: String?
        var expiration: String?
        var collapseID: String?
        var apnsID: String?
        var requestID: String?
        var channelID: String?
        var duplicate = false
        var deviceToken = ""
        /// `/4/broadcasts/apps/<bundle>`: one push for a channel's devices.
        var broadcast = false
        /// The app: the topic without a push-type suffix, or the bundle id of the path.
        var bundle = ""
        /// A Live Activity start accepted with `input-push-channel`: the device subscribes.
        var startsOnChannel: String?
        /// What authenticated the request, for the attempts log: `key KID` (a provider token's
        /// key id) or `certificate SERIAL` (the connection's client certificate).
        var credential: String?

        init(headers: HPACKHeaders) {
            for (name, value, _) in headers {
                func set(_ slot: inout String?) {
                    if slot != nil { duplicate = true }
                    slot = value
                }
                switch name {
                case ":method": set(&method)
                case ":path": set(&path)
                case "authorization": set(&authorization)
                case "apns-topic": set(&topic)
                case "apns-push-type": set(&pushType)
                case "apns-priority": set(&priority)
                case "apns-expiration": set(&expiration)
                case "apns-collapse-id": set(&collapseID)
                case "apns-id": set(&apnsID)
                case "apns-request-id": set(&requestID)
                case "apns-channel-id": set(&channelID)
                default: break
                }
            }
        }
    }

    private func judge(_ request: inout ParsedRequest, body: [UInt8]) -> Verdict {
        var verdict: Verdict
        if role == .management {
            verdict = judgeManagement(&request, body: body)
        } else if request.method == "POST", let path = request.path, path.hasPrefix(Self.broadcastPrefix) {
            request.broadcast = true
            verdict = judgeBroadcast(&request, bundle: String(path.dropFirst(Self.broadcastPrefix.count)), body: body)
        } else {
            verdict = judgeDevicePush(&request, body: body)
        }
        verdict.requestIDHeader = role == .management || request.broadcast
        return verdict
    }

    static let broadcastPrefix = "/4/broadcasts/apps/"

    private func judgeDevicePush(_ request: inout ParsedRequest, body: [UInt8]) -> Verdict {
        guard request.method == "POST" else { return .reject(405, "MethodNotAllowed") }
        guard let path = request.path, path.hasPrefix("/3/device/") else { return .reject(404, "BadPath") }
        let token = path.dropFirst("/3/device/".count)
        request.deviceToken = String(token).lowercased()
        if let apnsID = request.apnsID, !HeaderRules.isUUID(apnsID) {
            request.apnsID = nil
            return .reject(400, "BadMessageId")
        }
        if request.duplicate { return .reject(400, "DuplicateHeaders") }
        if token.isEmpty { return .reject(400, "MissingDeviceToken") }
        if let refusal = authorize(&request, topic: request.topic) { return refusal }
        return judgeNotification(&request, token: token, body: body)
    }

    /// Checks the connection's client certificate or provider token for `topic` (the request's
    /// topic, or the bundle id of a broadcast or channel path): nil when authorized.
    func authorize(_ request: inout ParsedRequest, topic: String?) -> Verdict? {
        let configuration = state.configuration
        // A connection with a client certificate is authorized by it, and needs no token.
        if let certificate = clientCertificate {
            request.credential = "certificate \(certificate.serialNumber)"
            if state.auth.revokedCertificates.contains(certificate.serialNumber) { return .reject(403, "BadCertificate") }
            raiseStreamLimitIfNeeded()
            guard let topic else { return .reject(400, "MissingTopic") }
            // A certificate names bundle ids; it covers no push-type topic (Live Activities,
            // widgets and controls take provider tokens only).
            guard certificate.topics.contains(topic), state.auth.certificateTopics.contains(topic) else {
                return .reject(400, "TopicDisallowed")
            }
            request.bundle = topic
            return nil
        }

        // Provider token.
        guard let authorization = request.authorization else { return .reject(403, "MissingProviderToken") }
        let now = Int64(configuration.clock().timeIntervalSince1970)
        let verified: VerifiedToken
        if authorization == currentAuthorization, let currentToken {
            verified = currentToken
        } else {
            let auth = state.auth
            switch ProviderTokenVerifier.verify(authorization: authorization, lookup: { auth.key($0) }) {
            case .failure: return .reject(403, "InvalidProviderToken")
            case .success(let token): verified = token
            }
        }
        request.credential = "key \(verified.keyID)"
        // A key revoked since this connection's token was accepted.
        if state.auth.key(verified.keyID) == nil { return .reject(403, "InvalidProviderToken") }
        if verified.issuedAt > now + 60 { return .reject(403, "InvalidProviderToken") }
        if now - verified.issuedAt > 3600 { return .reject(403, "ExpiredProviderToken") }
        if let firstKeyID, firstKeyID != verified.keyID { return .reject(403, "UnrelatedKeyIdInToken") }
        if authorization != currentAuthorization {
            // A new token on this connection: APNs refuses renewals faster than every 20 minutes.
            if let previous = currentToken, verified.issuedAt - previous.issuedAt < 20 * 60 {
                return .reject(429, "TooManyProviderTokenUpdates")
            }
            currentToken = verified
            currentAuthorization = authorization
            if firstKeyID == nil { firstKeyID = verified.keyID }
        }
        raiseStreamLimitIfNeeded()

        guard let topic else { return .reject(400, "MissingTopic") }
        let bundle = PushTypeRules.split(topic: topic).bundle
        guard let topicTeam = state.auth.tokenTopics[bundle] else { return .reject(400, "TopicDisallowed") }
        // A token of another team than the topic's app: Apple answers InvalidProviderToken (the
        // token does not authorize this provider for the topic).
        guard topicTeam == verified.teamID else { return .reject(403, "InvalidProviderToken") }
        request.bundle = bundle
        return nil
    }

    /// The checks after authorization: headers, payload, device, faults.
    private func judgeNotification(_ request: inout ParsedRequest, token: Substring, body: [UInt8]) -> Verdict {
        let configuration = state.configuration
        guard HeaderRules.isHexToken(token) else { return .reject(400, "BadDeviceToken") }
        if let pushType = request.pushType, !HeaderRules.validPushTypes.contains(pushType) {
            return .reject(400, "InvalidPushType")
        }
        if let problem = PushTypeRules.topicProblem(topic: request.topic ?? "", pushType: request.pushType) {
            return .reject(400, problem)
        }
        if let priority = request.priority, priority != "10", priority != "5", priority != "1" {
            return .reject(400, "BadPriority")
        }
        // Apple: background (content-available) pushes must use priority 5; the default 10 is refused.
        if request.pushType == "background", request.priority != "5" { return .reject(400, "BadPriority") }
        // Live Activities take 5 or 10 only.
        if request.pushType == "liveactivity", request.priority == "1" { return .reject(400, "BadPriority") }
        if let expiration = request.expiration, Int64(expiration) == nil { return .reject(400, "BadExpirationDate") }
        if let collapseID = request.collapseID, collapseID.utf8.count > 64 { return .reject(400, "BadCollapseId") }

        // Payload.
        if body.isEmpty { return .reject(400, "PayloadEmpty") }
        if body.count > PayloadBuilder.maxBytes { return .reject(413, "PayloadTooLarge") }
        // APNs documents no reason for a payload that is not a notification object; this one is ours.
        guard let aps = HeaderRules.aps(body) else { return .reject(400, "BadPayload") }
        switch request.pushType {
        case "liveactivity"?:
            if let problem = PushTypeRules.liveActivityProblem(aps, broadcast: false) { return .badPayload(problem) }
            if aps["event"] as? String == "start", let channel = aps["input-push-channel"] as? String {
                request.startsOnChannel = channel
            }
        case "widgets"?, "controls"?:
            if let problem = PushTypeRules.contentChangedProblem(aps) { return .badPayload(problem) }
        default: break
        }

        // Device.
        if configuration.tokensOfOtherTopics.contains(request.deviceToken) {
            return .reject(400, "DeviceTokenNotForTopic")
        }
        if let since = state.unregistered[request.deviceToken] {
            var verdict = Verdict.reject(410, "Unregistered")
            verdict.timestampMilliseconds = Int64(since.timeIntervalSince1970 * 1000)
            return verdict
        }
        return faultOrAccept()
    }

    func faultOrAccept() -> Verdict {
        let faults = state.configuration.faults
        if faults.rate429 > 0 || faults.rate500 > 0 || faults.rate503 > 0 {
            let draw = Double.random(in: 0..<1, using: &state.random)
            if draw < faults.rate429 { return .reject(429, "TooManyRequests") }
            if draw < faults.rate429 + faults.rate500 { return .reject(500, "InternalServerError") }
            if draw < faults.rate429 + faults.rate500 + faults.rate503 { return .reject(503, "ServiceUnavailable") }
        }
        return Verdict(status: 200, reason: nil)
    }

    private func raiseStreamLimitIfNeeded() {
        guard limitedToOne, let context else { return }
        limitedToOne = false
        guard goAwayTarget == nil else { return }
        sendSettings(
            [HTTP2Setting(parameter: .maxConcurrentStreams, value: state.configuration.maxConcurrentStreams)],
            context: context
        )
    }
}
