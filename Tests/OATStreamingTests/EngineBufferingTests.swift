@testable import OATStreaming
import Testing

/// Start, underrun and rebuffering decisions (``BufferingController``) without a queue: decoded
/// seconds and queue counts go in, decisions come out.
@Suite struct EngineBufferingTests {
    static func policy() -> BufferingPolicy {
        var p = BufferingPolicy()
        p.startSeconds = 0.5
        p.rebufferSeconds = 1
        p.growthAfterUnderrun = 2
        p.maximumTargetSeconds = 3
        return p
    }

    /// Playback starts on decoded audio reaching the target, on a full queue, or at the end of
    /// the input with anything decoded; received bytes alone do not start it.
    @Test func startsOnDecodedAudio() {
        let b = BufferingController(policy: Self.policy())
        #expect(!b.readyToStart(decoded: 0.49, full: false, inputDone: false))
        #expect(b.readyToStart(decoded: 0.5, full: false, inputDone: false))
        #expect(b.readyToStart(decoded: 0.1, full: true, inputDone: false))
        #expect(b.readyToStart(decoded: 0.01, full: false, inputDone: true))
        #expect(!b.readyToStart(decoded: 0, full: false, inputDone: true))
        #expect(b.progress(buffered: 0.25) == 0.5)
        #expect(b.progress(buffered: 9) == 1)
    }

    /// An underrun mid-stream pauses to rebuffer and doubles both targets up to the maximum;
    /// the same count is not counted twice; an underrun at the end of the input or with audio
    /// still queued is not one.
    @Test func underrunRebuffersWithGrowingTargets() {
        var b = BufferingController(policy: Self.policy())
        b.phase = .playing
        do { let r = b.underrun(count: 1, paused: false, inputDone: false, aheadFrames: 0, rate: 44100); #expect(r) }
        #expect(b.phase == .rebuffering)
        #expect(b.underruns == 1)
        #expect(b.target == 2)
        #expect(b.readyToStart(decoded: 1.9, full: false, inputDone: false) == false)
        #expect(b.readyToStart(decoded: 2, full: false, inputDone: false))
        b.phase = .playing
        do { let r = b.underrun(count: 1, paused: false, inputDone: false, aheadFrames: 0, rate: 44100); #expect(!r, "already counted") }
        do { let r = b.underrun(count: 2, paused: false, inputDone: false, aheadFrames: 4410, rate: 44100); #expect(!r, "0.1 s still queued") }
        do { let r = b.underrun(count: 3, paused: false, inputDone: true, aheadFrames: 0, rate: 44100); #expect(!r, "the end of the input") }
        do { let r = b.underrun(count: 4, paused: true, inputDone: false, aheadFrames: 0, rate: 44100); #expect(!r, "paused") }
        do { let r = b.underrun(count: 5, paused: false, inputDone: false, aheadFrames: 0, rate: 44100); #expect(r) }
        #expect(b.target == 3, "capped at the maximum")
        b.phase = .starting
        #expect(b.target == 2, "the start target grew too (0.5 → 1 → 2)")
        #expect(b.underruns == 2)
    }

    /// Once every queue buffer is in use (the play ring holds less than the grown targets), the
    /// received bytes not decoded yet count toward the target; when they cannot be estimated
    /// or cannot grow (`undecoded` nil), a full queue starts as before.
    @Test func aFullQueueCountsReceivedBytesTowardTheTarget() {
        var b = BufferingController(policy: Self.policy())
        b.phase = .playing
        do { let r = b.underrun(count: 1, paused: false, inputDone: false, aheadFrames: 0, rate: 44100); #expect(r) }
        #expect(b.target == 2)
        #expect(!b.readyToStart(decoded: 1.2, full: true, inputDone: false, undecoded: 0.5), "1.7 s of 2")
        #expect(b.readyToStart(decoded: 1.2, full: true, inputDone: false, undecoded: 0.8))
        #expect(!b.readyToStart(decoded: 1.2, full: false, inputDone: false, undecoded: 5), "not full: the decoder is still filling the queue")
        #expect(b.readyToStart(decoded: 1.2, full: true, inputDone: false, undecoded: nil))
        #expect(b.readyToStart(decoded: 2, full: false, inputDone: false, undecoded: 0))
    }

    /// A silent source fails the item past the stall timeout only while buffering; while playing
    /// the output's own underrun handling covers it.
    @Test func stallCountsOnlyWhileBuffering() {
        var b = BufferingController(policy: Self.policy())
        #expect(!b.stalled(queueStarted: false, secondsSinceActivity: 15, timeout: 15))
        #expect(b.stalled(queueStarted: false, secondsSinceActivity: 15.1, timeout: 15))
        b.phase = .playing
        #expect(!b.stalled(queueStarted: true, secondsSinceActivity: 100, timeout: 15))
        b.phase = .rebuffering
        #expect(b.stalled(queueStarted: true, secondsSinceActivity: 16, timeout: 15))
    }

    /// The start waits for the play ring: audio enqueued but not yet copied by the queue's
    /// thread does not count; once every buffer is copied, or the ring holds the target (at
    /// most 0.5 s of it), it does.
    @Test func theStartWaitsForThePlayRing() {
        // 0.23 s enqueued, 1,004 frames in the ring, buffers still waiting: not yet.
        #expect(!BufferingController.ringCovers(1004.0 / 44100, decoded: 0.23, target: 0.15, pendingBuffers: 4))
        #expect(!BufferingController.ringCovers(0, decoded: 0.02, target: 0.15, pendingBuffers: 1))
        // Everything copied, or the target in the ring.
        #expect(BufferingController.ringCovers(0.23, decoded: 0.23, target: 0.15, pendingBuffers: 0))
        #expect(BufferingController.ringCovers(0.16, decoded: 0.23, target: 0.15, pendingBuffers: 3))
        // A grown target beyond the ring: half a second in the ring is enough.
        #expect(BufferingController.ringCovers(0.5, decoded: 1.2, target: 2, pendingBuffers: 10))
        #expect(!BufferingController.ringCovers(0.3, decoded: 1.2, target: 2, pendingBuffers: 10))
    }
}
