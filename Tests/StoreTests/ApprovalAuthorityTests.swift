import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// Approval as a security boundary (Sql/0032): a marketer cannot approve by
/// any way around `herald_approve`, one list classifies every column of
/// campaigns, what a campaign uses withdraws its approval when it changes,
/// and only admins change settings.
@Suite("Approval authority")
struct ApprovalAuthorityTests {
    /// A login role of this test in `groups` (roles belong to the whole
    /// server), dropped afterwards.
    static func withRole<T>(_ groups: [String], _ client: Database, _ body: (String) async throws -> T) async throws -> T {
        let role = "herald_t_\(UUID().uuidString.prefix(8).lowercased())"
        try await client.exec("CREATE ROLE \(role) LOGIN" + (groups.isEmpty ? "" : " IN ROLE \(groups.joined(separator: ", "))"))
        do {
            let out = try await body(role)
            try await client.exec("DROP OWNED BY \(role); DROP ROLE \(role)")
            return out
        } catch {
            try? await client.exec("DROP OWNED BY \(role); DROP ROLE \(role)")
            throw error
        }
    }

    /// What the server answered `script` run as `role` (session_user and
    /// current_user are the role): nil when every statement was taken, else
    /// the first refusal with its SQLSTATE. A transaction it left open is
    /// rolled back.
    static func attempt(_ client: Database, as role: String, _ script: String) async throws -> (state: String?, text: String)? {
        try await client.withConnection { conn in
            _ = try await conn.query(PostgresQuery(unsafeSQL: "SET SESSION AUTHORIZATION \(role)"), logger: TestDatabase.logger)
            var refusal: (state: String?, text: String)?
            for statement in SQLScript.statements(in: script) {
                do {
                    for try await _ in try await conn.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger) {}
                } catch {
                    refusal = (StoreError.sqlState(of: error), ErrorText.describe(error))
                    break
                }
            }
            _ = try? await conn.query("ROLLBACK", logger: TestDatabase.logger)
            _ = try await conn.query("RESET ROLE", logger: TestDatabase.logger)
            _ = try await conn.query("RESET SESSION AUTHORIZATION", logger: TestDatabase.logger)
            return refusal
        }
    }

    static func approved(_ client: Database, _ id: Int64) async throws -> Bool {
        try await client.scalar("SELECT approved_at IS NOT NULL FROM campaigns WHERE id = \(id)", as: Bool.self) == true
    }

    /// The campaign `name` as written by `author` (a marketer), scheduled, with a segment.
    static func campaign(_ client: Database, _ name: String, author: String) async throws -> Int64 {
        try await client.exec("INSERT INTO segments (name, rule) VALUES ('seg \(name)', '{\"attr\": \"attributes.tier\", \"op\": \"eq\", \"value\": \"gold\"}') ON CONFLICT DO NOTHING")
        let sql = Fixtures.campaign(name: name, kind: "flash_sale", segment: "seg \(name)")
        let refusal = try await attempt(client, as: author, sql)
        #expect(refusal == nil, "\(refusal.map { $0.text } ?? "")")
        return try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = '\(name)'", as: Int64.self))
    }

    @Test func everyColumnOfCampaignsIsClassifiedAndTheMarketersPrivilegesFollowTheList() async throws {
        try await TestDatabase.with { client, _ in
            var columns: Set<String> = []
            for try await c in try await client.query("""
                SELECT attname::text FROM pg_attribute WHERE attrelid = 'public.campaigns'::regclass AND attnum > 0 AND NOT attisdropped
                """).decode(String.self) { columns.insert(c) }
            var listed: [String: String] = [:]
            for try await (c, by) in try await client.query("SELECT column_name, written_by FROM campaign_approval_columns")
                .decode((String, String).self) { listed[c] = by }
            #expect(columns.subtracting(listed.keys).sorted() == [],
                    "columns of campaigns that campaign_approval_columns does not classify: add a row for each (Sql/0032's list)")
            #expect(Set(listed.keys).subtracting(columns).sorted() == [], "listed columns campaigns does not have")
            for column in columns.sorted() {
                for privilege in ["INSERT", "UPDATE"] {
                    let has = try await client.scalar(
                        "SELECT has_column_privilege('herald_marketer', 'campaigns', '\(column)', '\(privilege)')", as: Bool.self)
                    #expect(has == (listed[column] == "marketer"), "herald_marketer's \(privilege) on campaigns.\(column)")
                }
            }
        }
    }

    @Test func aMarketerCannotApproveTheirOwnCampaignAnyWayAroundHeraldApprove() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 3))
            try await client.exec("UPDATE settings SET require_approval = true")
            try await Self.withRole(["herald_marketer"], client) { mallory in
                let id = try await Self.campaign(client, "Sneaky", author: mallory)
                #expect(try await client.scalar("SELECT created_by FROM campaigns WHERE id = \(id)", as: String.self) == mallory)
                let attempts: [(String, String)] = [
                    ("the session setting 0021 trusted", """
                        BEGIN; SET LOCAL herald.approving = 'on';
                        UPDATE campaigns SET approved_by = 'bob', approved_at = now() WHERE id = \(id); COMMIT
                        """),
                    ("the approval columns by hand", "UPDATE campaigns SET approved_by = 'bob', approved_at = now() WHERE id = \(id)"),
                    ("another author", "UPDATE campaigns SET created_by = 'bob' WHERE id = \(id)"),
                    ("an approved insert", """
                        INSERT INTO campaigns (name, kind, content, approved_by, approved_at, category_id, expires_at)
                        VALUES ('Pre-approved', 'flash_sale', '{"en": {"title": "T", "body": "B"}}', 'bob', now(), 'flash_sale.v1', now() + interval '1 hour')
                        """),
                    ("an insert naming another author", """
                        INSERT INTO campaigns (name, kind, content, created_by, category_id, expires_at)
                        VALUES ('By bob', 'flash_sale', '{"en": {"title": "T", "body": "B"}}', 'bob', 'flash_sale.v1', now() + interval '1 hour')
                        """),
                    ("SET ROLE to an approver", "SET ROLE herald_approver; SELECT herald_approve(\(id))"),
                    ("SET ROLE to the owner", "SET ROLE herald; UPDATE campaigns SET approved_by = 'bob', approved_at = now() WHERE id = \(id)"),
                    ("herald_approve without being an approver", "SELECT herald_approve(\(id))"),
                    ("the grant function", "SELECT herald_open_approval(\(id))"),
                    ("the clearing function", "SELECT herald_clear_approval(\(id), 'x')"),
                    ("the occurrence function", "SELECT herald_occurrence(\(id), 1, now())"),
                    ("the trigger function", "SELECT herald_campaign_approval_guard()"),
                    ("a grant row", "INSERT INTO approval_grants VALUES (pg_current_xact_id(), \(id))"),
                    ("the audit", "INSERT INTO campaign_approvals (campaign_id, action, by_role) VALUES (\(id), 'approved', 'bob')"),
                    ("the trigger disabled", "ALTER TABLE campaigns DISABLE TRIGGER campaigns_approval_guard"),
                    ("all triggers off for the session", "SET session_replication_role = replica"),
                    ("approval turned off", "UPDATE settings SET require_approval = false"),
                    ("the ledger", "INSERT INTO deliveries (campaign_id, device_id, user_id, status) VALUES (\(id), 1, 1, 'queued')"),
                ]
                for (what, script) in attempts {
                    let refusal = try await Self.attempt(client, as: mallory, script)
                    #expect(refusal != nil, "allowed: \(what)")
                    #expect(refusal?.state == "42501" || refusal?.text.contains("trigger functions can only be called as triggers") == true,
                            "\(what): \(refusal?.text ?? "")")
                }
                // What marketers do: pause, resume, cancel and archive (which
                // touch the ledger through the owner's triggers), and delete a draft.
                for set in ["status = 'paused'", "status = 'scheduled'"] {
                    let refusal = try await Self.attempt(client, as: mallory, "UPDATE campaigns SET \(set) WHERE id = \(id)")
                    #expect(refusal == nil, "\(set): \(refusal?.text ?? "")")
                }
                let spare = try await Self.campaign(client, "Spare", author: mallory)
                try await client.exec("""
                    INSERT INTO deliveries (campaign_id, device_id, user_id, status)
                    SELECT \(spare), d.id, d.user_id, 'queued' FROM devices d
                    """)
                for set in ["status = 'cancelled'", "status = 'archived'"] {
                    let refusal = try await Self.attempt(client, as: mallory, "UPDATE campaigns SET \(set) WHERE id = \(spare)")
                    #expect(refusal == nil, "\(set): \(refusal?.text ?? "")")
                }
                #expect(try await Self.attempt(client, as: mallory, "DELETE FROM campaigns WHERE id = \(spare)")?.text
                    .contains("has deliveries or replies and cannot be deleted") == true)
                // Delete and insert again: a new campaign, unapproved, by the same author.
                #expect(try await Self.attempt(client, as: mallory, "DELETE FROM campaigns WHERE id = \(id)") == nil)
                let again = try await Self.campaign(client, "Sneaky", author: mallory)
                #expect(again != id)
                #expect(try await !Self.approved(client, again))
                #expect(try await client.scalar("SELECT count(*) FROM campaign_approvals", as: Int64.self) == 0)
                #expect(try await client.scalar("SELECT count(*) FROM approval_grants", as: Int64.self) == 0)
                #expect(try await client.scalar("SELECT require_approval FROM settings", as: Bool.self) == true)
                #expect(try await !CampaignStore(client: client, logger: TestDatabase.logger).dueCampaigns().map(\.id).contains(again))
            }
        }
    }

    /// An operator who gave a role every privilege on the tables (as a
    /// "role on the tables" might be read) still does not open the guard.
    @Test func aRoleWithEveryTablePrivilegeCannotApproveNorChangeSettings() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec("UPDATE settings SET require_approval = true")
            try await Self.withRole([], client) { wide in
                try await client.exec("""
                    GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA public TO \(wide);
                    GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO \(wide)
                    """)
                let id = try await Self.campaign(client, "Wide", author: wide)
                for script in [
                    "BEGIN; INSERT INTO approval_grants VALUES (pg_current_xact_id(), \(id)); UPDATE campaigns SET approved_by = 'bob', approved_at = now() WHERE id = \(id); COMMIT",
                    "BEGIN; SET LOCAL herald.approving = 'on'; UPDATE campaigns SET approved_by = 'bob', approved_at = now() WHERE id = \(id); COMMIT",
                    "INSERT INTO campaign_approvals (campaign_id, action, by_role) VALUES (\(id), 'approved', 'bob')",
                    "UPDATE settings SET require_approval = false",
                    "INSERT INTO settings_changes (by_role, setting) VALUES ('bob', 'require_approval')",
                ] {
                    let refusal = try await Self.attempt(client, as: wide, script)
                    #expect(refusal?.state == "42501", "\(script): \(refusal?.text ?? "allowed")")
                }
                #expect(try await !Self.approved(client, id))
                #expect(try await client.scalar("SELECT require_approval FROM settings", as: Bool.self) == true)
                try await client.exec("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM \(wide); REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM \(wide)")
            }
        }
    }

    @Test func everyChangeTheListCallsWithdrawingWithdrawsAndTheOthersKeepIt() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec("UPDATE settings SET require_approval = true; INSERT INTO apps (name, display_name, topic) VALUES ('other', 'Other', 'com.example.other')")
            try await Self.withRole(["herald_marketer"], client) { alice in
                try await Self.withRole(["herald_marketer", "herald_approver"], client) { bob in
                    let id = try await Self.campaign(client, "Sale", author: alice)
                    // Changes 0021's guard missed, and a few it caught, each as the author.
                    let withdrawing: [(String, String)] = [
                        ("apps", "apps = ARRAY['default', 'other']"), ("quiet_hours", "quiet_hours = true"),
                        ("frequency_capped", "frequency_capped = true"), ("interruption_level", "interruption_level = 'active'"),
                        ("priority", "priority = 5"), ("sound", "sound = 'bell.caf'"), ("collapse_id", "collapse_id = 'sale-2'"),
                        ("thread_id", "thread_id = 'sales'"), ("default_locale", "default_locale = 'zh-Hans'"),
                        ("holdout_pct", "holdout_pct = 10"), ("local_missed", "local_missed = 'skip'"),
                        ("relevance_score", "relevance_score = 0.5"), ("content", "content = '{\"en\": {\"title\": \"New\", \"body\": \"B\"}, \"zh-Hans\": {\"title\": \"新\", \"body\": \"B\"}}'"),
                        ("expires_at", "expires_at = expires_at + interval '1 minute'"),
                    ]
                    for (column, set) in withdrawing {
                        #expect(try await Self.attempt(client, as: bob, "SELECT herald_approve(\(id))") == nil)
                        #expect(try await Self.approved(client, id))
                        let refusal = try await Self.attempt(client, as: alice, "UPDATE campaigns SET \(set) WHERE id = \(id)")
                        #expect(refusal == nil, "\(column): \(refusal?.text ?? "")")
                        #expect(try await !Self.approved(client, id), "a change of \(column) kept the approval")
                        let what = try await client.scalar(
                            "SELECT withdraws FROM campaign_approval_columns WHERE column_name = '\(column)'", as: String.self) ?? "?"
                        let reason = try await client.scalar(
                            "SELECT reason FROM campaign_approvals WHERE campaign_id = \(id) ORDER BY id DESC LIMIT 1", as: String.self)
                        #expect(reason == "changed: \(what)", "\(column)")
                    }
                    // A pause and a resume, the name and what analysts count keep it.
                    #expect(try await Self.attempt(client, as: bob, "SELECT herald_approve(\(id))") == nil)
                    for set in ["status = 'paused'", "status = 'scheduled'", "name = 'Sale (renamed)'",
                                "conversion_event = 'purchase'", "attribution_window = interval '2 days'"] {
                        #expect(try await Self.attempt(client, as: alice, "UPDATE campaigns SET \(set) WHERE id = \(id)") == nil, "\(set)")
                        #expect(try await Self.approved(client, id), "\(set) withdrew the approval")
                    }
                }
            }
        }
    }

    @Test func aChangeToTheSegmentOrTheButtonsWithdrawsEveryUnfinishedCampaignThatUsesThem() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec("UPDATE settings SET require_approval = true")
            try await Self.withRole(["herald_marketer"], client) { alice in
                try await Self.withRole(["herald_marketer", "herald_approver"], client) { bob in
                    let sale = try await Self.campaign(client, "Sale", author: alice)
                    let done = try await Self.campaign(client, "Done", author: alice)
                    try await client.exec("UPDATE campaigns SET segment_id = (SELECT segment_id FROM campaigns WHERE id = \(sale)) WHERE id = \(done)")
                    let other = try await Self.campaign(client, "Poster", author: alice)
                    try await client.exec("""
                        UPDATE campaigns SET kind = 'poster', category_id = 'poster.v1', expires_at = NULL,
                               media_url = 'https://cdn.example.com/p.gif', media_type = 'gif' WHERE id = \(other)
                        """)
                    func approveAll() async throws {
                        for id in [sale, done, other] where try await !Self.approved(client, id) {
                            #expect(try await Self.attempt(client, as: bob, "SELECT herald_approve(\(id))") == nil)
                        }
                    }
                    try await approveAll()
                    try await client.exec("UPDATE campaigns SET status = 'completed' WHERE id = \(done)")
                    let edits: [(String, String)] = [
                        ("the segment's rule", "UPDATE segments SET rule = '{\"attr\": \"attributes.tier\", \"op\": \"eq\", \"value\": \"silver\"}' WHERE name = 'seg Sale'"),
                        ("an action's title", "UPDATE actions SET title = 'Reserve now' WHERE id = 'reserve'"),
                        ("an action's translations", "UPDATE actions SET localized = '{\"fr\": {\"title\": \"Réserver\"}}' WHERE id = 'remind'"),
                        ("a button added", "INSERT INTO category_actions (category_id, action_id, position) VALUES ('flash_sale.v1', 'love_it', 3)"),
                        ("a button taken away", "DELETE FROM category_actions WHERE category_id = 'flash_sale.v1' AND action_id = 'love_it'"),
                        ("the category's options", "UPDATE categories SET options = 1 WHERE id = 'flash_sale.v1'"),
                    ]
                    for (what, sql) in edits {
                        let refusal = try await Self.attempt(client, as: alice, sql)
                        #expect(refusal == nil, "\(what): \(refusal?.text ?? "")")
                        #expect(try await !Self.approved(client, sale), "\(what) kept the sale's approval")
                        #expect(try await Self.approved(client, other), "\(what) withdrew a campaign that does not use it")
                        #expect(try await Self.approved(client, done), "\(what) withdrew a finished campaign's approval")
                        try await approveAll()
                    }
                    // The segment's description is not its rule.
                    #expect(try await Self.attempt(client, as: alice, "UPDATE segments SET description = 'gold members' WHERE name = 'seg Sale'") == nil)
                    #expect(try await Self.approved(client, sale))
                }
            }
        }
    }

    @Test func onlyAdminsChangeSettingsAndEveryChangeIsKept() async throws {
        try await TestDatabase.with { client, _ in
            try await Self.withRole(["herald_marketer", "herald_approver", "herald_job", "herald_intake", "herald_analyst"], client) { everyoneElse in
                let refusal = try await Self.attempt(client, as: everyoneElse, "UPDATE settings SET require_approval = true")
                #expect(refusal?.state == "42501", "\(refusal?.text ?? "allowed")")
            }
            try await Self.withRole(["herald_admin"], client) { admin in
                #expect(try await Self.attempt(client, as: admin, "UPDATE settings SET require_approval = true, frequency_cap = 5") == nil)
                var changes: [String] = []
                for try await (by, setting, old, new) in try await client.query(
                    "SELECT by_role, setting, old_value, new_value FROM settings_changes ORDER BY setting"
                ).decode((String, String, String?, String?).self) {
                    changes.append("\(by == admin ? "admin" : by) \(setting) \(old ?? "NULL") → \(new ?? "NULL")")
                }
                #expect(changes == ["admin frequency_cap 3 → 5", "admin require_approval false → true"], "\(changes)")
                // An admin reads the audit; a marketer does not need to.
                #expect(try await Self.attempt(client, as: admin, "SELECT * FROM settings_changes") == nil)
            }
        }
    }
}

extension ApprovalAuthorityTests {
    /// A campaign to its own recipients (Sql/0037): a change to the list or
    /// to anyone's data withdraws its approval, whatever statement made it,
    /// and leaves the other campaigns' alone.
    @Test func aChangeToTheRecipientsOrTheirDataWithdrawsTheApproval() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 10))
            try await client.exec("UPDATE settings SET require_approval = true")
            try await Self.withRole(["herald_marketer"], client) { alice in
                try await Self.withRole(["herald_marketer", "herald_approver"], client) { bob in
                    let sale = try await Self.campaign(client, "Sale", author: alice)
                    let other = try await Self.campaign(client, "Other", author: alice)
                    #expect(try await Self.attempt(client, as: alice, """
                        UPDATE campaigns SET audience = 'recipients', segment_id = NULL WHERE id = \(sale);
                        INSERT INTO campaign_recipients (campaign_id, external_id, data)
                        SELECT \(sale), 'u' || n, jsonb_build_object('points', n * 100) FROM generate_series(1, 5) n
                        """) == nil)
                    func approveBoth() async throws {
                        for id in [sale, other] where try await !Self.approved(client, id) {
                            #expect(try await Self.attempt(client, as: bob, "SELECT herald_approve(\(id))") == nil)
                        }
                    }
                    try await approveBoth()
                    let edits: [(String, String)] = [
                        ("a recipient added", "INSERT INTO campaign_recipients (campaign_id, external_id) VALUES (\(sale), 'u6')"),
                        ("a recipient's data", "UPDATE campaign_recipients SET data = '{\"points\": 1}' WHERE campaign_id = \(sale) AND external_id = 'u1'"),
                        ("a recipient taken away", "DELETE FROM campaign_recipients WHERE campaign_id = \(sale) AND external_id = 'u2'"),
                        ("the list emptied", "TRUNCATE campaign_recipients"),
                    ]
                    for (what, sql) in edits {
                        let refusal = try await Self.attempt(client, as: alice, sql)
                        #expect(refusal == nil, "\(what): \(refusal?.text ?? "")")
                        #expect(try await !Self.approved(client, sale), "\(what) kept the approval")
                        #expect(try await Self.approved(client, other), "\(what) withdrew a campaign without recipients")
                        #expect(try await client.scalar(
                            "SELECT reason FROM campaign_approvals WHERE campaign_id = \(sale) AND action = 'withdrawn' ORDER BY id DESC LIMIT 1",
                            as: String.self) == "changed: recipients")
                        try await approveBoth()
                    }
                    // The audience itself is classified: a change withdraws.
                    #expect(try await Self.attempt(client, as: alice, "UPDATE campaigns SET audience = 'segment' WHERE id = \(sale)") == nil)
                    #expect(try await !Self.approved(client, sale))
                    // A series reaches a segment: a list is for one campaign.
                    let refusal = try await Self.attempt(client, as: alice,
                        "UPDATE campaigns SET audience = 'recipients', repeat_unit = 'day' WHERE id = \(other)")
                    #expect(refusal?.text.contains("only a one-off campaign may reach a recipients list") == true, "\(refusal?.text ?? "taken")")
                }
            }
        }
    }
}
