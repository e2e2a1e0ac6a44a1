import Foundation

/// What the analysts' HTML report shows, read from the analyst views only (so
/// a member of `herald_analyst` can make it).
public struct ReportData: Sendable {
    public struct Action: Sendable, Equatable {
        public var action: String
        public var title: String
        public var replies: Int64
        public var sharePct: Double

        public init(action: String, title: String, replies: Int64, sharePct: Double) {
            self.action = action
            self.title = title
            self.replies = replies
            self.sharePct = sharePct
        }
    }

    /// Replies that users gave in one minute (UTC).
    public struct Bucket: Sendable, Equatable {
        public var minute: Date
        public var replies: Int64

        public init(minute: Date, replies: Int64) {
            self.minute = minute
            self.replies = replies
        }
    }

    public struct Feedback: Sendable, Equatable {
        public var text: String
        public var locale: String
        public var occurredAt: Date

        public init(text: String, locale: String, occurredAt: Date) {
            self.text = text
            self.locale = locale
            self.occurredAt = occurredAt
        }
    }

    /// One A/B variant of a campaign, from `analyst.variant_comparison` and
    /// `analyst.variant_actions`.
    public struct Variant: Sendable, Equatable {
        public var name: String
        /// 1 for the baseline (the first by name).
        public var position: Int64
        /// How many variants the campaign has.
        public var variants: Int64
        public var sharePct: Int32
        public var targeted: Int64 = 0
        /// The share of the campaign's targeted devices it actually got.
        public var targetedPct: Double?
        public var sent: Int64 = 0
        public var replies: Int64 = 0
        public var respondingDevices: Int64 = 0
        public var opened: Int64 = 0
        public var dismissed: Int64 = 0
        public var typedAnswers: Int64 = 0
        public var responseRatePct: Double?
        public var baseline: String
        /// The two-proportion z statistic of its response rate against the baseline's.
        public var z: Double?
        /// Its two-sided p-value.
        public var pValue: Double?
        public var actions: [Action] = []

        public init(name: String, position: Int64, variants: Int64, sharePct: Int32, baseline: String) {
            self.name = name
            self.position = position
            self.variants = variants
            self.sharePct = sharePct
            self.baseline = baseline
        }

        /// The significance level each comparison is held to: 5%, split
        /// between the comparisons with the baseline (Bonferroni), so that
        /// with 3 or 4 variants one of them is not declared a winner by
        /// chance alone.
        public var alpha: Double { 0.05 / Double(max(variants - 1, 1)) }

        /// The comparison with the baseline in plain words, for a person.
        public var verdict: String {
            if position == 1 { return "baseline: the others are compared with it" }
            guard let p = pValue, let z else {
                return sent == 0 ? "nothing sent yet" : "no comparison yet: too few sends or answers on one side"
            }
            let pText = Self.format(p: p)
            if p < alpha {
                return "significant (\(pText)): \(name) answers \(z > 0 ? "more" : "less") than \(baseline)"
            }
            return "not significant yet (\(pText))"
        }

        /// `p = 0.31`, `p = 0.012`, `p < 0.001`.
        public static func format(p: Double) -> String {
            if p < 0.001 { return "p < 0.001" }
            return p >= 0.1 ? String(format: "p = %.2f", p) : String(format: "p = %.3f", p)
        }
    }

    /// One occurrence of a series, from `analyst.occurrences`.
    public struct Occurrence: Sendable, Equatable {
        public var number: Int
        public var campaignID: Int64
        public var status: String
        public var sendAt: Date
        public var targeted: Int64
        public var sent: Int64
        public var replies: Int64
        public var responseRatePct: Double?

        public init(number: Int, campaignID: Int64, status: String, sendAt: Date, targeted: Int64, sent: Int64,
                    replies: Int64, responseRatePct: Double?) {
            self.number = number
            self.campaignID = campaignID
            self.status = status
            self.sendAt = sendAt
            self.targeted = targeted
            self.sent = sent
            self.replies = replies
            self.responseRatePct = responseRatePct
        }
    }

    /// The campaign's effect on its conversion event, from `analyst.lift`.
    public struct Lift: Sendable, Equatable {
        public var variant: String?
        public var event: String
        public var treated: Int64
        public var treatedRatePct: Double
        public var heldOut: Int64
        public var heldOutRatePct: Double
        public var liftPts: Double
        public var lowPts: Double
        public var highPts: Double
        public var pValue: Double?
        public var verdict: String

        public init(variant: String?, event: String, treated: Int64, treatedRatePct: Double, heldOut: Int64,
                    heldOutRatePct: Double, liftPts: Double, lowPts: Double, highPts: Double, pValue: Double?,
                    verdict: String) {
            self.variant = variant
            self.event = event
            self.treated = treated
            self.treatedRatePct = treatedRatePct
            self.heldOut = heldOut
            self.heldOutRatePct = heldOutRatePct
            self.liftPts = liftPts
            self.lowPts = lowPts
            self.highPts = highPts
            self.pValue = pValue
            self.verdict = verdict
        }

        /// "purchase: 24.1% of 290 sent vs 7.0% of 71 held out: +17.1 points (95% CI 9.8 to 24.4)".
        public var text: String {
            String(format: "%@%@: %.1f%% of %lld treated vs %.1f%% of %lld held out: %+.2f points (95%% CI %.2f to %.2f)",
                   variant.map { "variant \($0), " } ?? "", event, treatedRatePct, treated, heldOutRatePct, heldOut,
                   liftPts, lowPts, highPts)
        }
    }

    /// A paced campaign's pace, from `analyst.pace`.
    public struct Pace: Sendable, Equatable {
        public var setPerMinute: Double
        public var achievedPerMinute: Double?
        public var busiestMinute: Int64?

        public init(setPerMinute: Double, achievedPerMinute: Double?, busiestMinute: Int64?) {
            self.setPerMinute = setPerMinute
            self.achievedPerMinute = achievedPerMinute
            self.busiestMinute = busiestMinute
        }

        /// "set 1200/min, achieved 962/min (busiest minute 1001)".
        public var text: String {
            var t = String(format: "pace set %.0f a minute", setPerMinute)
            if let a = achievedPerMinute { t += String(format: ", achieved %.0f a minute", a) }
            if let b = busiestMinute { t += " (busiest minute \(b))" }
            return t
        }
    }

    /// A Live Activity sale, from `analyst.live_activities` and `analyst.live_activity_steps`:
    /// one campaign with its steps under it. Its pushes send no receipt; what its devices
    /// confirmed through the activity endpoints is what arrived.
    public struct Sale: Sendable, Equatable {
        /// Activities the devices registered: each confirms the start (or the app started one).
        public var startedByPush: Int64 = 0
        public var startedByApp: Int64 = 0
        public var onChannel: Int64 = 0
        public var channels: Int64 = 0
        public var steps: [SaleStep] = []

        public init() {}

        public var activities: Int64 { startedByPush + startedByApp }
    }

    /// One step after a sale's start (an update, or the end).
    public struct SaleStep: Sendable, Equatable {
        public var step: Int
        /// The step's own row (its ledger).
        public var campaignID: Int64
        public var dueAt: Date
        public var status: String
        public var targeted: Int64 = 0
        public var sent: Int64 = 0
        public var expired: Int64 = 0
        public var skipped: Int64 = 0
        /// Activities showing this step or a later one (the device's own word).
        public var confirmed: Int64 = 0
        public var broadcastsSent: Int64 = 0
        public var broadcastsNotSent: Int64 = 0

        public init(step: Int, campaignID: Int64, dueAt: Date, status: String) {
            self.step = step
            self.campaignID = campaignID
            self.dueAt = dueAt
            self.status = status
        }

        /// "step 1 (due 2026-12-06 18:20 UTC) completed: sent 249 to activities, 1 broadcast; 240 activities confirmed it".
        public var text: String {
            var t = "step \(step) (due \(ReportPage.timestamp(dueAt)) UTC) \(status): sent \(sent) to activities"
            if broadcastsSent > 0 { t += ", \(broadcastsSent) broadcast\(broadcastsSent == 1 ? "" : "s") to channels" }
            if broadcastsNotSent > 0 { t += ", \(broadcastsNotSent) not broadcast" }
            if expired > 0 { t += ", \(expired) superseded before sending" }
            if skipped > 0 { t += ", \(skipped) skipped" }
            return t + "; \(confirmed) activities confirmed it"
        }
    }

    public struct Campaign: Sendable {
        public var id: Int64
        public var name: String
        public var kind: String
        public var status: String
        public var failureReason: String?
        public var sendAt: Date?
        public var targeted: Int64 = 0
        public var sent: Int64 = 0
        public var invalid: Int64 = 0
        public var failed: Int64 = 0
        public var expired: Int64 = 0
        public var skipped: Int64 = 0
        public var cancelled: Int64 = 0
        public var pending: Int64 = 0
        public var replies: Int64 = 0
        public var respondingDevices: Int64 = 0
        public var responseRatePct: Double?
        public var actions: [Action] = []
        public var timeline: [Bucket] = []
        /// The most recent typed answers, newest first, at most the loader's limit.
        public var feedback: [Feedback] = []
        /// How many typed answers there are in all.
        public var feedbackTotal: Int64 = 0
        /// Its A/B variants side by side (empty when it has none).
        public var variants: [Variant] = []
        /// A recurring or on-entry campaign (a series): how it is sent, and
        /// its occurrences, oldest first (`analyst.series`, `analyst.occurrences`).
        public var series: String?
        public var occurrences: [Occurrence] = []
        /// An occurrence: its series and number.
        public var occurrenceOf: (series: Int64, number: Int)?
        /// A paced campaign: its pace as set and as achieved.
        public var pace: Pace?
        /// Against its holdout (analyst.lift): the campaign as a whole
        /// (variant nil) first, then each variant.
        public var lift: [Lift] = []
        /// Confirmed on the device (a receipt or a reply, contract 8), and
        /// the seconds from sent to arrival (median, 90th percentile).
        public var delivered: Int64 = 0
        public var arrivalMedian: Double?
        public var arrivalP90: Double?
        /// A Live Activity sale: its activities and its steps (nil for any other campaign).
        public var sale: Sale?

        public init(id: Int64, name: String, kind: String, status: String) {
            self.id = id
            self.name = name
            self.kind = kind
            self.status = status
        }
    }

    /// An app of the deployment and its figures, from `analyst.apps`.
    public struct App: Sendable, Equatable {
        public var name: String
        public var displayName: String
        public var topic: String
        public var devices: Int64
        public var sent: Int64
        public var failed: Int64
        public var delivered: Int64
        public var replied: Int64

        public var text: String {
            "app \(name) (\(displayName), \(topic)): \(devices) devices; sent \(sent), failed \(failed), delivered \(delivered), replied to \(replied)"
        }
    }

    /// A journey as analysts see it (analyst.journey_goal, journey_steps, journey_flow).
    public struct Journey: Sendable, Equatable {
        public struct Step: Sendable, Equatable {
            public var version: Int32
            public var step: String
            public var active: Int64
            public var waiting: Int64
            public var done: Int64
            public var goal: Int64
            public var exited: Int64
        }

        public struct Edge: Sendable, Equatable {
            public var version: Int32
            public var from: String
            /// Its position among its step's edges; -1 for the journey-wide goal or exit.
            public var position: Int32
            public var kind: String
            /// Empty: out of the journey.
            public var to: String
            public var members: Int64

            /// Where it leads, as the report writes it.
            public var target: String { to.isEmpty ? "out" : to }
        }

        public var id: Int64
        public var name: String
        public var goalEvent: String?
        public var entered: Int64
        public var reachedGoal: Int64
        public var heldOut: Int64
        public var heldOutConverted: Int64
        public var steps: [Step] = []
        public var flow: [Edge] = []

        public var goalRatePct: Double? { entered > 0 && goalEvent != nil ? 100 * Double(reachedGoal) / Double(entered) : nil }
        public var heldOutRatePct: Double? { heldOut > 0 ? 100 * Double(heldOutConverted) / Double(heldOut) : nil }

        /// The journey's summary line: entrants, the goal and its rate, the holdout's.
        public var text: String {
            var s = "journey \(id) \"\(name)\": \(entered) entered"
            if let event = goalEvent, let rate = goalRatePct {
                s += String(format: ", %d reached the goal (%@, %.1f%%)", reachedGoal, event, rate)
            }
            if let rate = heldOutRatePct {
                s += String(format: "; %d held out, %d of them converted anyway (%.1f%%)", heldOut, heldOutConverted, rate)
            }
            return s
        }
    }

    public var generatedAt: Date
    public var campaigns: [Campaign]
    /// Every journey, in the whole report (not in one campaign's).
    public var journeys: [Journey] = []
    /// Every app, when the deployment serves more than one (else empty).
    public var apps: [App] = []

    public init(generatedAt: Date, campaigns: [Campaign]) {
        self.generatedAt = generatedAt
        self.campaigns = campaigns
    }
}
