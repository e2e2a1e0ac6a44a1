@testable import APNs
@testable import APNsSimulator
import Crypto
import Foundation
import TestSupport
import Testing

/// Several apps in one client: token and certificate credentials, against the simulator over
/// real HTTP/2 + TLS.
@Suite("Credentials: tokens and client certificates")
struct CredentialTests {
    static let companion = APNsSimulatorHarness.companionTopic

    static func companionNotification(_ index: Int, credential: String = "companion") -> APNsNotification {
        var notification = notification(index)
        notification.topic = companion
        notification.credential = credential
        return notification
    }

    /// Runs `body`, then stops the simulator whatever happened.
    static func stopping(_ running: RunningAPNsSimulator, _ body: () async throws -> Void) async throws {
        do {
            try await body()
            await running.stop()
        } catch {
            await running.stop()
            throw error
        }
    }

    static func startWithCompanion() async throws -> RunningAPNsSimulator {
        try await APNsSimulatorHarness.start(apps: [SimulatedApp(topic: companion, auth: .certificate)], logger: TestDatabase.logger)
    }

    @Test("a certificate credential from a .p12 with a password file, and one from a PEM pair, send with no authorization header")
    func certificateCredentials() async throws {
        let running = try await Self.startWithCompanion()
        let issued = try running.issueClientCertificate(topics: [Self.companion])
        let fromP12 = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
        let fromPEM = try APNsClientCertificate(certificatePEMPath: issued.certificatePath, privateKeyPEMPath: issued.privateKeyPath)
        #expect(fromP12.topics == [Self.companion] && fromPEM.topics == [Self.companion])
        #expect(fromP12.serialNumber == issued.serialNumber)
        #expect(abs(fromP12.notAfter.timeIntervalSince(issued.notAfter)) < 1)
        #expect(!fromP12.isExpired(at: Date()) && fromP12.expiresWithin(31 * 86400, of: Date()))
        #expect(!fromP12.expiresWithin(86400, of: Date()))
        #expect(fromP12.subject.contains(Self.companion))
        try await withClient(running, configure: { configuration in
            configuration.credentials = ["p12": .certificate(fromP12), "pem": .certificate(fromPEM)]
            configuration.defaultCredential = "p12"
        }) { client in
            var viaDefault = notification(1)
            viaDefault.topic = Self.companion
            let results = [
                await client.send(viaDefault),
                await client.send(Self.companionNotification(2, credential: "pem")),
            ]
            #expect(results.allSatisfy { $0.outcome.isSent }, "\(results)")
            // No topic, and a configuration topic the certificate does not name: the certificate's topic.
            var noTopic = notification(3)
            noTopic.topic = nil
            noTopic.credential = "pem"
            #expect(await client.send(noTopic).outcome.isSent)
            let accepted = await running.simulator.accepted
            #expect(accepted.count == 3)
            #expect(accepted.allSatisfy { $0.headers["authorization"] == nil && $0.headers["apns-topic"] == Self.companion })
            // Two credentials, two connections.
            #expect(Set(accepted.map(\.connection)).count == 2)
        }
    }

    @Test("one client sends for a token app and a certificate app at once, each on its own connections")
    func tokenAndCertificateApps() async throws {
        let running = try await Self.startWithCompanion()
        let issued = try running.issueClientCertificate(topics: [Self.companion])
        let certificate = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
        try await withClient(running, configure: { $0.credentials["companion"] = .certificate(certificate) }) { client in
            let notifications = (0..<40).map { $0 % 2 == 0 ? notification($0) : Self.companionNotification($0) }
            let results = await sendAll(client, notifications, concurrency: 20)
            #expect(results.allSatisfy { $0.outcome.isSent })
            let accepted = await running.simulator.accepted
            #expect(accepted.count == 40)
            let tokenConnections = Set(accepted.filter { $0.headers["apns-topic"] == running.topic }.map(\.connection))
            let certificateConnections = Set(accepted.filter { $0.headers["apns-topic"] == Self.companion }.map(\.connection))
            #expect(!tokenConnections.isEmpty && !certificateConnections.isEmpty)
            #expect(tokenConnections.isDisjoint(with: certificateConnections))
            #expect(accepted.filter { $0.headers["apns-topic"] == Self.companion }.allSatisfy { $0.headers["authorization"] == nil })
            #expect(accepted.filter { $0.headers["apns-topic"] == running.topic }.allSatisfy { $0.headers["authorization"] != nil })
        }
    }

    @Test("a revoked certificate is answered 403 BadCertificate (provider refused); the token app still sends on the same client")
    func revokedCertificate() async throws {
        let running = try await Self.startWithCompanion()
        let issued = try running.issueClientCertificate(topics: [Self.companion])
        let certificate = try APNsClientCertificate(certificatePEMPath: issued.certificatePath, privateKeyPEMPath: issued.privateKeyPath)
        try await withClient(running, configure: { $0.credentials["companion"] = .certificate(certificate) }) { client in
            #expect(await client.send(Self.companionNotification(0)).outcome.isSent)
            await running.simulator.revokeCertificate(serialNumber: issued.serialNumber)
            let refused = await client.send(Self.companionNotification(1))
            #expect(refused.outcome == .failed(status: 403, reason: .badCertificate))
            #expect(refused.verdict == .providerRefused)
            #expect(refused.attempts == 1)
            #expect(await client.send(notification(2)).outcome.isSent)
        }
    }

    @Test("an expired certificate is refused here with CertificateExpired, without connecting")
    func expiredCertificate() async throws {
        let running = try await Self.startWithCompanion()
        let past = Date().addingTimeInterval(-10 * 86400)...Date().addingTimeInterval(-86400)
        let issued = try running.issueClientCertificate(topics: [Self.companion], validity: past)
        let certificate = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
        #expect(certificate.isExpired(at: Date()))
        try await withClient(running, configure: { $0.credentials["companion"] = .certificate(certificate) }) { client in
            let result = await client.send(Self.companionNotification(0))
            #expect(result.outcome == .failed(status: nil, reason: .certificateExpired))
            #expect(result.attempts == 0 && result.verdict == .providerRefused)
            let unknown = await client.send(Self.companionNotification(1, credential: "nobody"))
            #expect(unknown.outcome == .failed(status: nil, reason: .unknownCredential))
            #expect(unknown.verdict == .providerRefused)
            #expect(await running.simulator.stats.connections == 0)
        }
    }

    @Test("a certificate the server's client CA did not sign fails the handshake: BadCertificate, not an endless connection failure")
    func handshakeRefused() async throws {
        let running = try await Self.startWithCompanion()
        let stranger = try await APNsSimulatorHarness.start(logger: TestDatabase.logger)
        let issued = try stranger.issueClientCertificate(topics: [Self.companion])
        let certificate = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
        await stranger.stop()
        try await withClient(running, configure: { $0.credentials["companion"] = .certificate(certificate) }) { client in
            let result = await client.send(Self.companionNotification(0))
            #expect(result.outcome == .failed(status: nil, reason: .badCertificate))
            #expect(result.verdict == .providerRefused)
            #expect(await client.send(notification(1)).outcome.isSent)
        }
    }

    @Test("topics belong to teams and certificates: another team's token, a topic no app has, a topic the certificate does not name")
    func teamsAndTopics() async throws {
        let otherKey = P256.Signing.PrivateKey()
        let running = try await APNsSimulatorHarness.start(
            apps: [
                SimulatedApp(topic: "com.example.other", auth: .token(teamID: "OTHERTEAM1", keys: ["OTHERKEY01": otherKey.publicKey])),
                SimulatedApp(topic: Self.companion, auth: .certificate),
            ],
            logger: TestDatabase.logger
        )
        let issued = try running.issueClientCertificate(topics: ["com.example.unserved"])
        let certificate = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
        try await withClient(running, configure: { configuration in
            configuration.credentials["other"] = .token(
                signingKey: APNsSigningKey(privateKey: otherKey), keyID: "OTHERKEY01", teamID: "OTHERTEAM1")
            configuration.credentials["unserved"] = .certificate(certificate)
        }) { client in
            func send(_ topic: String, _ credential: String?) async -> APNsOutcome {
                var next = notification(0)
                next.topic = topic
                next.credential = credential
                return await client.send(next).outcome
            }
            #expect(await send("com.example.other", "other").isSent)
            #expect(await send(running.topic, nil).isSent)
            // A known key of another team than the topic's app.
            #expect(await send("com.example.other", nil) == .failed(status: 403, reason: .invalidProviderToken))
            #expect(await send(running.topic, "other") == .failed(status: 403, reason: .invalidProviderToken))
            // No token app has the topic (a certificate app's, or none).
            #expect(await send(Self.companion, nil) == .failed(status: 400, reason: .topicDisallowed))
            #expect(await send("com.example.nobody", nil) == .failed(status: 400, reason: .topicDisallowed))
            // The certificate names a topic that has no certificate app, and not the companion's.
            #expect(await send("com.example.unserved", "unserved") == .failed(status: 400, reason: .topicDisallowed))
            #expect(await send(Self.companion, "unserved") == .failed(status: 400, reason: .topicDisallowed))
        }
    }

    @Test("a key the team does not hold gives InvalidProviderToken")
    func unknownKeyID() async throws {
        let running = try await APNsSimulatorHarness.start(logger: TestDatabase.logger)
        try await withClient(running, configure: { configuration in
            configuration.credentials["stranger"] = .token(
                signingKey: APNsSigningKey(privateKey: P256.Signing.PrivateKey()), keyID: "UNKNOWNKID", teamID: running.teamID)
        }) { client in
            var stranger = notification(0)
            stranger.credential = "stranger"
            let result = await client.send(stranger)
            #expect(result.outcome == .failed(status: 403, reason: .invalidProviderToken))
            #expect(result.verdict == .providerRefused)
            #expect(await client.send(notification(1)).outcome.isSent)
        }
    }

    @Test("key rotation: a newly trusted key sends while the old one still does, until the old one is revoked")
    func keyRotation() async throws {
        let running = try await APNsSimulatorHarness.start(logger: TestDatabase.logger)
        let newKey = P256.Signing.PrivateKey()
        await running.simulator.trustKey(keyID: "NEWKEY0001", publicKey: newKey.publicKey, teamID: running.teamID)
        try await withClient(running, configure: { configuration in
            configuration.credentials["new"] = .token(
                signingKey: APNsSigningKey(privateKey: newKey), keyID: "NEWKEY0001", teamID: running.teamID)
        }) { client in
            var viaNew = notification(0)
            viaNew.credential = "new"
            #expect(await client.send(viaNew).outcome.isSent)
            #expect(await client.send(notification(1)).outcome.isSent)
            await running.simulator.revokeKey(keyID: running.keyID)
            let old = await client.send(notification(2))
            #expect(old.outcome == .failed(status: 403, reason: .invalidProviderToken))
            viaNew.apnsID = UUID()
            #expect(await client.send(viaNew).outcome.isSent)
        }
    }

    @Test("three credentials with a budget of two connections: never more than two open, every credential delivers")
    func connectionBudget() async throws {
        let running = try await Self.startWithCompanion()
        let secondKey = P256.Signing.PrivateKey()
        await running.simulator.trustKey(keyID: "SECOND0001", publicKey: secondKey.publicKey, teamID: running.teamID)
        let issued = try running.issueClientCertificate(topics: [Self.companion])
        let certificate = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
        try await withClient(running, configure: { configuration in
            configuration.credentials["second"] = .token(
                signingKey: APNsSigningKey(privateKey: secondKey), keyID: "SECOND0001", teamID: running.teamID)
            configuration.credentials["companion"] = .certificate(certificate)
            configuration.connectionBudget = 2
            configuration.maxConnections = 2
        }) { client in
            let notifications = (0..<90).map { index -> APNsNotification in
                switch index % 3 {
                case 0: return notification(index)
                case 1:
                    var second = notification(index)
                    second.credential = "second"
                    return second
                default: return Self.companionNotification(index)
                }
            }
            let results = await sendAll(client, notifications, concurrency: 30)
            #expect(results.allSatisfy { $0.outcome.isSent }, "\(results.filter { !$0.outcome.isSent })")
            let use = await client.connectionBudgetUse()
            #expect(use.peak <= 2 && use.peak >= 1)
            #expect(await running.simulator.accepted.count == 90)
            #expect(await running.simulator.stats.connections >= 3)
        }
    }

    @Test("a budget of one connection: a pool with no connection gets a busy pool's connection retired for it")
    func budgetRetiresBusyConnection() async throws {
        // The simulator holds the first round's answers until the test lets them go, so the only
        // connection is busy when the other pool asks, however slowly this process is scheduled:
        // the reclaim can only be a retirement, never an idle close.
        let running = try await APNsSimulatorHarness.start(logger: TestDatabase.logger)
        let secondKey = P256.Signing.PrivateKey()
        await running.simulator.trustKey(keyID: "SECOND0001", publicKey: secondKey.publicKey, teamID: running.teamID)
        try await withClient(running, configure: { configuration in
            configuration.credentials["second"] = .token(
                signingKey: APNsSigningKey(privateKey: secondKey), keyID: "SECOND0001", teamID: running.teamID)
            configuration.connectionBudget = 1
        }) { client in
            let rounds = (0..<2).map { round in (0..<5).map { notification(round * 100 + $0) } }
            await running.simulator.holdAnswers(toDevices: Set(rounds[0].map(\.deviceToken)))
            // The default credential has work for two rounds of 5 requests sent together.
            async let busy = { () async -> [APNsResult] in
                var results: [APNsResult] = []
                for round in rounds {
                    results += await withTaskGroup(of: APNsResult.self) { group in
                        for item in round { group.addTask { await client.send(item) } }
                        return await group.reduce(into: []) { $0.append($1) }
                    }
                }
                return results
            }()
            for _ in 0..<3000 where await running.simulator.stats.requests < 5 {
                try await Task.sleep(for: .milliseconds(10))
            }
            // Once the only connection has served its minimum hold (1 s), the other pool asks.
            try await Task.sleep(for: .milliseconds(1100))
            var second = notification(1000)
            second.credential = "second"
            async let secondResult = client.send(second)
            var atReclaim = await client.connectionBudgetUse()
            for _ in 0..<3000 where atReclaim.retired + atReclaim.closedIdle == 0 {
                try await Task.sleep(for: .milliseconds(10))
                atReclaim = await client.connectionBudgetUse()
            }
            #expect(atReclaim.retired == 1 && atReclaim.closedIdle == 0, "\(atReclaim)")
            await running.simulator.releaseHeldAnswers()
            let sent = await secondResult
            let busyResults = await busy
            #expect(sent.outcome.isSent)
            #expect(busyResults.count == 10 && busyResults.allSatisfy { $0.outcome.isSent })
            // The retired connection took no new stream: the other pool's request went on a
            // connection of its own.
            let accepted = await running.simulator.accepted
            let firstConnection = Set(accepted.filter { rounds[0].map(\.deviceToken).contains($0.deviceToken) }.map(\.connection))
            let secondConnection = accepted.first { $0.deviceToken == second.deviceToken }?.connection
            #expect(firstConnection.count == 1 && secondConnection != nil && !firstConnection.contains(secondConnection!))
            #expect(await client.connectionBudgetUse().peak == 1)
        }
    }

    @Test("a .p12 or password file others may read is refused, naming the path and never the password")
    func openFilesRefused() async throws {
        let running = try await Self.startWithCompanion()
        try await Self.stopping(running) { try await Self.checkOpenFiles(running) }
    }

    static func checkOpenFiles(_ running: RunningAPNsSimulator) async throws {
        let issued = try running.issueClientCertificate(topics: [Self.companion])
        let password = try String(contentsOfFile: issued.passwordFilePath, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(chmod(issued.p12Path, 0o644) == 0)
        do {
            _ = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
            Issue.record("a .p12 readable by others was taken")
        } catch let error as APNsConfigurationError {
            #expect(error.description.contains(issued.p12Path) && error.description.contains("chmod 600"))
            #expect(!error.description.contains(password))
            #expect(error.isKeyProblem)
        }
        #expect(chmod(issued.p12Path, 0o600) == 0)
        #expect(chmod(issued.passwordFilePath, 0o640) == 0)
        #expect(throws: APNsConfigurationError.self) {
            _ = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
        }
        #expect(chmod(issued.passwordFilePath, 0o600) == 0)
        #expect(chmod(issued.privateKeyPath, 0o604) == 0)
        #expect(throws: APNsConfigurationError.self) {
            _ = try APNsClientCertificate(certificatePEMPath: issued.certificatePath, privateKeyPEMPath: issued.privateKeyPath)
        }
        // A wrong password names the file, and not the password it tried.
        let wrong = running.directory + "/wrong.password"
        #expect(FileManager.default.createFile(atPath: wrong, contents: Data("not-it\n".utf8), attributes: [.posixPermissions: 0o600]))
        do {
            _ = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: wrong)
            Issue.record("a wrong password was taken")
        } catch let error as APNsConfigurationError {
            #expect(error.description.contains(issued.p12Path) && !error.description.contains("not-it"))
        }
    }

    @Test("descriptions of credentials and configuration show no key material and no password")
    func descriptionsRedact() async throws {
        let running = try await Self.startWithCompanion()
        try await Self.stopping(running) { try await Self.checkDescriptions(running) }
    }

    static func checkDescriptions(_ running: RunningAPNsSimulator) async throws {
        let issued = try running.issueClientCertificate(topics: [Self.companion])
        let certificate = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
        let password = try String(contentsOfFile: issued.passwordFilePath, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let keyPEM = try String(contentsOfFile: issued.privateKeyPath, encoding: .utf8)
        let keyBody = keyPEM.split(separator: "\n").dropFirst().first.map(String.init) ?? keyPEM
        var configuration = running.clientConfiguration
        configuration.credentials["companion"] = .certificate(certificate)
        guard case .token(let signingKey, _, _)? = configuration.credentials["default"] else {
            Issue.record("the default credential is no token")
            return
        }
        let tokenKeyBody = signingKey.privateKey.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init) ?? ""
        let rawKey = signingKey.privateKey.rawRepresentation.base64EncodedString()
        for text in [configuration.description, "\(certificate)", "\(APNsCredential.certificate(certificate))",
                     "\(configuration.credentials["default"]!)"] {
            #expect(!text.contains(password) && !text.contains(keyBody) && !text.contains(tokenKeyBody) && !text.contains(rawKey))
        }
        #expect(configuration.description.contains("companion") && configuration.description.contains(running.keyID))
        #expect("\(certificate)".contains(issued.p12Path) && "\(certificate)".contains("<redacted>"))
        // The members of the one-token configuration still read the default credential.
        #expect(configuration.keyID == running.keyID && configuration.teamID == running.teamID)
    }
}
