import AppServer
import ExtensionKit
import Foundation
import HeraldCore
import Logging
import PostgresNIO
import Runner
import Settings
import Store
import TestSupport
import Testing

@Suite("Campaigns with history are archived, not deleted")
struct ArchiveTests {
    @Test func deletingACampaignWithHistoryIsRefusedAndArchivingCancelsWhatIsQueued() async throws {
        try await withIntakeDatabase { intake, db, _ in
            #expect(try await intake.submit(HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "keep me"))) == .success(.stored))
            do {
                try await db.exec("DELETE FROM campaigns WHERE name = 'Feedback'")
                Issue.record("a campaign with replies was deleted")
            } catch {
                let text = ErrorText.describe(error)
                #expect(text.contains("campaign \"Feedback\" has deliveries or replies and cannot be deleted; archive it instead"))
                #expect(text.contains("UPDATE campaigns SET status = 'archived'"))
            }
            // Deleting the ledger row under a reply is refused too (no cascade).
            await #expect(throws: (any Error).self) { try await db.exec("DELETE FROM deliveries WHERE id = 2") }
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 1)

            // A draft without history may go.
            try await db.exec("INSERT INTO campaigns (name, kind, content, media_url) VALUES ('Draft', 'poster', '{\"en\": {\"title\": \"t\", \"body\": \"b\"}}', 'https://x.example/p.gif')")
            try await db.exec("DELETE FROM campaigns WHERE name = 'Draft'")

            // Archiving cancels what is queued, and is final.
            try await db.exec("UPDATE deliveries SET status = 'queued' WHERE id = 3")
            try await db.exec("UPDATE campaigns SET status = 'archived' WHERE name = 'Poster'")
            #expect(try await db.scalar("SELECT status || ' ' || last_error FROM delivery_status WHERE id = 3", as: String.self) == "cancelled campaign archived")
            do {
                try await db.exec("UPDATE campaigns SET status = 'scheduled' WHERE name = 'Poster'")
                Issue.record("an archived campaign was rescheduled")
            } catch {
                #expect(ErrorText.describe(error).contains("is archived; an archived campaign is never sent again"))
            }
        }
    }
}
