import HTTPTypes
import Hummingbird

/// 429 for a client address over `AppServerLimits.perAddress`, on every route.
struct AddressRateLimitMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware {
    let limits: RateLimits
    let addresses: ClientAddress

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let address = addresses.resolve(peer: context.remoteAddress,
                                        forwardedFor: request.headers[values: .xForwardedFor])
        try limits.check(limits.perAddress, key: address, what: "from this address")
        return try await next(request, context)
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}
