import Foundation
import PostgresNIO

/// Rows most tests need: the action catalogue of the sample data, and
/// audiences made with set-based statements.
public enum Fixtures {
    public static let catalogue = """
        INSERT INTO actions (id, title, kind, options, text_button_title, text_placeholder) VALUES
            ('love_it', 'I love it~', 'button', 0, NULL, NULL),
            ('dont_care', 'I don''t care~', 'button', 2, NULL, NULL),
            ('reserve', 'Reserve', 'button', 4, NULL, NULL),
            ('remind', 'Remind me', 'button', 0, NULL, NULL),
            ('comment', 'Tell us', 'text_input', 0, 'Send', 'Your thoughts');
        INSERT INTO categories (id, options) VALUES ('poster.v1', 0), ('flash_sale.v1', 0), ('feedback.v1', 1);
        INSERT INTO category_actions (category_id, action_id, position) VALUES
            ('poster.v1', 'love_it', 1), ('poster.v1', 'dont_care', 2),
            ('flash_sale.v1', 'reserve', 1), ('flash_sale.v1', 'remind', 2),
            ('feedback.v1', 'comment', 1), ('feedback.v1', 'dont_care', 2);
        """

    /// `count` users `u1…uN`, one device each with token = hex of n (padded to
    /// 64), locales cycling en / zh-Hans / fr, all in UTC, every 3rd device
    /// with a key. No opt-outs, nothing invalid.
    public static func audience(count: Int, locales: [String] = ["en", "zh-Hans", "fr"]) -> String {
        let list = locales.map { "'\($0)'" }.joined(separator: ",")
        return """
            INSERT INTO users (external_id, locale, time_zone, attributes)
            SELECT 'u' || n, (ARRAY[\(list)])[1 + n % \(locales.count)], 'UTC',
                   jsonb_build_object('tier', CASE WHEN n % 2 = 0 THEN 'gold' ELSE 'free' END, 'orders', n % 10)
            FROM generate_series(1, \(count)) AS n;
            INSERT INTO devices (user_id, token, environment, public_key, key_id, app_version, last_seen_at)
            SELECT u.id, lpad(to_hex(u.id), 64, '0'), 'production',
                   CASE WHEN u.id % 3 = 0 THEN 'auYyK/2a0xkuiQUaAZhUtXUoa9++6wkcfSdWJjLLkUc=' END,
                   CASE WHEN u.id % 3 = 0 THEN 'k' || u.id END,
                   '2.' || (u.id % 12), now() - make_interval(days => (u.id % 40)::int)
            FROM users u;
            """
    }

    /// A scheduled, due campaign of `kind` targeting `segment` (by name, or everyone).
    public static func campaign(name: String, kind: String = "poster", segment: String? = nil) -> String {
        let category = ["poster": "poster.v1", "flash_sale": "flash_sale.v1", "feedback": "feedback.v1"][kind] ?? "poster.v1"
        let media = kind == "poster" ? "'https://cdn.example.com/p.gif'" : "NULL"
        let expires = kind == "flash_sale" ? "now() + interval '1 hour'" : "NULL"
        let seg = segment.map { "(SELECT id FROM segments WHERE name = '\($0)')" } ?? "NULL"
        return """
            INSERT INTO campaigns (name, kind, status, segment_id, content, media_url, media_type, category_id,
                                   expires_at, quiet_hours, frequency_capped)
            VALUES ('\(name)', '\(kind)', 'scheduled', \(seg),
                    '{"en": {"title": "Hello", "body": "World"}, "zh-Hans": {"title": "你好", "body": "世界"}}',
                    \(media), CASE WHEN \(media) IS NULL THEN NULL ELSE 'gif' END, '\(category)', \(expires), false, false)
            """
    }

    /// The catalogue, three users with a device each, and three sent
    /// deliveries: 1 of a poster (buttons love_it, dont_care), 2 of a
    /// feedback prompt (text input `comment`), 3 of the poster again.
    public static let threeDeliveries = catalogue + ";\n" + audience(count: 3) + ";\n"
        + campaign(name: "Poster") + ";\n" + campaign(name: "Feedback", kind: "feedback") + ";\n" + """
        INSERT INTO deliveries (id, campaign_id, device_id, user_id, status, sent_at)
        SELECT v.id, c.id, d.id, d.user_id, 'sent', now()
        FROM (VALUES (1, 'Poster', 1), (2, 'Feedback', 2), (3, 'Poster', 3)) AS v(id, campaign, n)
        JOIN campaigns c ON c.name = v.campaign
        JOIN devices d ON d.id = (SELECT id FROM devices ORDER BY id OFFSET v.n - 1 LIMIT 1);
        """

    /// `threeDeliveries` as runs write them: each campaign's ledger in a
    /// partition of its own, its ids recorded in `delivery_id_ranges`, so that
    /// replies are looked up one partition per range (`herald_store_checked_replies`' fast path)
    /// instead of by the general lookup that rows written by hand take.
    public static let threeDeliveriesAsRunsWriteThem = threeDeliveries + """
        ;
        SELECT herald_delivery_partition(id) FROM campaigns;
        INSERT INTO delivery_id_ranges (campaign_id, ids)
        SELECT campaign_id, int8range(id, id, '[]') FROM deliveries;
        """
}
