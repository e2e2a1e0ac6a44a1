import Crypto
import Foundation
import Store
import Testing
import TestSupport

/// docs/operators.md, "Rotating keys", for an APNs `.p8` key and a `.p12` certificate, as an
/// operator does it against real `herald run` processes and a real `herald apns-sim`: the new
/// credential added with `herald apps add-credential` while a run sends on the old one, a run
/// started then sending on the new one, the old one retired with `herald apps
/// retire-credential` and revoked at APNs (the simulator restarted without it), and a run after
/// that. The simulator's attempts log names the credential of every attempt: each run used the
/// one the guide says, and APNs refused nothing.
extension FaultSuite {
    static let rotatedTopic = APNsSimulatorHarness.companionTopic
    static let rotatedTeam = "COMPTEAM01"

    @Test(arguments: ["token", "certificate"])
    func anAPNsCredentialRotatesUnderRealRuns(kind: String) async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 1200
                try await client.exec(Fixtures.catalogue)
                try await client.exec(Fixtures.audience(count: devices))
                try await client.exec("""
                    INSERT INTO apps (name, display_name, topic) VALUES ('companion', 'Companion', '\(Self.rotatedTopic)');
                    UPDATE devices SET app = 'companion';
                    """)
                try await client.exec(Fixtures.campaign(name: "Before"))

                // The two credentials, as the developer account hands them out, and what APNs knows of them.
                let keys = [P256.Signing.PrivateKey(), P256.Signing.PrivateKey()]
                let keyIDs = ["ROTATEOLD1", "ROTATENEW1"]
                var appArguments: [String]
                if kind == "token" {
                    appArguments = try (0..<2).flatMap { i in
                        ["--app", "topic=\(Self.rotatedTopic),key-id=\(keyIDs[i]),team-id=\(Self.rotatedTeam),public-key="
                            + (try dir.write("key\(i).pub.pem", keys[i].publicKey.pemRepresentation, mode: 0o644))]
                    }
                } else {
                    appArguments = ["--app", "topic=\(Self.rotatedTopic),certificate"]
                }
                let issue = kind == "token" ? [] : ["--issue-client-cert", Self.rotatedTopic, "--issue-client-cert", Self.rotatedTopic]
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "30"] + appArguments + issue)
                try await sim.start()
                // What `herald apps add-credential` is given for each, and how the attempts log names it.
                var add: [[String]] = []
                var named: [String] = []
                if kind == "token" {
                    for i in 0..<2 {
                        let path = try dir.write("AuthKey_\(keyIDs[i]).p8", keys[i].pemRepresentation, mode: 0o600)
                        add.append(["--p8", path, "--key-id", keyIDs[i], "--team-id", Self.rotatedTeam])
                        named.append("key \(keyIDs[i])")
                    }
                } else {
                    // The simulator prints each issued certificate's files and serial as NAME=VALUE lines.
                    var printed: [String: String] = [:]
                    for line in (sim.child?.text() ?? "").split(separator: "\n") {
                        let parts = line.split(separator: "=", maxSplits: 1)
                        if parts.count == 2 { printed[String(parts[0])] = String(parts[1]) }
                    }
                    for n in 1...2 {
                        let p12 = try #require(printed["APNS_CLIENT_P12_PATH_\(n)"])
                        let password = try #require(printed["APNS_CLIENT_P12_PASSWORD_FILE_\(n)"])
                        add.append(["--p12", p12, "--password-file", password])
                        named.append("certificate \(try #require(printed["APNS_CLIENT_SERIAL_\(n)"]))")
                    }
                    #expect(named[0] != named[1])
                }

                var operatorEnv = ConfigFileCommandTests.bareEnvironment()
                operatorEnv["DATABASE_URL"] = database.description
                operatorEnv["LOG_LEVEL"] = "warning"
                func apps(_ arguments: [String]) async throws {
                    let child = try Child(name: "apps", arguments: ["apps"] + arguments, environment: operatorEnv, directory: dir)
                    let status = try await child.wait(limit: .seconds(60))
                    #expect(status == 0, "herald apps \(arguments.first ?? "") exited \(status)\n\(child.tail())")
                }
                try await apps(["add-credential", "companion", "old"] + add[0])

                // Small claims, few in flight, 30 ms an answer: the first run sends for about 9 s.
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(),
                                                      extra: ["HERALD_BATCH_SIZE": "20", "HERALD_CONCURRENCY": "4"])
                let early = try Child(name: "early", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("the first run sending", limit: .seconds(60)) {
                    try await FaultSuite.count(client, "SELECT count(*) FROM delivery_status WHERE status = 'sent'") >= 100
                }
                // The new credential beside the old: a run started now sends with it, the one under way keeps the old.
                try await apps(["add-credential", "companion", "new"] + add[1])
                let late = try Child(name: "late", arguments: ["run"], environment: env, directory: dir)
                let lateCode = try await late.wait(limit: .seconds(180))
                let earlyCode = try await early.wait(limit: .seconds(180))
                #expect(earlyCode == 0 && lateCode == 0, "herald run exited \(earlyCode) and \(lateCode)\n\(early.tail())\n\(late.tail())")
                try await sim.settledLog()
                let during = try Self.attemptsAt(sim.attemptsPath)
                let oldUsed = during.filter { $0.credential == named[0] }.count
                let newUsed = during.filter { $0.credential == named[1] }.count
                #expect(oldUsed > 0 && newUsed > 0, "the run under way sent on the old credential (\(oldUsed)), the later run on the new (\(newUsed))")
                #expect(oldUsed + newUsed == during.count, "every attempt used one of the two: \(Set(during.map { $0.credential ?? "none" }))")
                #expect(during.allSatisfy { $0.status == 200 }, "APNs refused nothing: \(during.filter { $0.status != 200 }.prefix(3).map(\.status))")
                #expect(try await FaultSuite.count(client, "SELECT count(*) FROM delivery_status WHERE status = 'sent'") == devices)

                // The old one retired, then revoked at APNs: runs go on with the new one only.
                try await apps(["retire-credential", "companion", "old"])
                try await sim.stop()
                if kind == "token" {
                    sim.faults = ["--latency-ms", "30", appArguments[2], appArguments[3]]
                } else {
                    sim.faults = ["--latency-ms", "30"] + appArguments
                        + ["--revoke-client-cert", String(named[0].dropFirst("certificate ".count))]
                }
                try await sim.start()
                try await client.exec(Fixtures.campaign(name: "After"))
                let after = try Child(name: "after", arguments: ["run"], environment: env, directory: dir)
                let afterCode = try await after.wait(limit: .seconds(180))
                #expect(afterCode == 0, "herald run exited \(afterCode)\n\(after.tail())")
                try await sim.settledLog()
                let since = try Self.attemptsAt(sim.attemptsPath).dropFirst(during.count)
                #expect(since.count == devices, "\(since.count) attempts after the revocation")
                #expect(since.allSatisfy { $0.credential == named[1] && $0.status == 200 },
                        "after the retirement every attempt used the new credential and was accepted: \(Set(since.map { "\($0.credential ?? "none") \($0.status)" }))")
                #expect(try await FaultSuite.count(client, "SELECT count(*) FROM delivery_status WHERE status = 'sent'") == 2 * devices)
                try await sim.stop()
            }
        }
    }
}
