import Foundation
import HeraldCore
import Hummingbird
import Logging
import NIOCore
import Store

/// The HTTP side of the reply loop: `POST /v1/replies`, `GET /healthz`, and
/// the app's endpoints (`AppEndpoints`: device registration, the localized
/// `GET /v1/notification-config`).
public enum IntakeServer {
    public static func router(intake: ReplyIntake, app: AppEndpoints? = nil) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.post("/v1/replies") { request, _ -> Response in
            var request = request
            let bytes: ByteBuffer
            do {
                bytes = try await request.collectBody(upTo: ReplyRules.maxBodyBytes)
            } catch {
                return json(ReplyRules.errorJSON(.tooLarge), status: 413)
            }
            switch try await intake.submit(bytes.readableBytesView) {
            case .success(.stored):
                return json(Array(#"{"status":"stored"}"#.utf8), status: 202)
            case .success(.duplicate):
                return json(Array(#"{"status":"duplicate"}"#.utf8), status: 200)
            case .failure(let error):
                return json(ReplyRules.errorJSON(error), status: error.status)
            }
        }
        (app ?? AppEndpoints(client: intake.store.client, verifier: nil, logger: intake.logger)).add(to: router)
        router.get("/healthz") { _, _ -> Response in
            json(Array(#"{"status":"ok"}"#.utf8), status: 200)
        }
        return router
    }

    static func json(_ bytes: [UInt8], status: Int) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The application on `host:port`; `onRunning` learns the bound port (0 picks a free one).
    public static func application(
        intake: ReplyIntake, app: AppEndpoints? = nil, host: String, port: Int, logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: router(intake: intake, app: app),
            configuration: .init(address: .hostname(host, port: port), serverName: "herald"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger)
    }
}
