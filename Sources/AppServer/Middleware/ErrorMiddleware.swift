import Hummingbird
import Logging
import NIOCore
import Store

/// Every failure becomes the JSON error of the table in docs/operators.md ("What a hostile request gets"): a refusal
/// keeps its status; Hummingbird's "no route" becomes 404 `not_found`, or
/// 405 `method_not_allowed` with `Allow` when the path exists with another
/// method (the paths and methods are those of `openapi.json`); a database that
/// cannot be reached is 503 `unavailable`; anything else is logged and 500.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as AppServerError {
            return error.response
        } catch is NIOTooManyBytesError {
            return AppServerError.bodyTooLarge.response
        } catch let error as HTTPError {
            if error.status == .notFound {
                let allowed = OpenAPIDocument.methods(forPath: request.uri.path)
                if !allowed.isEmpty, !allowed.contains(request.method) {
                    return AppServerError.methodNotAllowed(request.method, allowed: allowed).response
                }
                return AppServerError.notFound(request.uri.path).response
            }
            if error.status == .contentTooLarge { return AppServerError.bodyTooLarge.response }
            guard error.status.code < 500 else {
                logger.error("request failed", metadata: ["path": "\(request.uri.path)", "status": "\(error.status.code)"])
                return AppServerError.internalError.response
            }
            let message = error.body ?? (error.status.reasonPhrase.isEmpty ? "refused" : error.status.reasonPhrase)
            return AppServerError(status: error.status, code: "bad_request", message: message).response
        } catch {
            if DatabaseFault(error) == .transient {
                logger.warning("database unavailable", metadata: ["path": "\(request.uri.path)"])
                return AppServerError.unavailable.response
            }
            logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(ErrorText.describe(error))"])
            return AppServerError.internalError.response
        }
    }
}
