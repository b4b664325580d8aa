import OATCore
@testable import OATStreaming
import Testing

/// The output feeder's parts that need no queue, thread or device: the buffer pool's hand-over
/// between the queue's thread and the decoder, and the queue's format plan.
@Suite struct EngineOutputFeederTests {
    final class Buffer: Sendable {
        let id: Int
        init(_ id: Int) { self.id = id }
    }

    /// A free buffer is taken without waiting; the last one returned is taken first.
    @Test func takesFreeBufferWithoutWaiting() throws {
        let pool = BufferPool<Buffer>()
        pool.put(Buffer(1))
        pool.put(Buffer(2))
        var waits = 0
        let b = pool.take { waits += 1 }
        #expect(b.id == 2)
        #expect(waits == 0)
        #expect(pool.count == 1)
    }

    /// With none free the taker waits until one comes back; a buffer returned while it waits
    /// calls the wake-up, one returned while nobody waits does not.
    @Test func waitsForReturnedBufferAndWakesOnlyThen() throws {
        let pool = BufferPool<Buffer>()
        var wakes = 0
        pool.put(Buffer(1)) { wakes += 1 }
        #expect(wakes == 0, "nobody was waiting")
        _ = pool.take { Issue.record("a buffer was free") }
        var waits = 0
        let b = pool.take {
            waits += 1
            // The queue's thread hands a buffer back during the second wait.
            if waits == 2 { pool.put(Buffer(7)) { wakes += 1 } }
        }
        #expect(b.id == 7)
        #expect(waits == 2)
        #expect(wakes == 1, "the waiting taker was woken")
        pool.put(Buffer(8)) { wakes += 1 }
        #expect(wakes == 1, "no wake-up once the wait ended")
        #expect(!pool.isEmpty)
        pool.removeAll()
        #expect(pool.isEmpty)
    }

    struct Stop: Error {}

    /// A wait that throws (a stop, a command) ends the take with its error.
    @Test func waitThatThrowsEndsTheTake() {
        let pool = BufferPool<Buffer>()
        #expect(throws: Stop.self) { _ = try pool.take { throw Stop() } }
    }

    /// Queue buffers hold about 46 ms at every rate (2048 frames at 44.1 kHz), at least 64
    /// frames; channel counts are clamped to 1...8.
    @Test func planScalesBuffersWithTheRate() {
        #expect(OutputFeeder.Plan(sampleRate: 44100, channelsPerFrame: 2).framesPerBuffer == 2048)
        #expect(OutputFeeder.Plan(sampleRate: 48000, channelsPerFrame: 2).framesPerBuffer == 2230)
        #expect(OutputFeeder.Plan(sampleRate: 192000, channelsPerFrame: 2).framesPerBuffer == 8917)
        #expect(OutputFeeder.Plan(sampleRate: 1000, channelsPerFrame: 2).framesPerBuffer == 64)
        #expect(OutputFeeder.Plan(sampleRate: 44100, channelsPerFrame: 0).channels == 1)
        #expect(OutputFeeder.Plan(sampleRate: 44100, channelsPerFrame: 12).channels == 8)
        let plan = OutputFeeder.Plan(sampleRate: 48000, channelsPerFrame: 6)
        #expect(plan.format.sampleRate == 48000)
        #expect(plan.format.channelsPerFrame == 6)
        #expect(plan.format.bytesPerFrame == 24, "interleaved Float32")
    }

    /// A queue opened before the stream's format was known (44.1 kHz stereo) is kept for a
    /// stream of that rate and channel count, unless it names a layout beyond stereo.
    @Test func speculativePlanFitsOnlyItsShape() {
        let plan = OutputFeeder.Plan(sampleRate: 44100, channelsPerFrame: 2)
        func pcm(_ rate: Double, _ channels: UInt32) -> AudioStreamBasicDescription {
            .linearPCM(sampleRate: rate, channels: channels, bitsPerChannel: 16, isFloat: false)
        }
        #expect(plan.fits(pcm(44100, 2), hasLayout: false))
        #expect(plan.fits(pcm(44100, 2), hasLayout: true), "a stereo layout plays on the stereo queue")
        #expect(!plan.fits(pcm(48000, 2), hasLayout: false))
        #expect(!plan.fits(pcm(44100, 1), hasLayout: false))
        let surround = OutputFeeder.Plan(sampleRate: 44100, channelsPerFrame: 6)
        #expect(surround.fits(pcm(44100, 6), hasLayout: false))
        #expect(!surround.fits(pcm(44100, 6), hasLayout: true), "a layout the device must take needs a new queue")
    }

    /// Without a queue the feeder enqueues nothing, counts nothing and has no crossfade.
    @Test func feederWithoutQueueIsInert() throws {
        let feeder = OutputFeeder(crossfadeSeconds: 2)
        try feeder.enqueueStaged(frames: 100) { Issue.record("no wait without a queue") }
        try feeder.enqueueHeld(frames: 100, wait: { Issue.record("no wait without a queue") }) { _ in Issue.record("nothing enqueued") }
        #expect(feeder.enqueuedFrames == 0)
        #expect(feeder.framesAhead(played: 0) == 0)
        #expect(feeder.crossfadeFrames == 88200, "2 s at the default 44.1 kHz")
        #expect(OutputFeeder(crossfadeSeconds: 99).crossfadeFrames == 30 * 44100, "at most 30 s")
        #expect(!feeder.confirm(.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 32, isFloat: true), hasLayout: false),
                "no queue to keep")
    }
}
