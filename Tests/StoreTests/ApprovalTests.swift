import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// Approval (Sql/0021) with real database roles: who may approve, what
/// withdraws an approval, and that an unapproved campaign is never due.
@Suite("Approval")
struct ApprovalTests {
    /// Three marketers' login roles of this test (roles belong to the whole
    /// server): the author (an approver too), another approver, and someone
    /// who is not one.
    struct People {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        var author: String { "herald_t_author_\(suffix)" }
        var approver: String { "herald_t_approver_\(suffix)" }
        var outsider: String { "herald_t_outsider_\(suffix)" }
        var all: [String] { [author, approver, outsider] }
    }

    /// Runs `sql` as `role` (session_user becomes it); the error a marketer sees, or nil.
    func refusal(_ client: Database, as role: String, _ sql: String) async throws -> String? {
        try await ApprovalAuthorityTests.attempt(client, as: role, sql)?.text
    }

    func withPeople(_ client: Database, _ body: (People) async throws -> Void) async throws {
        let people = People()
        for role in people.all {
            try await client.exec("CREATE ROLE \(role) LOGIN IN ROLE herald_marketer")
        }
        try await client.exec("GRANT herald_approver TO \(people.author), \(people.approver)")
        do {
            try await body(people)
        } catch {
            for role in people.all { try? await client.exec("DROP OWNED BY \(role); DROP ROLE \(role)") }
            throw error
        }
        for role in people.all { try await client.exec("DROP OWNED BY \(role); DROP ROLE \(role)") }
    }

    /// A journey's messages are approved as campaigns are; a change to the journey's own
    /// rows (an edge's rule, a step, its goal) withdraws each message's approval, naming it.
    @Test func aChangeToAJourneyWithdrawsItsMessagesApprovals() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await withPeople(client) { people in
                try await client.exec("UPDATE settings SET require_approval = true")
                let written = try await refusal(client, as: people.author, """
                    INSERT INTO journeys (id, name, first_step, entry, entry_event, goal_event) VALUES (7, 'J', 'ask', 'conversion', 'x', 'purchase');
                    INSERT INTO campaigns (name, kind, status, content, category_id, journey_id) VALUES
                        ('J ask', 'feedback', 'scheduled', '{"en": {"title": "How was it?", "body": "Tell us"}}', 'feedback.v1', 7);
                    INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id, timeout, of_step) VALUES
                        (7, 1, 'ask', 'send', (SELECT id FROM campaigns WHERE name = 'J ask'), NULL, NULL),
                        (7, 1, 'listen', 'wait_for', NULL, '1 day', 'ask');
                    INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES
                        (7, 1, 'ask', 1, 'next', '{}', 'listen'), (7, 1, 'listen', 1, 'text', '{"any_words": {"*": ["late"]}}', NULL),
                        (7, 1, 'listen', 2, 'timeout', '{}', NULL);
                    """)
                #expect(written == nil, "\(written ?? "")")
                let store = CampaignStore(client: client, logger: TestDatabase.logger)
                let message = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'J ask'", as: Int64.self))
                #expect(try await store.approval(message)?.allowsSending == false)
                #expect(try await refusal(client, as: people.approver, "SELECT herald_approve(\(message))") == nil)
                #expect(try await store.approval(message)?.allowsSending == true)
                // The text rule changes: the message's approval goes, naming the step.
                #expect(try await refusal(client, as: people.author, """
                    UPDATE journey_edges SET rule = '{"any_words": {"*": ["late", "slow"]}}' WHERE journey_id = 7 AND from_step = 'listen' AND position = 1
                    """) == nil)
                #expect(try await store.approval(message)?.allowsSending == false)
                #expect(try await client.scalar("""
                    SELECT reason FROM campaign_approvals WHERE campaign_id = \(message) AND action = 'withdrawn' ORDER BY id DESC LIMIT 1
                    """, as: String.self) == "changed: journey 7, an edge of step listen")
                // Approved again; the goal changes: withdrawn again. A pause is no change.
                #expect(try await refusal(client, as: people.approver, "SELECT herald_approve(\(message))") == nil)
                #expect(try await refusal(client, as: people.author, "UPDATE journeys SET status = 'paused' WHERE id = 7") == nil)
                #expect(try await store.approval(message)?.allowsSending == true)
                #expect(try await refusal(client, as: people.author, "UPDATE journeys SET goal_event = 'signup' WHERE id = 7") == nil)
                #expect(try await store.approval(message)?.allowsSending == false)
            }
        }
    }

    @Test func anAuthorCannotApproveTheirOwnAndAChangeWithdrawsIt() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await withPeople(client) { people in
                try await client.exec("UPDATE settings SET require_approval = true")
                #expect(try await refusal(client, as: people.author, Fixtures.campaign(name: "Needs a look")) == nil)
                let id = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Needs a look'", as: Int64.self))
                let store = CampaignStore(client: client, logger: TestDatabase.logger)
                #expect(try await client.scalar("SELECT created_by FROM campaigns WHERE id = \(id)", as: String.self) == people.author)
                #expect(try await !store.dueCampaigns().map(\.id).contains(id))
                #expect(try await store.sendingStatus(id) == .paused)

                // The author may not approve it, though an approver; nor may someone who is not one;
                // nor may anyone set the columns by hand.
                #expect(try await refusal(client, as: people.author, "SELECT herald_approve(\(id))")?
                    .contains("campaign \(id) was written by \(people.author): someone else must approve it") == true)
                #expect(try await refusal(client, as: people.outsider, "SELECT herald_approve(\(id))")?
                    .contains("\(people.outsider) may not approve campaigns: only members of herald_approver may") == true)
                // (A marketer has no privilege on those columns; ApprovalAuthorityTests
                // tries it as a role that has, which the guard refuses.)
                #expect(try await refusal(client, as: people.author, "UPDATE campaigns SET approved_by = 'me', approved_at = now() WHERE id = \(id)")?
                    .contains("permission denied for table campaigns") == true)
                #expect(try await !store.dueCampaigns().map(\.id).contains(id))

                // Another approver approves it: due now, and in the audit with who.
                #expect(try await refusal(client, as: people.approver, "SELECT herald_approve(\(id), 'looks right')") == nil)
                #expect(try await store.dueCampaigns().map(\.id).contains(id))
                let approval = try #require(try await store.approval(id))
                #expect(approval.required && approval.approvedBy == people.approver && approval.allowsSending)

                // A pause and a resume keep it; a change of text withdraws it.
                try await client.exec("UPDATE campaigns SET status = 'paused' WHERE id = \(id)")
                try await client.exec("UPDATE campaigns SET status = 'scheduled' WHERE id = \(id)")
                #expect(try await store.approval(id)?.approvedBy == people.approver)
                #expect(try await refusal(client, as: people.author, """
                    UPDATE campaigns SET content = '{"en": {"title": "Changed", "body": "B"}}' WHERE id = \(id)
                    """) == nil)
                #expect(try await store.approval(id)?.allowsSending == false)
                #expect(try await !store.dueCampaigns().map(\.id).contains(id))

                // Approved again, then its schedule moved: withdrawn again.
                #expect(try await refusal(client, as: people.approver, "SELECT herald_approve(\(id))") == nil)
                try await client.exec("UPDATE campaigns SET send_at = send_at - interval '1 minute' WHERE id = \(id)")
                #expect(try await store.approval(id)?.allowsSending == false)

                // Withdrawn by hand: by its author, not by someone who is neither author nor approver.
                #expect(try await refusal(client, as: people.approver, "SELECT herald_approve(\(id))") == nil)
                #expect(try await refusal(client, as: people.outsider, "SELECT herald_withdraw_approval(\(id))")?
                    .contains("only its author or a member of herald_approver may") == true)
                #expect(try await store.approval(id)?.allowsSending == true)
                #expect(try await refusal(client, as: people.author, "SELECT herald_withdraw_approval(\(id), 'legal')") == nil)
                #expect(try await store.approval(id)?.allowsSending == false)

                var audit: [String] = []
                let rows = try await client.query("SELECT action, by_role, coalesce(reason, '') FROM campaign_approvals WHERE campaign_id = \(id) ORDER BY id")
                for try await (action, by, reason) in rows.decode((String, String, String).self) {
                    audit.append("\(action) \(by == people.approver ? "approver" : by == people.author ? "author" : by) \(reason)")
                }
                #expect(Array(audit.prefix(3)) == ["approved approver looks right", "withdrawn author changed: content",
                                                   "approved approver "], "\(audit)")
                #expect(audit.count == 6 && audit[3].hasPrefix("withdrawn ") && audit[3].hasSuffix(" changed: schedule"), "\(audit)")
                #expect(audit.last == "withdrawn author legal", "\(audit)")

                // Without the setting, approval is not needed.
                try await client.exec("UPDATE settings SET require_approval = false")
                #expect(try await store.dueCampaigns().map(\.id).contains(id))
            }
        }
    }
}
