@testable import Runner
import Testing

@Suite("Progress lines")
struct ProgressTests {
    @Test func aLineSaysHowFarHowFastAndHowLong() {
        #expect(CampaignProgress.text(campaign: 3, done: 1200, total: 20000, elapsed: 2)
                == "campaign 3: 1200 of 20000 done (6%), 600/s, about 31 s left")
        #expect(CampaignProgress.text(campaign: 3, done: 20000, total: 20000, elapsed: 10)
                == "campaign 3: 20000 of 20000 done (100%), 2000/s")
        // A campaign continued from an earlier run: no total known here.
        #expect(CampaignProgress.text(campaign: 4, done: 500, total: nil, elapsed: 1) == "campaign 4: 500 done, 500/s")
        #expect(CampaignProgress.text(campaign: 5, done: 0, total: 10, elapsed: 0) == "campaign 5: 0 of 10 done (0%)")
    }
}
