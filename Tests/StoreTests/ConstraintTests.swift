import PostgresNIO
import Store
import Testing
import TestSupport

@Suite("Constraints speak to marketers")
struct ConstraintTests {
    @Test func campaignRules() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            let base = """
                INSERT INTO campaigns (name, kind, status, content, category_id, expires_at, media_url)
                VALUES ('C', '%KIND%', 'scheduled', '%CONTENT%', %CAT%, %EXP%, %MEDIA%)
                """
            func sql(kind: String = "poster", content: String = #"{"en": {"title": "T", "body": "B"}}"#,
                     category: String = "'poster.v1'", expires: String = "NULL",
                     media: String = "'https://cdn.example.com/a.gif'") -> String {
                base.replacingOccurrences(of: "%KIND%", with: kind).replacingOccurrences(of: "%CONTENT%", with: content)
                    .replacingOccurrences(of: "%CAT%", with: category).replacingOccurrences(of: "%EXP%", with: expires)
                    .replacingOccurrences(of: "%MEDIA%", with: media)
            }
            #expect(await client.refusal(sql()) == nil)
            #expect(await client.refusal(sql(kind: "banner"))?.contains(#"unknown kind "banner"; use poster, flash_sale or feedback"#) == true)
            #expect(await client.refusal(sql(kind: "flash_sale", category: "'flash_sale.v1'"))?
                .contains("a flash_sale needs expires_at (the end of the sale)") == true)
            #expect(await client.refusal(sql(kind: "feedback", category: "'flash_sale.v1'"))?
                .contains(#"a feedback campaign needs a category with a text_input action; category "flash_sale.v1" has none"#) == true)
            #expect(await client.refusal(sql(kind: "feedback", category: "'feedback.v1'")) == nil)
            #expect(await client.refusal(sql(media: "NULL"))?.contains("a poster needs media_url") == true)
            #expect(await client.refusal(sql(media: "'http://insecure/a.gif'"))?.contains("media_url must be an https:// URL") == true)
            #expect(await client.refusal(sql(content: #"{"fr": {"title": "T", "body": "B"}}"#))?
                .contains(#"content needs an entry for its default locale "en""#) == true)
            #expect(await client.refusal(sql(content: #"{"en": {"title": "T"}}"#))?
                .contains(#"content for locale "en" needs a text "title" and "body""#) == true)
            #expect(await client.refusal(sql(kind: "flash_sale", category: "'flash_sale.v1'", expires: "now() - interval '1 day'"))?
                .contains("campaign expires_at must be after send_at") == true)
            #expect(await client.refusal("UPDATE campaigns SET collapse_id = repeat('x', 65)")?
                .contains("campaign collapse_id must be at most 64 bytes") == true)
            #expect(await client.refusal("UPDATE campaigns SET status = 'sending'")?
                .contains("campaign status must be draft, scheduled, running, paused") == true)
        }
    }

    @Test func categoriesHoldAtMostFourActions() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec("""
                INSERT INTO category_actions VALUES ('poster.v1', 'reserve', 3), ('poster.v1', 'remind', 4)
                """)
            let text = await client.refusal("INSERT INTO category_actions VALUES ('poster.v1', 'comment', 5)")
            #expect(text?.contains(#"category "poster.v1" would have 5 actions; iOS shows at most 4"#) == true)
            #expect(await client.refusal("INSERT INTO actions (id, title, kind) VALUES ('x', 'X', 'text_input')")?
                .contains("a text_input action needs text_button_title") == true)
            #expect(await client.refusal("INSERT INTO actions (id, title, options) VALUES ('y', 'Y', 8)")?
                .contains("action options: 1 authRequired, 2 destructive, 4 foreground") == true)
        }
    }

    @Test func audienceRows() async throws {
        try await TestDatabase.with { client, _ in
            #expect(await client.refusal("INSERT INTO users (external_id, time_zone) VALUES ('a', 'Mars/Olympus')")?
                .contains("user time_zone must be a known zone name, e.g. Europe/Paris") == true)
            try await client.exec("INSERT INTO users (external_id, time_zone) VALUES ('b', 'Asia/Tokyo')")
            #expect(await client.refusal("""
                INSERT INTO devices (user_id, token) SELECT id, 'NOT-HEX' FROM users
                """)?.contains("device token must be lowercase hex, 64 to 200 characters") == true)
            #expect(await client.refusal("""
                INSERT INTO devices (user_id, token, environment) SELECT id, repeat('a', 64), 'staging' FROM users
                """)?.contains("device environment must be production or sandbox") == true)
            #expect(await client.refusal("""
                INSERT INTO devices (user_id, token, public_key) SELECT id, repeat('a', 64), 'auYyK/2a0xkuiQUaAZhUtXUoa9++6wkcfSdWJjLLkUc=' FROM users
                """)?.contains("device public_key and key_id go together") == true)
        }
    }
}
