import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `herald healthcheck`: asks a running `herald serve` for GET /healthz, for a
/// container's HEALTHCHECK (the image has no curl). Exit 0 when it answers
/// `{"status":"ok"}`; 1 otherwise, with what it got on standard error.
struct HealthcheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthcheck",
        abstract: "Ask a running herald serve for GET /healthz (exit 0 when it answers ok), for a container's HEALTHCHECK.")

    @Option(help: "The URL to ask (default: http://127.0.0.1:HERALD_HTTP_PORT/healthz; the port is 8080 when unset).")
    var url: String?

    @Option(help: "Seconds to wait for the answer.")
    var timeout: Int = 5

    func run() async throws {
        let port = ProcessInfo.processInfo.environment["HERALD_HTTP_PORT"].flatMap(Int.init) ?? 8080
        let target = url ?? "http://127.0.0.1:\(port)/healthz"
        let problem: String
        do {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: target), timeout: .seconds(Int64(timeout)))
            let body = String(buffer: try await response.body.collect(upTo: 4096))
            if response.status == .ok, body.contains(#""status":"ok""#) {
                print("ok: \(target)")
                return
            }
            problem = "\(target) answered \(response.status.code): \(body.prefix(200))"
        } catch {
            problem = "\(target) did not answer: \(error)"
        }
        FileHandle.standardError.write(Data("herald healthcheck: \(problem)\n".utf8))
        throw ExitCode.failure
    }
}
