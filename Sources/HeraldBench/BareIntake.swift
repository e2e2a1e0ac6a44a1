import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// `herald-bench bare-intake --port P`: the baseline the reply intake is
/// measured against in the same run (scripts/bench-replies). A Hummingbird endpoint at
/// `POST /v1/replies` that reads the whole body and answers 202 as the
/// intake does, with no token check, no validation and no database: what
/// the HTTP layer alone can take on this machine, over the same wrk
/// connections as `herald serve`. Stops on SIGTERM.
enum BareIntakeCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 2, arguments[0] == "--port", let port = Int(arguments[1]) else {
            FileHandle.standardError.write(Data("usage: herald-bench bare-intake --port P\n".utf8))
            return 2
        }
        var logger = Logger(label: "bare-intake")
        logger.logLevel = .warning
        let router = Router()
        let answer = ByteBuffer(string: #"{"stored":1,"duplicates":0}"#)
        router.post("/v1/replies") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 64 * 1024)
            return Response(status: .accepted, headers: [.contentType: "application/json"], body: .init(byteBuffer: answer))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
            return 0
        } catch {
            FileHandle.standardError.write(Data("bare-intake: \(error)\n".utf8))
            return 1
        }
    }
}
