-- Herald sample data: the demo's audience and one campaign of each kind, due
-- half an hour after it is loaded (so that devices whose app has not
-- registered the campaigns' categories get a config refresh push first). It
-- doubles as the marketer's worked example: every statement here is what a
-- marketer writes to schedule a campaign.
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -1 -f Sql/sample_data.sql    (after the migrations)
--
-- The audience: 300 users across seven locales and their time zones. Their
-- 342 devices are not here: they register themselves through the API
-- (PUT /v1/devices/{token}) when `herald demo` runs, from Sql/sample_devices.tsv.
-- Device n's token is the SHA-256 of "herald demo token <n>"; 60% of the
-- devices register an X25519 public key (key id "demo-<n>") whose private key
-- is the SHA-256 of "herald demo device <n>", so the demo's device fleet can
-- open what is sealed for them. Every 50th user opted out; every 40th device
-- logs out (DELETE /v1/devices/{token}) after registering.

-- Two apps: the shop (the app `default`, on the deployment's APNS_* .p8 key)
-- and its companion app, a bundle of its own on an APNs certificate. Every
-- fourth device runs the companion (sample_devices.tsv, column app); the
-- campaigns below name no apps, so each goes to both, each device through
-- its own app. `herald demo` gives the companion its .p12 (issued by the
-- APNs simulator) and its backend's registration key:
--   herald apps add-credential companion cert --p12 … --password-file …
--   herald apps add-registration-key companion backend-public.pem
INSERT INTO apps (name, display_name, topic) VALUES
    ('companion', 'Shop companion', 'com.example.herald.companion');

-- Buttons and text inputs the app registers (served by GET /v1/notification-config
-- in the app's language). The plain columns are English (default_locale 'en');
-- `localized` holds the other languages.
INSERT INTO actions (id, title, kind, options, text_button_title, text_placeholder, localized) VALUES
    ('love_it',    'I love it~',      'button',     0, NULL,   NULL,
     '{"fr": {"title": "J''adore~"}, "zh-Hans": {"title": "我喜欢~"}, "ja": {"title": "大好き~"},
       "de": {"title": "Gefällt mir~"}, "es": {"title": "¡Me encanta!"}}'),
    ('dont_care',  'I don''t care~',  'button',     2, NULL,   NULL,
     '{"fr": {"title": "Bof~"}, "zh-Hans": {"title": "不感兴趣~"}, "ja": {"title": "興味なし~"},
       "de": {"title": "Egal~"}, "es": {"title": "No me interesa~"}}'),
    ('reserve',    'Reserve',         'button',     4, NULL,   NULL,
     '{"fr": {"title": "Réserver"}, "zh-Hans": {"title": "立即预订"}, "ja": {"title": "予約する"},
       "de": {"title": "Reservieren"}, "es": {"title": "Reservar"}}'),
    ('remind',     'Remind me',       'button',     0, NULL,   NULL,
     '{"fr": {"title": "Me le rappeler"}, "zh-Hans": {"title": "提醒我"}, "ja": {"title": "リマインド"},
       "de": {"title": "Erinnern"}, "es": {"title": "Recordármelo"}}'),
    ('comment',    'Tell us',         'text_input', 0, 'Send', 'Your thoughts',
     '{"fr": {"title": "Dites-nous", "text_button_title": "Envoyer", "text_placeholder": "Votre avis"},
       "zh-Hans": {"title": "告诉我们", "text_button_title": "发送", "text_placeholder": "说说你的想法"},
       "ja": {"title": "ご意見", "text_button_title": "送信", "text_placeholder": "ご感想をどうぞ"},
       "de": {"title": "Sagen Sie es uns", "text_button_title": "Senden", "text_placeholder": "Ihre Meinung"},
       "es": {"title": "Cuéntanos", "text_button_title": "Enviar", "text_placeholder": "Tu opinión"}}');

INSERT INTO categories (id, options) VALUES
    ('poster.v1', 0),
    ('flash_sale.v1', 0),
    ('feedback.v1', 1);

INSERT INTO category_actions (category_id, action_id, position) VALUES
    ('poster.v1', 'love_it', 1),
    ('poster.v1', 'dont_care', 2),
    ('flash_sale.v1', 'reserve', 1),
    ('flash_sale.v1', 'remind', 2),
    ('feedback.v1', 'comment', 1),
    ('feedback.v1', 'dont_care', 2);

-- Segments: a JSON rule over users and devices (docs/marketers.md, "Segments").
INSERT INTO segments (name, description, rule) VALUES
    ('everyone', 'every reachable device', '{}'),
    ('engaged_members', 'gold and silver members seen in the last 30 days',
     '{"all": [{"attr": "attributes.tier", "op": "in", "value": ["gold", "silver"]},
               {"attr": "last_seen", "op": "within", "value": "30 days"}]}'),
    ('app_2_plus', 'devices on app version 2.0 or later',
     '{"all": [{"attr": "app_version", "op": ">=", "value": "2.0"}]}');

-- A poster in 30 minutes: the service extension downloads the GIF and attaches it.
INSERT INTO campaigns (name, kind, status, segment_id, content, default_locale,
                       media_url, media_type, category_id, send_at, quiet_hours)
SELECT 'Autumn poster', 'poster', 'scheduled', s.id,
       '{"en":      {"title": "Autumn is here", "body": "Our new collection just landed."},
         "zh-Hans": {"title": "秋天来了", "body": "新品已上架。"},
         "ja":      {"title": "秋が来た", "body": "新コレクションが入荷しました。"},
         "fr":      {"title": "L''automne est là", "body": "Notre nouvelle collection vient d''arriver."}}',
       'en', 'https://cdn.example.com/p/autumn.gif', 'gif', 'poster.v1', now() + interval '30 minutes', false
FROM segments s WHERE s.name = 'everyone';

-- An A/B test of the poster: half its audience gets A (the wording above),
-- half B (another wording and GIF). A device's variant is decided by a hash
-- of the campaign and device, the same on every run; a variant's content
-- replaces the campaign's text in the locales it gives (B gives all four).
INSERT INTO campaign_variants (campaign_id, name, share, content)
SELECT id, 'A', 50, '{"en": {"title": "Autumn is here", "body": "Our new collection just landed."}}'
FROM campaigns WHERE name = 'Autumn poster';
INSERT INTO campaign_variants (campaign_id, name, share, content, media_url, media_type)
SELECT id, 'B', 50,
       '{"en":      {"title": "New in: cosy autumn", "body": "Knits, boots and scarves. Take a look before they go."},
         "zh-Hans": {"title": "秋季新品：温暖上新", "body": "针织衫、靴子和围巾，先睹为快。"},
         "ja":      {"title": "秋の新作、入荷", "body": "ニット、ブーツ、マフラー。お早めにどうぞ。"},
         "fr":      {"title": "Nouveau : l''automne douillet", "body": "Mailles, bottes et écharpes. À découvrir vite."}}',
       'https://cdn.example.com/p/autumn-cosy.gif', 'gif'
FROM campaigns WHERE name = 'Autumn poster';

-- Did the poster sell anything? 20% of its users are held out (never sent
-- it, by a stable hash of campaign and user), and purchases within two days
-- of it are compared between those who were sent it and those held out
-- (analyst.lift; the app's backend posts purchases to POST /v1/conversions).
UPDATE campaigns SET holdout_pct = 20, conversion_event = 'purchase', attribution_window = '2 days'
WHERE name = 'Autumn poster';

-- A flash sale in 30 minutes: buttons, an end time, time-sensitive, and a
-- coupon of its own for each user, drawn from a pool and sealed to each of
-- their devices; its subtitle names the user's tier (a template,
-- docs/marketers.md "Text made for each person").
INSERT INTO code_pools (name) VALUES ('flash-autumn');
INSERT INTO pool_codes (pool, code)
SELECT 'flash-autumn', 'FLASH-' || upper(substr(md5('flash-autumn-' || n), 1, 6)) FROM generate_series(1, 500) n;
-- Its audience's apps need the flash_sale.v1
-- category first: devices whose reported config lacks it receive a config
-- refresh push up to an hour before send_at (HERALD_CONFIG_REFRESH_LEAD_MINUTES).
INSERT INTO campaigns (name, kind, status, segment_id, content, default_locale, category_id,
                       send_at, expires_at, interruption_level, relevance_score, collapse_id,
                       custom, sensitive, code_pool, quiet_hours)
SELECT 'Two-hour flash sale', 'flash_sale', 'scheduled', s.id,
       '{"en":      {"title": "Flash sale: 2 hours only", "subtitle": "{{ user.tier | capitalize | default: \"Members\" }} members first", "body": "Your coupon is inside. Reserve before it ends."},
         "zh-Hans": {"title": "限时抢购：仅两小时", "subtitle": "会员专享", "body": "优惠券已送达，结束前预订。"},
         "fr":      {"title": "Vente flash : 2 heures seulement", "subtitle": "Membres d''abord", "body": "Votre coupon est à l''intérieur. Réservez avant la fin."}}',
       'en', 'flash_sale.v1', now() + interval '30 minutes', now() + interval '150 minutes', 'time-sensitive', 0.8, 'flash-autumn',
       '{"sku": "A-42"}', '{"coupon": "{{ code }}", "price": "¥99"}', 'flash-autumn', false
FROM segments s WHERE s.name = 'engaged_members';

-- A flash sale as a Live Activity in two hours, for the shop's app (its
-- companion sends with a certificate, which Apple takes for no Live
-- Activity): a countdown on the lock screen started by push-to-start on
-- devices that registered a token for it (the others get its alert), the
-- price dropping twice, the stock read from sale_stock, then the end
-- (docs/marketers.md, "Flash sales as Live Activities").
INSERT INTO campaigns (name, kind, status, segment_id, content, default_locale, category_id, send_at, expires_at,
                       interruption_level, quiet_hours, frequency_capped, apps, live_activity)
SELECT 'Winter coats countdown', 'flash_sale', 'scheduled', s.id,
       '{"en": {"title": "Winter coats: one hour only", "body": "Follow the price on your lock screen."},
         "fr": {"title": "Manteaux d''hiver : une heure seulement", "body": "Suivez le prix sur votre écran verrouillé."},
         "zh-Hans": {"title": "冬季大衣：仅限一小时", "body": "在锁定屏幕上关注价格。"}}',
       'en', 'flash_sale.v1', now() + interval '2 hours', now() + interval '3 hours', 'time-sensitive', false, false,
       ARRAY['default'],
       jsonb_build_object('title', 'Winter coats', 'stock', true, 'dismiss_after', 900, 'relevance', 80,
           'state', jsonb_build_object('headline', '40% off every coat', 'price', '€89', 'wasPrice', '€149'),
           'updates', jsonb_build_array(
               jsonb_build_object('at', to_char((now() + interval '140 minutes') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                  'state', jsonb_build_object('price', '€69')),
               jsonb_build_object('at', to_char((now() + interval '160 minutes') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                  'state', jsonb_build_object('price', '€59'),
                                  'alert', jsonb_build_object('en', jsonb_build_object('title', 'Down to €59', 'body', '20 minutes left')))))
FROM segments s WHERE s.name = 'everyone';
-- The shop's own system keeps the stock current; each update shows it.
INSERT INTO sale_stock (campaign_id, stock_left) SELECT id, 300 FROM campaigns WHERE name = 'Winter coats countdown';

-- A feedback prompt in 30 minutes: the user types an answer into the notification. The
-- Spanish text is given as keys of the app's own Localizable.strings
-- (title-loc-key, loc-key, loc-args) instead of literal text.
INSERT INTO campaigns (name, kind, status, segment_id, content, default_locale, category_id, send_at, quiet_hours)
SELECT 'How was your order?', 'feedback', 'scheduled', s.id,
       '{"en":      {"title": "How was your order?", "body": "Tell us in a few words."},
         "zh-Hans": {"title": "订单体验如何？", "body": "说两句吧。"},
         "de":      {"title": "Wie war Ihre Bestellung?", "body": "Sagen Sie es uns in wenigen Worten."},
         "es":      {"title-loc-key": "FEEDBACK_TITLE", "loc-key": "FEEDBACK_BODY", "loc-args": ["A-42"]}}',
       'en', 'feedback.v1', now() + interval '30 minutes', false
FROM segments s WHERE s.name = 'app_2_plus';

INSERT INTO users (external_id, locale, time_zone, attributes, opted_out_at) VALUES
    ('demo-user-001', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 39}', NULL),
    ('demo-user-002', 'fr', 'Europe/Paris', '{"tier": "silver", "city": "Paris", "orders": 27}', NULL),
    ('demo-user-003', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 19}', NULL),
    ('demo-user-004', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 21}', NULL),
    ('demo-user-005', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 38}', NULL),
    ('demo-user-006', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 31}', NULL),
    ('demo-user-007', 'fr', 'Europe/Paris', '{"tier": "gold", "city": "Paris", "orders": 6}', NULL),
    ('demo-user-008', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 25}', NULL),
    ('demo-user-009', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 36}', NULL),
    ('demo-user-010', 'en', 'America/Los_Angeles', '{"tier": "free", "city": "New York", "orders": 20}', NULL),
    ('demo-user-011', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 26}', NULL),
    ('demo-user-012', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 8}', NULL),
    ('demo-user-013', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 24}', NULL),
    ('demo-user-014', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 15}', NULL),
    ('demo-user-015', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 20}', NULL),
    ('demo-user-016', 'fr', 'Europe/Paris', '{"tier": "gold", "city": "Paris", "orders": 14}', NULL),
    ('demo-user-017', 'en', 'America/Chicago', '{"tier": "silver", "city": "New York", "orders": 13}', NULL),
    ('demo-user-018', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 37}', NULL),
    ('demo-user-019', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 20}', NULL),
    ('demo-user-020', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 1}', NULL),
    ('demo-user-021', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 1}', NULL),
    ('demo-user-022', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 24}', NULL),
    ('demo-user-023', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 19}', NULL),
    ('demo-user-024', 'fr', 'Europe/Paris', '{"tier": "gold", "city": "Paris", "orders": 12}', NULL),
    ('demo-user-025', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 30}', NULL),
    ('demo-user-026', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 40}', NULL),
    ('demo-user-027', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 34}', NULL),
    ('demo-user-028', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 30}', NULL),
    ('demo-user-029', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 24}', NULL),
    ('demo-user-030', 'de', 'Europe/Berlin', '{"tier": "silver", "city": "Berlin", "orders": 6}', NULL),
    ('demo-user-031', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 20}', NULL),
    ('demo-user-032', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 20}', NULL),
    ('demo-user-033', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 7}', NULL),
    ('demo-user-034', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 14}', NULL),
    ('demo-user-035', 'es-MX', 'America/Mexico_City', '{"tier": "gold", "city": "CDMX", "orders": 37}', NULL),
    ('demo-user-036', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 32}', NULL),
    ('demo-user-037', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 1}', NULL),
    ('demo-user-038', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 3}', NULL),
    ('demo-user-039', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 28}', NULL),
    ('demo-user-040', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 1}', NULL),
    ('demo-user-041', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 1}', NULL),
    ('demo-user-042', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 8}', NULL),
    ('demo-user-043', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 25}', NULL),
    ('demo-user-044', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 11}', NULL),
    ('demo-user-045', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 37}', NULL),
    ('demo-user-046', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 29}', NULL),
    ('demo-user-047', 'es-MX', 'America/Mexico_City', '{"tier": "gold", "city": "CDMX", "orders": 17}', NULL),
    ('demo-user-048', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 10}', NULL),
    ('demo-user-049', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 29}', NULL),
    ('demo-user-050', 'es-MX', 'America/Mexico_City', '{"tier": "gold", "city": "CDMX", "orders": 12}', now() - interval '3 days'),
    ('demo-user-051', 'ja', 'Asia/Tokyo', '{"tier": "silver", "city": "Tokyo", "orders": 5}', NULL),
    ('demo-user-052', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 18}', NULL),
    ('demo-user-053', 'fr', 'Europe/Paris', '{"tier": "silver", "city": "Paris", "orders": 4}', NULL),
    ('demo-user-054', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 22}', NULL),
    ('demo-user-055', 'en-GB', 'Europe/London', '{"tier": "silver", "city": "London", "orders": 22}', NULL),
    ('demo-user-056', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 4}', NULL),
    ('demo-user-057', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 6}', NULL),
    ('demo-user-058', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 0}', NULL),
    ('demo-user-059', 'ja', 'Asia/Tokyo', '{"tier": "gold", "city": "Tokyo", "orders": 29}', NULL),
    ('demo-user-060', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 1}', NULL),
    ('demo-user-061', 'de', 'Europe/Berlin', '{"tier": "gold", "city": "Berlin", "orders": 28}', NULL),
    ('demo-user-062', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 25}', NULL),
    ('demo-user-063', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 2}', NULL),
    ('demo-user-064', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 39}', NULL),
    ('demo-user-065', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 11}', NULL),
    ('demo-user-066', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 12}', NULL),
    ('demo-user-067', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 11}', NULL),
    ('demo-user-068', 'en', 'America/New_York', '{"tier": "silver", "city": "New York", "orders": 10}', NULL),
    ('demo-user-069', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 13}', NULL),
    ('demo-user-070', 'en', 'America/Chicago', '{"tier": "silver", "city": "New York", "orders": 34}', NULL),
    ('demo-user-071', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 9}', NULL),
    ('demo-user-072', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 18}', NULL),
    ('demo-user-073', 'fr', 'Europe/Paris', '{"tier": "silver", "city": "Paris", "orders": 16}', NULL),
    ('demo-user-074', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 23}', NULL),
    ('demo-user-075', 'en', 'America/Los_Angeles', '{"tier": "free", "city": "New York", "orders": 18}', NULL),
    ('demo-user-076', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 8}', NULL),
    ('demo-user-077', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 21}', NULL),
    ('demo-user-078', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 26}', NULL),
    ('demo-user-079', 'en', 'America/Los_Angeles', '{"tier": "free", "city": "New York", "orders": 16}', NULL),
    ('demo-user-080', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 37}', NULL),
    ('demo-user-081', 'de', 'Europe/Berlin', '{"tier": "silver", "city": "Berlin", "orders": 11}', NULL),
    ('demo-user-082', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 19}', NULL),
    ('demo-user-083', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 21}', NULL),
    ('demo-user-084', 'ja', 'Asia/Tokyo', '{"tier": "gold", "city": "Tokyo", "orders": 29}', NULL),
    ('demo-user-085', 'de', 'Europe/Berlin', '{"tier": "silver", "city": "Berlin", "orders": 8}', NULL),
    ('demo-user-086', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 37}', NULL),
    ('demo-user-087', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 10}', NULL),
    ('demo-user-088', 'en', 'America/Chicago', '{"tier": "silver", "city": "New York", "orders": 1}', NULL),
    ('demo-user-089', 'en', 'America/Los_Angeles', '{"tier": "silver", "city": "New York", "orders": 9}', NULL),
    ('demo-user-090', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 2}', NULL),
    ('demo-user-091', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 1}', NULL),
    ('demo-user-092', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 29}', NULL),
    ('demo-user-093', 'en', 'America/Los_Angeles', '{"tier": "silver", "city": "New York", "orders": 31}', NULL),
    ('demo-user-094', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 9}', NULL),
    ('demo-user-095', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 38}', NULL),
    ('demo-user-096', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 11}', NULL),
    ('demo-user-097', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 18}', NULL),
    ('demo-user-098', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 7}', NULL),
    ('demo-user-099', 'de', 'Europe/Berlin', '{"tier": "gold", "city": "Berlin", "orders": 19}', NULL),
    ('demo-user-100', 'en-GB', 'Europe/London', '{"tier": "silver", "city": "London", "orders": 9}', now() - interval '3 days'),
    ('demo-user-101', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 5}', NULL),
    ('demo-user-102', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 32}', NULL),
    ('demo-user-103', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 22}', NULL),
    ('demo-user-104', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 37}', NULL),
    ('demo-user-105', 'ja', 'Asia/Tokyo', '{"tier": "silver", "city": "Tokyo", "orders": 11}', NULL),
    ('demo-user-106', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 32}', NULL),
    ('demo-user-107', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 28}', NULL),
    ('demo-user-108', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 19}', NULL),
    ('demo-user-109', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 15}', NULL),
    ('demo-user-110', 'fr', 'Europe/Paris', '{"tier": "silver", "city": "Paris", "orders": 23}', NULL),
    ('demo-user-111', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 37}', NULL),
    ('demo-user-112', 'en', 'America/Los_Angeles', '{"tier": "silver", "city": "New York", "orders": 18}', NULL),
    ('demo-user-113', 'fr', 'Europe/Paris', '{"tier": "silver", "city": "Paris", "orders": 7}', NULL),
    ('demo-user-114', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 22}', NULL),
    ('demo-user-115', 'en', 'America/Los_Angeles', '{"tier": "free", "city": "New York", "orders": 40}', NULL),
    ('demo-user-116', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 14}', NULL),
    ('demo-user-117', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 24}', NULL),
    ('demo-user-118', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 33}', NULL),
    ('demo-user-119', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 36}', NULL),
    ('demo-user-120', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 12}', NULL),
    ('demo-user-121', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 7}', NULL),
    ('demo-user-122', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 22}', NULL),
    ('demo-user-123', 'en', 'America/Chicago', '{"tier": "silver", "city": "New York", "orders": 17}', NULL),
    ('demo-user-124', 'en', 'America/Los_Angeles', '{"tier": "gold", "city": "New York", "orders": 7}', NULL),
    ('demo-user-125', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 11}', NULL),
    ('demo-user-126', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 25}', NULL),
    ('demo-user-127', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 22}', NULL),
    ('demo-user-128', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 25}', NULL),
    ('demo-user-129', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 39}', NULL),
    ('demo-user-130', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 38}', NULL),
    ('demo-user-131', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 5}', NULL),
    ('demo-user-132', 'en', 'America/Los_Angeles', '{"tier": "silver", "city": "New York", "orders": 14}', NULL),
    ('demo-user-133', 'en-GB', 'Europe/London', '{"tier": "silver", "city": "London", "orders": 39}', NULL),
    ('demo-user-134', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 24}', NULL),
    ('demo-user-135', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 34}', NULL),
    ('demo-user-136', 'fr', 'Europe/Paris', '{"tier": "silver", "city": "Paris", "orders": 32}', NULL),
    ('demo-user-137', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 28}', NULL),
    ('demo-user-138', 'en', 'America/New_York', '{"tier": "silver", "city": "New York", "orders": 5}', NULL),
    ('demo-user-139', 'de', 'Europe/Berlin', '{"tier": "gold", "city": "Berlin", "orders": 13}', NULL),
    ('demo-user-140', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 38}', NULL),
    ('demo-user-141', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 15}', NULL),
    ('demo-user-142', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 1}', NULL),
    ('demo-user-143', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 1}', NULL),
    ('demo-user-144', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 24}', NULL),
    ('demo-user-145', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 13}', NULL),
    ('demo-user-146', 'en', 'America/Los_Angeles', '{"tier": "gold", "city": "New York", "orders": 14}', NULL),
    ('demo-user-147', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 34}', NULL),
    ('demo-user-148', 'en', 'America/New_York', '{"tier": "gold", "city": "New York", "orders": 5}', NULL),
    ('demo-user-149', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 24}', NULL),
    ('demo-user-150', 'en', 'America/New_York', '{"tier": "gold", "city": "New York", "orders": 11}', now() - interval '3 days'),
    ('demo-user-151', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 38}', NULL),
    ('demo-user-152', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 25}', NULL),
    ('demo-user-153', 'en', 'America/Los_Angeles', '{"tier": "gold", "city": "New York", "orders": 21}', NULL),
    ('demo-user-154', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 40}', NULL),
    ('demo-user-155', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 6}', NULL),
    ('demo-user-156', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 5}', NULL),
    ('demo-user-157', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 8}', NULL),
    ('demo-user-158', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 24}', NULL),
    ('demo-user-159', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 17}', NULL),
    ('demo-user-160', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 36}', NULL),
    ('demo-user-161', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 27}', NULL),
    ('demo-user-162', 'en', 'America/Los_Angeles', '{"tier": "free", "city": "New York", "orders": 27}', NULL),
    ('demo-user-163', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 40}', NULL),
    ('demo-user-164', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 3}', NULL),
    ('demo-user-165', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 19}', NULL),
    ('demo-user-166', 'fr', 'Europe/Paris', '{"tier": "gold", "city": "Paris", "orders": 11}', NULL),
    ('demo-user-167', 'en', 'America/New_York', '{"tier": "silver", "city": "New York", "orders": 5}', NULL),
    ('demo-user-168', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 13}', NULL),
    ('demo-user-169', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 36}', NULL),
    ('demo-user-170', 'ja', 'Asia/Tokyo', '{"tier": "silver", "city": "Tokyo", "orders": 1}', NULL),
    ('demo-user-171', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 12}', NULL),
    ('demo-user-172', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 24}', NULL),
    ('demo-user-173', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 19}', NULL),
    ('demo-user-174', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 6}', NULL),
    ('demo-user-175', 'es-MX', 'America/Mexico_City', '{"tier": "gold", "city": "CDMX", "orders": 36}', NULL),
    ('demo-user-176', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 10}', NULL),
    ('demo-user-177', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 21}', NULL),
    ('demo-user-178', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 28}', NULL),
    ('demo-user-179', 'ja', 'Asia/Tokyo', '{"tier": "silver", "city": "Tokyo", "orders": 0}', NULL),
    ('demo-user-180', 'ja', 'Asia/Tokyo', '{"tier": "gold", "city": "Tokyo", "orders": 10}', NULL),
    ('demo-user-181', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 4}', NULL),
    ('demo-user-182', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 36}', NULL),
    ('demo-user-183', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 25}', NULL),
    ('demo-user-184', 'de', 'Europe/Berlin', '{"tier": "gold", "city": "Berlin", "orders": 26}', NULL),
    ('demo-user-185', 'ja', 'Asia/Tokyo', '{"tier": "gold", "city": "Tokyo", "orders": 1}', NULL),
    ('demo-user-186', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 8}', NULL),
    ('demo-user-187', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 40}', NULL),
    ('demo-user-188', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 7}', NULL),
    ('demo-user-189', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 12}', NULL),
    ('demo-user-190', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 25}', NULL),
    ('demo-user-191', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 12}', NULL),
    ('demo-user-192', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 9}', NULL),
    ('demo-user-193', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 27}', NULL),
    ('demo-user-194', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 14}', NULL),
    ('demo-user-195', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 40}', NULL),
    ('demo-user-196', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 23}', NULL),
    ('demo-user-197', 'fr', 'Europe/Paris', '{"tier": "silver", "city": "Paris", "orders": 30}', NULL),
    ('demo-user-198', 'ja', 'Asia/Tokyo', '{"tier": "silver", "city": "Tokyo", "orders": 3}', NULL),
    ('demo-user-199', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 32}', NULL),
    ('demo-user-200', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 31}', now() - interval '3 days'),
    ('demo-user-201', 'ja', 'Asia/Tokyo', '{"tier": "silver", "city": "Tokyo", "orders": 34}', NULL),
    ('demo-user-202', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 29}', NULL),
    ('demo-user-203', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 28}', NULL),
    ('demo-user-204', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 4}', NULL),
    ('demo-user-205', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 31}', NULL),
    ('demo-user-206', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 10}', NULL),
    ('demo-user-207', 'ja', 'Asia/Tokyo', '{"tier": "gold", "city": "Tokyo", "orders": 33}', NULL),
    ('demo-user-208', 'en', 'America/Los_Angeles', '{"tier": "gold", "city": "New York", "orders": 13}', NULL),
    ('demo-user-209', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 32}', NULL),
    ('demo-user-210', 'en-GB', 'Europe/London', '{"tier": "silver", "city": "London", "orders": 5}', NULL),
    ('demo-user-211', 'en', 'America/Chicago', '{"tier": "silver", "city": "New York", "orders": 5}', NULL),
    ('demo-user-212', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 20}', NULL),
    ('demo-user-213', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 34}', NULL),
    ('demo-user-214', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 7}', NULL),
    ('demo-user-215', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 7}', NULL),
    ('demo-user-216', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 17}', NULL),
    ('demo-user-217', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 36}', NULL),
    ('demo-user-218', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 7}', NULL),
    ('demo-user-219', 'de', 'Europe/Berlin', '{"tier": "silver", "city": "Berlin", "orders": 22}', NULL),
    ('demo-user-220', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 9}', NULL),
    ('demo-user-221', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 27}', NULL),
    ('demo-user-222', 'en-GB', 'Europe/London', '{"tier": "silver", "city": "London", "orders": 40}', NULL),
    ('demo-user-223', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 10}', NULL),
    ('demo-user-224', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 27}', NULL),
    ('demo-user-225', 'de', 'Europe/Berlin', '{"tier": "silver", "city": "Berlin", "orders": 40}', NULL),
    ('demo-user-226', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 27}', NULL),
    ('demo-user-227', 'es-MX', 'America/Mexico_City', '{"tier": "gold", "city": "CDMX", "orders": 28}', NULL),
    ('demo-user-228', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 25}', NULL),
    ('demo-user-229', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 38}', NULL),
    ('demo-user-230', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 23}', NULL),
    ('demo-user-231', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 1}', NULL),
    ('demo-user-232', 'fr', 'Europe/Paris', '{"tier": "silver", "city": "Paris", "orders": 12}', NULL),
    ('demo-user-233', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 10}', NULL),
    ('demo-user-234', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 6}', NULL),
    ('demo-user-235', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 40}', NULL),
    ('demo-user-236', 'ja', 'Asia/Tokyo', '{"tier": "silver", "city": "Tokyo", "orders": 37}', NULL),
    ('demo-user-237', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 29}', NULL),
    ('demo-user-238', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 9}', NULL),
    ('demo-user-239', 'de', 'Europe/Berlin', '{"tier": "gold", "city": "Berlin", "orders": 39}', NULL),
    ('demo-user-240', 'en', 'America/New_York', '{"tier": "gold", "city": "New York", "orders": 32}', NULL),
    ('demo-user-241', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 3}', NULL),
    ('demo-user-242', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 38}', NULL),
    ('demo-user-243', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 26}', NULL),
    ('demo-user-244', 'de', 'Europe/Berlin', '{"tier": "gold", "city": "Berlin", "orders": 24}', NULL),
    ('demo-user-245', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 16}', NULL),
    ('demo-user-246', 'es-MX', 'America/Mexico_City', '{"tier": "silver", "city": "CDMX", "orders": 5}', NULL),
    ('demo-user-247', 'ja', 'Asia/Tokyo', '{"tier": "gold", "city": "Tokyo", "orders": 12}', NULL),
    ('demo-user-248', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 2}', NULL),
    ('demo-user-249', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 15}', NULL),
    ('demo-user-250', 'de', 'Europe/Berlin', '{"tier": "gold", "city": "Berlin", "orders": 18}', now() - interval '3 days'),
    ('demo-user-251', 'en', 'America/New_York', '{"tier": "gold", "city": "New York", "orders": 23}', NULL),
    ('demo-user-252', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 16}', NULL),
    ('demo-user-253', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 22}', NULL),
    ('demo-user-254', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 40}', NULL),
    ('demo-user-255', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 20}', NULL),
    ('demo-user-256', 'ja', 'Asia/Tokyo', '{"tier": "silver", "city": "Tokyo", "orders": 24}', NULL),
    ('demo-user-257', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 32}', NULL),
    ('demo-user-258', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 15}', NULL),
    ('demo-user-259', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 16}', NULL),
    ('demo-user-260', 'en', 'America/Los_Angeles', '{"tier": "free", "city": "New York", "orders": 9}', NULL),
    ('demo-user-261', 'de', 'Europe/Berlin', '{"tier": "free", "city": "Berlin", "orders": 17}', NULL),
    ('demo-user-262', 'en', 'America/Los_Angeles', '{"tier": "silver", "city": "New York", "orders": 22}', NULL),
    ('demo-user-263', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 8}', NULL),
    ('demo-user-264', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 14}', NULL),
    ('demo-user-265', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 29}', NULL),
    ('demo-user-266', 'en', 'America/Los_Angeles', '{"tier": "gold", "city": "New York", "orders": 37}', NULL),
    ('demo-user-267', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 2}', NULL),
    ('demo-user-268', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 15}', NULL),
    ('demo-user-269', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 18}', NULL),
    ('demo-user-270', 'en-GB', 'Europe/London', '{"tier": "silver", "city": "London", "orders": 3}', NULL),
    ('demo-user-271', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 2}', NULL),
    ('demo-user-272', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 13}', NULL),
    ('demo-user-273', 'en', 'America/Los_Angeles', '{"tier": "free", "city": "New York", "orders": 10}', NULL),
    ('demo-user-274', 'en-GB', 'Europe/London', '{"tier": "gold", "city": "London", "orders": 7}', NULL),
    ('demo-user-275', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 38}', NULL),
    ('demo-user-276', 'en-GB', 'Europe/London', '{"tier": "silver", "city": "London", "orders": 25}', NULL),
    ('demo-user-277', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 28}', NULL),
    ('demo-user-278', 'en', 'America/Los_Angeles', '{"tier": "free", "city": "New York", "orders": 27}', NULL),
    ('demo-user-279', 'ja', 'Asia/Tokyo', '{"tier": "free", "city": "Tokyo", "orders": 3}', NULL),
    ('demo-user-280', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 7}', NULL),
    ('demo-user-281', 'en-GB', 'Europe/London', '{"tier": "silver", "city": "London", "orders": 11}', NULL),
    ('demo-user-282', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 4}', NULL),
    ('demo-user-283', 'fr', 'Europe/Paris', '{"tier": "free", "city": "Paris", "orders": 12}', NULL),
    ('demo-user-284', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 30}', NULL),
    ('demo-user-285', 'en', 'America/Los_Angeles', '{"tier": "free", "city": "New York", "orders": 22}', NULL),
    ('demo-user-286', 'en', 'America/Chicago', '{"tier": "free", "city": "New York", "orders": 34}', NULL),
    ('demo-user-287', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 2}', NULL),
    ('demo-user-288', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 16}', NULL),
    ('demo-user-289', 'ja', 'Asia/Tokyo', '{"tier": "gold", "city": "Tokyo", "orders": 6}', NULL),
    ('demo-user-290', 'en', 'America/Los_Angeles', '{"tier": "gold", "city": "New York", "orders": 3}', NULL),
    ('demo-user-291', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 39}', NULL),
    ('demo-user-292', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 23}', NULL),
    ('demo-user-293', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "city": "Shanghai", "orders": 26}', NULL),
    ('demo-user-294', 'en', 'America/Chicago', '{"tier": "gold", "city": "New York", "orders": 32}', NULL),
    ('demo-user-295', 'de', 'Europe/Berlin', '{"tier": "gold", "city": "Berlin", "orders": 35}', NULL),
    ('demo-user-296', 'zh-Hans', 'Asia/Shanghai', '{"tier": "silver", "city": "Shanghai", "orders": 17}', NULL),
    ('demo-user-297', 'en', 'America/New_York', '{"tier": "free", "city": "New York", "orders": 9}', NULL),
    ('demo-user-298', 'en-GB', 'Europe/London', '{"tier": "free", "city": "London", "orders": 14}', NULL),
    ('demo-user-299', 'es-MX', 'America/Mexico_City', '{"tier": "free", "city": "CDMX", "orders": 9}', NULL),
    ('demo-user-300', 'zh-Hans', 'Asia/Shanghai', '{"tier": "gold", "city": "Shanghai", "orders": 8}', now() - interval '3 days');


-- A journey (docs/marketers.md, "Journeys: wait, listen and branch"): when the shop
-- reports an order delivered (POST /v1/conversions, event order_delivered), ask how it
-- went; a typed answer that says the box came damaged or late gets an apology with a
-- code of its own, another typed answer a thank-you, a "no thanks" nothing more; no
-- answer within two days gets one reminder, then the journey ends. A purchase ends it
-- anywhere (its goal). Its messages are campaigns of the journey; a member's step
-- decides when each goes out, so they have no send_at. They reach people who just
-- ordered, at any hour they answer: neither frequency-capped nor held to quiet hours.
INSERT INTO code_pools (name) VALUES ('sorry-10');
INSERT INTO pool_codes (pool, code)
SELECT 'sorry-10', 'SORRY-' || upper(substr(md5('sorry-10-' || n), 1, 6)) FROM generate_series(1, 400) n;

INSERT INTO journeys (name, apps, first_step, entry, entry_event, goal_event)
VALUES ('After the order', ARRAY['default'], 'ask', 'conversion', 'order_delivered', 'purchase');

INSERT INTO campaigns (name, kind, status, content, default_locale, category_id, quiet_hours, frequency_capped,
                       media_url, code_pool, sensitive, journey_id)
SELECT m.name, m.kind, 'scheduled', m.content::jsonb, 'en', m.category, false, false, m.media, m.pool, m.sensitive::jsonb, j.id
FROM journeys j, (VALUES
    ('After the order: ask', 'feedback', 'feedback.v1', NULL, NULL, NULL,
     '{"en": {"title": "Your order has arrived", "body": "How was it? Tell us in a few words."},
       "fr": {"title": "Votre commande est arrivée", "body": "Comment était-elle ? Dites-le-nous."},
       "de": {"title": "Ihre Bestellung ist da", "body": "Wie war sie? Sagen Sie es uns."},
       "es": {"title": "Tu pedido ha llegado", "body": "¿Qué tal? Cuéntanos."},
       "ja": {"title": "ご注文の品が届きました", "body": "いかがでしたか？"},
       "zh-Hans": {"title": "您的订单已送达", "body": "体验如何？说两句吧。"}}'),
    -- The code is in the text, not sealed: every device of the user gets it, with a key or not.
    ('After the order: sorry', 'poster', 'poster.v1', 'https://cdn.example.com/sorry.png', 'sorry-10', NULL,
     '{"en": {"title": "We are sorry", "body": "10% off your next order: {{ code }}"},
       "fr": {"title": "Toutes nos excuses", "body": "10 % sur votre prochaine commande : {{ code }}"},
       "de": {"title": "Das tut uns leid", "body": "10 % auf Ihre nächste Bestellung: {{ code }}"},
       "es": {"title": "Lo sentimos", "body": "10 % en tu próximo pedido: {{ code }}"},
       "ja": {"title": "申し訳ございません", "body": "次回のご注文が10%オフ：{{ code }}"},
       "zh-Hans": {"title": "非常抱歉", "body": "下次订单九折：{{ code }}"}}'),
    ('After the order: thanks', 'poster', 'poster.v1', 'https://cdn.example.com/thanks.png', NULL, NULL,
     '{"en": {"title": "Thank you!", "body": "Would you review it for others?"},
       "fr": {"title": "Merci !", "body": "Un avis pour les autres clients ?"},
       "de": {"title": "Danke!", "body": "Eine Bewertung für andere?"},
       "es": {"title": "¡Gracias!", "body": "¿Lo reseñas para otros?"},
       "ja": {"title": "ありがとうございます！", "body": "レビューをお願いできますか？"},
       "zh-Hans": {"title": "谢谢！", "body": "愿意写个评价吗？"}}'),
    ('After the order: reminder', 'feedback', 'feedback.v1', NULL, NULL, NULL,
     '{"en": {"title": "Still happy with your order?", "body": "One line helps us."},
       "fr": {"title": "Toujours satisfait de votre commande ?", "body": "Une ligne nous aide."},
       "de": {"title": "Noch zufrieden mit Ihrer Bestellung?", "body": "Eine Zeile hilft uns."},
       "es": {"title": "¿Sigues contento con tu pedido?", "body": "Una línea nos ayuda."},
       "ja": {"title": "ご注文にご満足いただけましたか？", "body": "一言お願いします。"},
       "zh-Hans": {"title": "对订单还满意吗？", "body": "一句话就好。"}}')
) AS m(name, kind, category, media, pool, sensitive, content)
WHERE j.name = 'After the order';

INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id, timeout, of_step)
SELECT j.id, 1, s.step, s.kind, c.id, s.timeout::interval, s.of_step
FROM journeys j CROSS JOIN (VALUES
    ('ask', 'send', 'After the order: ask', NULL, NULL),
    ('listen', 'wait_for', NULL, '2 days', 'ask'),
    ('sorry', 'send', 'After the order: sorry', NULL, NULL),
    ('thanks', 'send', 'After the order: thanks', NULL, NULL),
    ('remind', 'send', 'After the order: reminder', NULL, NULL)
) AS s(step, kind, message, timeout, of_step)
LEFT JOIN campaigns c ON c.name = s.message
WHERE j.name = 'After the order';

-- The edges out of each step; of a step's edges, the first (by position) that holds is taken.
INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step)
SELECT j.id, 1, e.from_step, e.position, e.kind, e.rule::jsonb, e.to_step
FROM journeys j CROSS JOIN (VALUES
    ('ask', 1, 'next', '{}', 'listen'),
    -- The words that say something went wrong, in each language the shop's users write.
    ('listen', 1, 'text', '{"any_words": {"en": ["damaged", "broken", "late", "slow"],
                                         "fr": ["abîmé", "cassé", "retard", "lent"],
                                         "de": ["beschädigt", "kaputt", "spät", "langsam"],
                                         "es": ["dañada", "dañado", "roto", "tarde", "lento"],
                                         "ja": ["壊れ", "遅"],
                                         "zh": ["破损", "坏", "慢"]}}', 'sorry'),
    ('listen', 2, 'action', '{"action": "comment"}', 'thanks'),
    ('listen', 3, 'reply', '{}', NULL),          -- "no thanks": out, nothing more
    ('listen', 4, 'timeout', '{}', 'remind'),    -- two days of silence: one reminder
    ('sorry', 1, 'next', '{}', NULL),
    ('thanks', 1, 'next', '{}', NULL),
    ('remind', 1, 'next', '{}', NULL)
) AS e(from_step, position, kind, rule, to_step)
WHERE j.name = 'After the order';

UPDATE journeys SET status = 'running' WHERE name = 'After the order';
