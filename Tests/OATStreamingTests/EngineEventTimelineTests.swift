import OATCore
import OATNetwork
@testable import OATStreaming
import Testing

/// Title and event timing (``EventTimeline``) without a thread or a device: frame counts go in,
/// the marks that the device has played come out.
@Suite struct EngineEventTimelineTests {
    static let format = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 32, isFloat: true)

    static func title(_ timeline: EventTimeline.Mark) -> String? {
        if case .metadata(let m, _, _) = timeline { return m.title }
        return nil
    }

    /// A title decoded ahead of playback is reported only once the device has played its frame.
    @Test func titleIsDueWhenItsFramePlays() {
        var t = EventTimeline()
        t.add(.itemStarted(0, "a", Self.format), at: 0)
        t.add(.segment(0, 0), at: 0)
        t.addMetadata(StreamMetadata(title: "Second", audioByteOffset: 0), index: 0, seconds: 2, at: 88_200, spacing: 11_025)
        let first = t.takeDue(played: 0)
        #expect(first.count == 2)
        #expect(t.takeDue(played: 88_199).isEmpty, "due one frame early")
        let due = t.takeDue(played: 88_200)
        #expect(due.count == 1)
        #expect(due.first.flatMap { Self.title($0.kind) } == "Second")
        #expect(t.marks.isEmpty)
    }

    /// Titles less than the spacing apart: the newer replaces the one not yet played.
    @Test func titlesCloserThanTheSpacingCoalesce() {
        var t = EventTimeline()
        t.addMetadata(StreamMetadata(title: "A", audioByteOffset: 0), index: 0, seconds: 1, at: 44_100, spacing: 11_025)
        t.addMetadata(StreamMetadata(title: "B", audioByteOffset: 0), index: 0, seconds: 1.1, at: 48_510, spacing: 11_025)
        #expect(t.marks.count == 1)
        #expect(t.marks.first.flatMap { Self.title($0.kind) } == "B")
        #expect(t.marks.first?.frame == 48_510)
        // Far enough apart: both stay. Another item's title never replaces this one's.
        t.addMetadata(StreamMetadata(title: "C", audioByteOffset: 0), index: 0, seconds: 2, at: 88_200, spacing: 11_025)
        t.addMetadata(StreamMetadata(title: "D", audioByteOffset: 0), index: 1, seconds: 0, at: 88_300, spacing: 11_025)
        #expect(t.marks.compactMap { Self.title($0.kind) } == ["B", "C", "D"])
    }

    /// The position follows the segment playing: a segment mark (an item start, a seek) takes
    /// effect when its frame plays, not when it was added.
    @Test func positionFollowsTheSegmentPlaying() {
        var t = EventTimeline()
        t.add(.segment(0, 0), at: 0)
        _ = t.takeDue(played: 0)
        #expect(t.position(played: 44_100, rate: 44100) == 1)
        // The next item starts at frame 132_300 (3 s), at its own second 0.
        t.add(.segment(1, 0), at: 132_300)
        _ = t.takeDue(played: 100_000)
        #expect(t.segment.index == 0)
        #expect(abs(t.position(played: 100_000, rate: 44100) - 100_000.0 / 44100) < 1e-9)
        _ = t.takeDue(played: 176_400)
        #expect(t.segment.index == 1)
        #expect(t.position(played: 176_400, rate: 44100) == 1)
        // A seek: the queue restarts at frame 0 at second 30 of item 1.
        t.reset()
        t.restart(index: 1, seconds: 30)
        #expect(t.playedHighWater == 0)
        #expect(t.position(played: 22_050, rate: 44100) == 30.5)
    }

    /// The queue's count drops to 0 when a drained queue stops: the high-water mark keeps the
    /// position at the end.
    @Test func highWaterMarkSurvivesTheQueueStopping() {
        var t = EventTimeline()
        #expect(t.observe(played: 1000) == 1000)
        #expect(t.observe(played: 0) == 1000)
        t.reset()
        #expect(t.observe(played: 10) == 10)
    }

    /// How long the decoder may sleep: until the next mark is due (at least 2 ms, at most the cap).
    @Test func idleWaitEndsWhenTheNextMarkIsDue() {
        var t = EventTimeline()
        #expect(t.idleMilliseconds(played: 0, rate: 48000, cap: 100) == 100)
        t.add(.itemFinished(0, "a"), at: 48000 + 2400)
        #expect(t.idleMilliseconds(played: 48000, rate: 48000, cap: 100) == 51)
        #expect(t.idleMilliseconds(played: 48000 + 2400, rate: 48000, cap: 100) == 2)
        #expect(t.idleMilliseconds(played: 0, rate: 48000, cap: 100) == 100)
    }
}
