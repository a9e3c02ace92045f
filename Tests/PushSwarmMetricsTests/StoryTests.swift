import Foundation
import Testing
@testable import PushSwarmMetrics

/// The sentences that end the terminal report and open report.html, computed from the ticks.
@Suite struct StoryTests {
    /// Ten minutes of one request a second, and a campaign at 5:00 that sets off a storm: for
    /// twenty seconds 30 new requests a second of which 20 are answered 429 and retried a second
    /// later (the retries answered 429 again until 5:12), then the backlog drains by 5:24.
    static func stormy() -> Summary {
        var metrics = RunMetrics()
        metrics.timeline = Timeline(intervalMicroseconds: 10_000_000, tickMicroseconds: 1_000_000)
        func send(_ count: Int, retry: Bool, status: Int, at second: Int) {
            for index in 0..<count {
                let at = Int64(second) * 1_000_000 + Int64(index) * 1_000
                metrics.recordSent(operation: "p.events", retryNumber: retry ? 1 : 0, at: at)
                metrics.recordResponse(operation: "p.events", status: status, latencyMicroseconds: 40_000, at: at + 40_000)
            }
        }
        for second in 0..<600 where second < 300 || second >= 340 { send(1, retry: false, status: 200, at: second) }
        metrics.mark("campaign flash", at: 300_000_000)
        for second in 300..<320 {
            send(10, retry: false, status: 200, at: second)
            send(20, retry: false, status: 429, at: second)
            send(20, retry: true, status: second < 312 ? 429 : 200, at: second)
        }
        // The backlog: retries only, all accepted, until 5:23.
        for second in 320..<324 { send(5, retry: true, status: 200, at: second) }
        metrics.recordBackoff(microseconds: 1_000_000, retryNumber: 1)
        metrics.recordDrop(reason: "http429RetriesExhausted", count: 7)
        metrics.recordDrop(reason: "queueFull", count: 2)
        metrics.timeline.fit(to: 60)
        return Summary(
            scenario: "storm", seed: 1, clock: "simulated", devices: 100, simulatedSeconds: 600, wallSeconds: 0.1,
            runID: "storm-1", version: "test", metrics: metrics, ledger: nil, lost: 0, pendingAtEnd: 0
        )
    }

    @Test func theStormIsFoundFromItsFirst429UntilTheBacklogDrained() throws {
        let story = Story(Self.stormy())
        let storm = try #require(story.storm)
        #expect(storm.firstRateLimitedTick == 300 && storm.lastRateLimitedTick == 319)
        #expect(storm.lastTick == 323, "the last retry drains the backlog")
        #expect(storm.rateLimited == 20 * 20 + 12 * 20)
        #expect(storm.retries == 20 * 20 + 4 * 5)
        // Sent in its ticks: 50 a second for 20 s and 5 a second for 4 s; 420 of them retries.
        #expect(storm.sent == 20 * 50 + 4 * 5)
        #expect(abs(storm.attemptsPerRequest - 1_020.0 / 600.0) < 1e-9)
        let peak = try #require(story.peak)
        // The minute from 5:00: the storm's 1,020 and twenty of the steady one a second from 5:40.
        #expect(peak.firstTick == 300 && peak.sent == 1_040)
        #expect(peak.rateLimited == 640)
    }

    @Test func theSentencesSayWhenWhatSetItOffHowBadAndHowLongToDrain() {
        let sentences = Story(Self.stormy()).sentences
        #expect(sentences.count == 4, "\(sentences)")
        #expect(sentences[0].contains("The busiest minute began at 5:00, when campaign flash launched (5:00): 1,040 requests, 17.3 per second"), "\(sentences[0])")
        #expect(sentences[0].contains("62 % of its answers were 429"), "\(sentences[0])")
        #expect(sentences[1].contains("A storm of 429s began at 5:00, within 1 s of campaign flash's launch: 640 requests were refused and 420 retries sent, 1.70 attempts per request"), "\(sentences[1])")
        #expect(sentences[2].contains("The backlog drained 24 s after the first 429, at 5:24 (last 429 at 5:19, last retry at 5:23)"), "\(sentences[2])")
        #expect(sentences[3] == "9 requests were dropped by the clients: 7 after their retries ran out on 429s (http429RetriesExhausted); 2 because the device's offline queue was full (queueFull).")
        let terminal = TerminalReport.render(Self.stormy(), reportPath: nil)
        #expect(terminal.contains("What happened\n  The busiest minute"))
    }

    @Test func aQuietRunSaysNothingWasRefusedOrDropped() {
        let sentences = Story(ReportDataTests.summary()).sentences
        #expect(sentences.first == "In its 1 min the run sent 2,000 requests, 33.3 per second.", "a run of a minute has no busiest minute: \(sentences)")
        #expect(sentences.contains("No request was answered 429; 200 retries followed other failures (1.11 attempts per request)."), "\(sentences)")
        #expect(sentences.contains("No request was dropped."))
        #expect(Story(ReportDataTests.summary()).storm == nil)
    }

    /// A run's quiet end has no ticks recorded: a 25 s wall run that sent one request at 0:02 is
    /// still 25 s long (it once said "The busiest 20 s began at 0:00: 1 requests").
    @Test func aShortRunIsToldWholeAndOneRequestIsOne() {
        var metrics = RunMetrics()
        metrics.timeline = Timeline(intervalMicroseconds: 1_000_000, tickMicroseconds: 1_000_000)
        metrics.recordSent(operation: "p.events", retryNumber: 0, at: 2_000_000)
        metrics.recordResponse(operation: "p.events", status: 200, latencyMicroseconds: 30_000, at: 2_030_000)
        let summary = Summary(
            scenario: "short", seed: 1, clock: "wall", devices: 10, simulatedSeconds: 25, wallSeconds: 25,
            runID: "short-1", version: "test", metrics: metrics, ledger: nil, lost: 0, pendingAtEnd: 0
        )
        let sentences = Story(summary).sentences
        #expect(sentences.first == "In its 25 s the run sent 1 request, 0.04 per second.", "\(sentences)")
        #expect(sentences.contains("No request was answered 429 and none was retried."), "\(sentences)")
    }

    /// report.html opens with the story, marks the campaign on every chart over time and zooms
    /// on the storm, second by second, from a little before its first 429.
    @Test func theHTMLReportTellsTheStoryAndZoomsOnTheStorm() throws {
        let html = HTMLReport.render(Self.stormy())
        #expect(html.contains("<h2>What happened</h2>") && html.contains("<li>A storm of 429s began at 5:00"))
        for id in HTMLReport.chartIDs {
            let chart = html.components(separatedBy: "id=\"\(id)\"")[1].components(separatedBy: "</svg>")[0]
            #expect(chart.contains("class=\"mark\"") && chart.contains(">campaign flash</text>"), "\(id) marks the launch")
        }
        let storm = try #require(html.components(separatedBy: "id=\"chart-storm\"").dropFirst().first?.components(separatedBy: "</svg>").first)
        // Ten seconds before 5:00 to ten after 5:23: 44 one-second points on each line.
        let points = storm.components(separatedBy: "points=\"")[1].components(separatedBy: "\"")[0]
        #expect(points.split(separator: " ").count == 44)
        #expect(storm.contains(">4:50<") && storm.contains(">5:30<"), "labels on the run's timeline, not from zero")
        #expect(!HTMLReport.render(ReportDataTests.summary()).contains("chart-storm"), "no storm, no zoom")
    }

    /// A mark near the chart's right edge names itself leftwards of its line, so the edge does not
    /// cut its name (a campaign at 5:00 of a 5:40 run once read "campaign fla").
    @Test func aLateMarkIsNamedLeftwardsOfItsLine() throws {
        var summary = Self.stormy()
        summary.metrics.mark("late push", at: 580_000_000)
        let html = HTMLReport.render(summary)
        let chart = try #require(html.components(separatedBy: "id=\"chart-throughput\"").dropFirst().first?.components(separatedBy: "</svg>").first)
        func text(naming name: String) -> String? {
            chart.components(separatedBy: "<text ").first { $0.contains(">\(name)</text>") }
        }
        let late = try #require(text(naming: "late push"))
        let early = try #require(text(naming: "campaign flash"))
        #expect(late.contains("text-anchor=\"end\""), "\(late)")
        #expect(!early.contains("text-anchor"), "a mark in the middle still reads rightwards: \(early)")
    }

    /// summary.json's `story` carries the figures, and a threshold can judge the drain.
    @Test func theStoryIsInSummaryJSONAndAThresholdJudgesTheDrain() throws {
        let summary = Self.stormy()
        let story = try #require(summary.json["story"])
        #expect(story["storm"]?["startSeconds"] == .number(300) && story["storm"]?["drainedSeconds"] == .number(24))
        #expect(story["storm"]?["rateLimited"] == .number(640) && story["peakMinute"]?["sent"] == .number(1_040))
        #expect(story["sentences"]?.arrayValue?.count == 4)
        let drained = try Threshold(parsing: "storm.drained < 30s")
        #expect(drained.measure(summary) == 24_000 && drained.holds(summary))
        #expect(try !Threshold(parsing: "storm.drained <= 20s").holds(summary))
        #expect(drained.format(drained.measure(summary)) == "24.0 s")
        #expect(drained.measure(ReportDataTests.summary()) == 0, "no storm drains at once")
        #expect(ReportDataTests.summary().json["story"]?["storm"] == .null)
        // The same storm in a run that ends at 5:20, with the retries still going: not drained.
        var cut = summary
        cut.simulatedSeconds = 321
        cut.pendingAtEnd = 12
        let told = Story(cut)
        #expect(told.storm?.drained == false)
        #expect(told.sentences[2] == "The backlog had not drained when the run ended at 5:21: 429s or retries went on into its last second, and 12 requests were still waiting in devices.", "\(told.sentences)")
        #expect(cut.json["story"]?["storm"]?["drainedSeconds"] == .null && cut.json["story"]?["storm"]?["drained"] == .bool(false))
        #expect(!drained.holds(cut) && drained.format(drained.measure(cut)) == "not drained by the run's end")
    }

    /// Two storms an hour apart are two storms; the one with more 429s is told. Waves of retries
    /// seconds apart are one storm.
    @Test func stormsApartByMoreThanTheLongestBackOffAreToldApart() throws {
        var metrics = RunMetrics()
        metrics.timeline = Timeline(intervalMicroseconds: 60_000_000, tickMicroseconds: 1_000_000)
        func refuse(_ count: Int, at second: Int, retry: Bool = false) {
            for _ in 0..<count {
                metrics.recordSent(operation: "p.events", retryNumber: retry ? 1 : 0, at: Int64(second) * 1_000_000)
                metrics.recordResponse(operation: "p.events", status: retry ? 200 : 429, latencyMicroseconds: 1_000, at: Int64(second) * 1_000_000)
            }
        }
        for second in 100...102 { refuse(5, at: second) }
        for second in 3_700...3_710 { refuse(10, at: second) }
        refuse(3, at: 3_730, retry: true)
        metrics.recordBackoff(microseconds: 20_000_000, retryNumber: 1)
        let summary = Summary(
            scenario: "two", seed: 1, clock: "simulated", devices: 10, simulatedSeconds: 7_200, wallSeconds: 0.1,
            runID: "two-1", version: "test", metrics: metrics, ledger: nil, lost: 0, pendingAtEnd: 0
        )
        let storm = try #require(Story(summary).storm)
        #expect(storm.firstRateLimitedTick == 3_700 && storm.rateLimited == 110)
        #expect(storm.lastTick == 3_730, "a retry 20 s later belongs to the same storm")
        #expect(Story(summary).sentences[1].contains("began at 1:01:40"), "\(Story(summary).sentences)")
    }

    /// Ticks and marks survive metrics.json, and add up across shards.
    @Test func ticksAndMarksReadBackAndMerge() throws {
        let summary = Self.stormy()
        let read = try SummaryArchive.read(SummaryArchive.text(of: summary))
        #expect(read.metrics.timeline.ticks == summary.metrics.timeline.ticks)
        #expect(read.metrics.marks == [RunMetrics.Mark(name: "campaign flash", microseconds: 300_000_000)])
        #expect(Story(read) == Story(summary))
        var merged = summary.metrics
        merged.merge(read.metrics)
        #expect(merged.timeline.ticks[300].rateLimited == 80 && merged.timeline.ticks[300].sent == 100)
        var damaged = SummaryArchive.text(of: summary)
        damaged = damaged.replacingOccurrences(of: "\"ticks\":[[0,", with: "\"ticks\":[[999999999,")
        do {
            _ = try SummaryArchive.read(damaged)
            Issue.record("a tick past the limit was read")
        } catch {
            #expect(error.path == "$.metrics.timeline.ticks[0][0]", "\(error)")
        }
    }

    /// A wall run's taps after a campaign are cold starts, each a new connection: the story names
    /// the 10 s with the most new connections, from its first to its last, the campaign before it,
    /// its peak second against the run's average, and how many closed with their app. Ticks keep
    /// the count through metrics.json; a tick row of six (before `opened`) reads as none.
    @Test func theStoryNamesTheWaveOfNewConnectionsAfterACampaign() throws {
        var metrics = RunMetrics()
        metrics.timeline = Timeline(intervalMicroseconds: 1_000_000, tickMicroseconds: 1_000_000)
        // Two a second for a minute, and 100, 300, 50 in the three seconds from 0:32.
        for second in 0..<60 {
            let extra = [32: 100, 33: 300, 34: 50][second] ?? 0
            for index in 0..<(2 + extra) { metrics.recordConnectionOpened(at: Int64(second) * 1_000_000 + Int64(index)) }
        }
        metrics.mark("campaign promo", at: 30_000_000)
        metrics.increment(CounterKey.connectionsClosed("background"), by: 40)
        metrics.increment(CounterKey.connectionsClosed("processDied"), by: 10)
        metrics.increment(CounterKey("connections.closed.idle"), by: 5)
        let summary = Summary(
            scenario: "wave", seed: 1, clock: "wall", devices: 500, simulatedSeconds: 60, wallSeconds: 60,
            runID: "wave-1", version: "test", metrics: metrics, ledger: nil, lost: 0, pendingAtEnd: 0
        )
        let story = Story(summary)
        let wave = try #require(story.connectionWave)
        #expect(wave.opened == 450 + 20 && wave.ticks == 10 && wave.peakTick == 302, "\(wave)")
        let sentence = try #require(story.sentences.first { $0.hasPrefix("The biggest wave of new connections") }, "\(story.sentences)")
        #expect(sentence.contains("470 in 10 s from 0:32, 2 s after campaign promo launched"), "\(sentence)")
        #expect(sentence.contains(", up to 302 a second (the run's average: 9.50)"), "\(sentence)")
        #expect(sentence.hasSuffix("over the run 50 closed with their app (40 suspended in the background, 10 with the process)."), "\(sentence)")
        #expect(TerminalReport.render(summary, reportPath: nil).contains("Connections 570 opened · 55 closed (background 40, idle 5, processDied 10) · 515 open at the end"))
        var tls = summary
        tls.metrics.increment(.connectionsHandshakesFull, by: 400)
        tls.metrics.increment(.connectionsHandshakesResumed, by: 170)
        #expect(TerminalReport.render(tls, reportPath: nil).contains("Connections 570 opened (TLS handshakes: 400 full, 170 resumed) · 55 closed"))

        let text = SummaryArchive.text(of: summary)
        let read = try SummaryArchive.read(text)
        #expect(read.metrics.timeline.ticks == summary.metrics.timeline.ticks && Story(read) == story)
        // Archives from before `closed` (rows of seven) and `opened` (six) read, with none of them.
        let seven = try SummaryArchive.read(text.replacingOccurrences(of: #",(\d+)\]"#, with: "]", options: .regularExpression))
        #expect(seven.metrics.timeline.ticks.allSatisfy { $0.closed == 0 } && seven.metrics.timeline.ticks.map(\.opened) == summary.metrics.timeline.ticks.map(\.opened))
        let older = text.replacingOccurrences(of: #",(\d+),(\d+)\]"#, with: "]", options: .regularExpression)
        let old = try SummaryArchive.read(older)
        #expect(old.metrics.timeline.ticks.allSatisfy { $0.opened == 0 } && old.metrics.timeline.ticks.contains { $0.ok == 0 })
    }
}
