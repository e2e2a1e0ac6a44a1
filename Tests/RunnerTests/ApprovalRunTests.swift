import Foundation
import PostgresNIO
import Runner
import Store
import Testing
import TestSupport

/// A run never sends a campaign whose required approval is missing (Sql/0021),
/// and sends it once another person approved it.
@Suite("Runs and approval", .serialized)
struct ApprovalRunTests {
    @Test func aRunNeverSendsAnUnapprovedCampaign() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 40))
            try await client.exec("UPDATE settings SET require_approval = true")
            try await client.exec(Fixtures.campaign(name: "Unapproved"))
            let id = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Unapproved'", as: Int64.self))
            try await withSimulator { sim in
                let first = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(first.figures.sent == 0 && first.campaigns.isEmpty)
                #expect(await sim.simulator.accepted.isEmpty)
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE campaign_id = \(id)", as: Int64.self) == 0)
                let preview = try await CampaignPreview.make(stores: RunStores(client: client, logger: TestDatabase.logger),
                                                             campaign: id, topic: "com.example.herald")
                #expect(!preview.canGoOut && preview.text.contains("approval: awaiting approval"), "\(preview.text)")

                // Another person, a member of herald_approver, approves it.
                try await client.approveAsAnotherPerson(id)
                let second = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(second.figures.sent == 40)
                #expect(await sim.simulator.accepted.count == 40)
            }
        }
    }
}
