@testable import OATStreaming
import Testing

/// Crossfades (``CrossfadeMixer``) on plain sample arrays: no queue, no device.
@Suite struct EngineCrossfadeTests {
    static func add(_ mixer: inout CrossfadeMixer, _ samples: [Float]) {
        samples.withUnsafeBufferPointer { mixer.add($0, frames: samples.count / mixer.channels) }
    }

    static func takeAll(_ mixer: inout CrossfadeMixer) -> [Float] {
        mixer.takeOldest(frames: mixer.heldFrames) { Array($0.bindMemory(to: Float.self)) }
    }

    /// Equal power: incoming² + outgoing² = 1 at every frame, rising in, falling out.
    @Test func gainsAreEqualPower() {
        var lastIn: Float = -1
        for k in 0..<100 {
            let (gIn, gOut) = CrossfadeMixer.gains(k, of: 100)
            #expect(abs(gIn * gIn + gOut * gOut - 1) < 1e-5)
            #expect(gIn > lastIn)
            lastIn = gIn
        }
    }

    /// The held end of item A is mixed into the start of item B: a constant 1 fading out under a
    /// constant 0.5 fading in gives sin·0.5 + cos·1 at each frame; after the fade, B alone.
    @Test func tailMixesIntoTheNextItem() {
        var m = CrossfadeMixer(channels: 2)
        Self.add(&m, [Float](repeating: 1, count: 2 * 8))
        #expect(m.heldFrames == 8)
        m.handOver()
        #expect(m.heldFrames == 0)
        #expect(!m.isEmpty, "the tail waits to be mixed")
        Self.add(&m, [Float](repeating: 0.5, count: 2 * 12))
        let out = Self.takeAll(&m)
        #expect(out.count == 24)
        for k in 0..<8 {
            let (gIn, gOut) = CrossfadeMixer.gains(k, of: 8)
            #expect(abs(out[2 * k] - (0.5 * gIn + gOut)) < 1e-6, "frame \(k)")
            #expect(out[2 * k] == out[2 * k + 1], "both channels alike")
        }
        for k in 8..<12 { #expect(out[2 * k] == 0.5) }
        #expect(m.isEmpty)
    }

    /// An item shorter than the fade: the rest of the previous tail is faded out after it, and
    /// the end of the queue plays everything out (nothing lost, nothing repeated).
    @Test func shortItemAndFlushKeepEveryFrame() {
        var m = CrossfadeMixer(channels: 1)
        Self.add(&m, [Float](repeating: 1, count: 10))
        m.handOver()
        Self.add(&m, [Float](repeating: 0, count: 4))
        m.prepareFlush()
        let out = Self.takeAll(&m)
        #expect(out.count == 10, "4 mixed frames, then the 6 left of the tail faded out")
        for k in 0..<10 {
            #expect(abs(out[k] - CrossfadeMixer.gains(k, of: 10).outgoing) < 1e-6, "frame \(k)")
        }
        #expect(m.isEmpty)
    }

    /// A throw while enqueueing leaves the frames held (the interruption loses nothing).
    @Test func failedTakeKeepsTheFrames() {
        struct Failed: Error {}
        var m = CrossfadeMixer(channels: 2)
        Self.add(&m, [1, 2, 3, 4, 5, 6])
        #expect(throws: Failed.self) { try m.takeOldest(frames: 2) { _ in throw Failed() } }
        #expect(m.heldFrames == 3)
        let first = m.takeOldest(frames: 2) { Array($0.bindMemory(to: Float.self)) }
        #expect(first == [1, 2, 3, 4])
        #expect(m.heldFrames == 1)
        m.clear()
        #expect(m.isEmpty)
    }
}
