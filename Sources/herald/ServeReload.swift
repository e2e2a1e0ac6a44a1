import AppServer
import Foundation
import HeraldCore
import Logging
import ServiceLifecycle
import Settings
import Store
import UnixSignals

/// `herald serve`'s keys, read again without a restart: on SIGHUP, and every
/// `interval` (so that a key added to `apps.registration_keys` is taken
/// within it). The configuration (its file, the secrets' files) and the apps
/// table are read anew; what fails to load is logged and the keys in use are
/// kept, so a bad edit never locks the apps out.
struct ServeReload: Service {
    let interval: Duration
    let replyKeys: ReplyKeys
    let appKeys: AppKeys
    let logger: Logger
    let load: @Sendable () async throws -> (ReplyTokens, [String: AppTokenVerifier])

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in await UnixSignalsSequence(trapping: .sighup) {
                        await reload(reason: "SIGHUP")
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: interval) } catch { return }
                        await reload(reason: nil)
                    }
                }
                await group.waitForAll()
            }
        }
    }

    func reload(reason: String?) async {
        do {
            let before = appKeys.apps
            let (tokens, apps) = try await load()
            replyKeys.replace(tokens)
            appKeys.replace(apps)
            if let reason {
                logger.notice("keys reloaded", metadata: [
                    "reason": "\(reason)", "apps": "\(apps.keys.sorted().joined(separator: ","))",
                    "previous_reply_secret_until": "\(tokens.previousUntil.map { "\($0)" } ?? "none")",
                ])
            } else if before != apps.keys.sorted() {
                logger.notice("app registration keys changed", metadata: ["apps": "\(apps.keys.sorted().joined(separator: ","))"])
            }
        } catch {
            logger.error("keys not reloaded; those in use are kept", metadata: ["error": "\(ErrorText.describe(error))"])
        }
    }
}

/// The keys `herald serve` checks with, from the configuration and the apps table.
func serveKeys(_ config: HeraldConfiguration, apps: AppStore) async throws -> (ReplyTokens, [String: AppTokenVerifier]) {
    let tokens = try requireReplyTokens(config)
    let records = try await apps.registrationKeys()
    let verifiers: [String: AppTokenVerifier]
    do {
        verifiers = try await AppKeys.verifiers(apps: records, defaultPEM: config.serve.appJWTPublicKeyPEM,
                                                defaultSource: config.serve.appJWTPublicKeySource)
    } catch {
        throw ConfigurationError(error.message)
    }
    return (tokens, verifiers)
}
