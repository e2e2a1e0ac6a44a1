import AppServer
import Foundation
import HeraldCore
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Store
import TestSupport
import Testing

@Suite("Localized notification config (contract 5)")
struct LocalizedConfigTests {
    static let translations = """
        UPDATE actions SET localized = '{"fr": {"title": "Réserver"}, "zh-Hans": {"title": "立即预订"}}' WHERE id = 'reserve';
        UPDATE actions SET localized = '{"fr": {"title": "Dites-nous", "text_button_title": "Envoyer", "text_placeholder": "Votre avis"},
                                         "zh-Hans": {"title": "告诉我们", "text_button_title": "发送"}}' WHERE id = 'comment';
        """

    struct Fetched {
        var status: Int
        var etag: String
        var vary: String?
        var actions: [String: [String: Any]]
    }

    func get(_ http: some TestClientProtocol, _ uri: String, headers: HTTPFields = [:]) async throws -> Fetched {
        try await http.execute(uri: uri, method: .get, headers: headers) { response in
            var actions: [String: [String: Any]] = [:]
            if response.status == .ok,
               let root = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any],
               let config = root["NotificationConfig"] as? [String: Any] {
                actions = config["UNNotificationAction"] as? [String: [String: Any]] ?? [:]
            }
            return Fetched(status: Int(response.status.code), etag: response.headers[.eTag] ?? "",
                           vary: response.headers[.vary], actions: actions)
        }
    }

    @Test func eachLocaleItsFallbackItsETagAnd304() async throws {
        try await withIntake { intake, db in
            try await db.exec(Self.translations)
            let app = Application(router: AppHTTPServer.router(intake: intake))
            try await app.test(.live) { http in
                let en = try await get(http, "/v1/notification-config")
                let fr = try await get(http, "/v1/notification-config", headers: [.acceptLanguage: "fr-FR,fr;q=0.9,en;q=0.5"])
                let zh = try await get(http, "/v1/notification-config?locale=zh-Hans")
                #expect(en.actions["reserve"]?["title"] as? String == "Reserve")
                #expect(fr.actions["reserve"]?["title"] as? String == "Réserver")
                #expect(zh.actions["reserve"]?["title"] as? String == "立即预订")
                #expect(fr.actions["comment"]?["textInput"] as? [String: String] == ["buttonTitle": "Envoyer", "placeholder": "Votre avis"])
                // A missing placeholder falls back to the default's.
                #expect(zh.actions["comment"]?["textInput"] as? [String: String] == ["buttonTitle": "发送", "placeholder": "Your thoughts"])
                // Untranslated actions keep their default title.
                #expect(fr.actions["love_it"]?["title"] as? String == "I love it~")
                #expect(fr.vary == "Accept-Language")
                #expect(Set([en.etag, fr.etag, zh.etag]).count == 3, "each locale's document has its own ETag")

                // The fallback chain of campaign text: exact, shorter tag, same language, default.
                let zhCN = try await get(http, "/v1/notification-config?locale=zh-Hans-CN")
                #expect(zhCN.etag == zh.etag)
                let frCA = try await get(http, "/v1/notification-config", headers: [.acceptLanguage: "fr-CA"])
                #expect(frCA.etag == fr.etag)
                let zhHant = try await get(http, "/v1/notification-config?locale=zh-Hant")
                #expect(zhHant.etag == zh.etag, "same language: zh-Hant falls back to zh-Hans before the default")
                let pt = try await get(http, "/v1/notification-config", headers: [.acceptLanguage: "pt-BR"])
                #expect(pt.etag == en.etag)
                // ?locale= wins over Accept-Language.
                let both = try await get(http, "/v1/notification-config?locale=fr", headers: [.acceptLanguage: "zh-Hans"])
                #expect(both.etag == fr.etag)

                // 304 for the ETag of the locale asked for, 200 for another locale's.
                #expect(try await get(http, "/v1/notification-config?locale=fr", headers: [.ifNoneMatch: fr.etag]).status == 304)
                #expect(try await get(http, "/v1/notification-config?locale=zh-Hans", headers: [.ifNoneMatch: fr.etag]).status == 200)
                // A change to one locale's title changes that locale's ETag only.
                try await db.exec("UPDATE actions SET localized = jsonb_set(localized, '{fr,title}', '\"Je réserve\"') WHERE id = 'reserve'")
                let fr2 = try await get(http, "/v1/notification-config?locale=fr", headers: [.ifNoneMatch: fr.etag])
                #expect(fr2.status == 200)
                #expect(fr2.actions["reserve"]?["title"] as? String == "Je réserve")
                #expect(try await get(http, "/v1/notification-config?locale=zh-Hans", headers: [.ifNoneMatch: zh.etag]).status == 304)
            }
            // Every document served is remembered with its categories' definitions.
            #expect(try await db.scalar("SELECT count(*) FROM config_documents", as: Int64.self) == 4)
            // …as each document shows it: the flash sale's button differs in each of the four.
            #expect(try await db.scalar("SELECT count(DISTINCT categories ->> 'flash_sale.v1') FROM config_documents", as: Int64.self) == 4)
            #expect(try await db.scalar("SELECT count(DISTINCT categories ->> 'poster.v1') FROM config_documents", as: Int64.self) == 1)
        }
    }

    @Test func eachAppGetsTheSharedCategoriesAndItsOwn() async throws {
        try await withIntake { intake, db in
            try await db.exec("""
                INSERT INTO apps (name, display_name, topic) VALUES ('companion', 'Companion', 'com.example.companion');
                INSERT INTO actions (id, title, options) VALUES ('track', 'Track my order', 4);
                INSERT INTO categories (id, options, apps) VALUES ('order.v1', 0, ARRAY['companion']);
                INSERT INTO category_actions (category_id, action_id, position) VALUES ('order.v1', 'track', 1);
                """)
            let app = Application(router: AppHTTPServer.router(intake: intake))
            try await app.test(.live) { http in
                func categories(_ uri: String) async throws -> (Int, [String], String) {
                    try await http.execute(uri: uri, method: .get) { response in
                        let root = try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                        let config = root?["NotificationConfig"] as? [String: Any]
                        let ids = (config?["UNNotificationCategory"] as? [String: Any])?.keys.sorted() ?? []
                        return (Int(response.status.code), ids, (root?["error"] as? String) ?? "")
                    }
                }
                let shop = try await categories("/v1/notification-config")
                #expect(shop.1 == ["feedback.v1", "flash_sale.v1", "poster.v1"])
                #expect(try await categories("/v1/notification-config?app=default").1 == shop.1)
                let companion = try await categories("/v1/notification-config?app=companion&locale=fr")
                #expect(companion.0 == 200 && companion.1 == ["feedback.v1", "flash_sale.v1", "order.v1", "poster.v1"])
                #expect(try await get(http, "/v1/notification-config?app=companion").actions["track"]?["title"] as? String == "Track my order")
                #expect(try await get(http, "/v1/notification-config").actions["track"] == nil, "another app's action is not shown")
                let unknown = try await categories("/v1/notification-config?app=nope")
                #expect(unknown.0 == 404 && unknown.2 == "unknown_app")
            }
        }
    }

    @Test func badLocalizationsAreRefusedWithAReason() async throws {
        try await withIntake { _, db in
            let cases: [(String, String)] = [
                (#"{"fr": "Réserver"}"#, #"localized entry "fr" needs a text "title""#),
                (#"{"français": {"title": "Réserver"}}"#, "is not a locale tag"),
                (#"{"fr": {"title": "Réserver", "text_placeholder": "…"}}"#, "only text_input actions"),
                (#"{"fr": {"title": "Réserver", "subtitle": "x"}}"#, #"has "subtitle""#),
            ]
            for (json, expected) in cases {
                do {
                    try await db.exec("UPDATE actions SET localized = '\(json)' WHERE id = 'reserve'")
                    Issue.record("accepted \(json)")
                } catch {
                    #expect(ErrorText.describe(error).contains(expected), "\(json): \(ErrorText.describe(error))")
                }
            }
        }
    }
}
