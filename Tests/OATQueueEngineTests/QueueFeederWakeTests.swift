#if canImport(Glibc)
import Glibc
#endif
import OATDevices
import OATFiles
@testable import OATQueueEngine
import OATTestSupport
import Synchronization
import Testing

/// The output queue's feeder waits for the render side to free room in the play ring: render
/// posts a semaphore once a quarter of the ring is free, so the feeder tops the ring up as soon
/// as the device has taken that much, instead of sleeping up to 100 ms and guessing.
@Suite struct QueueFeederWakeTests {
    /// Fills the ring, lets a hand-driven device take a quarter of it right after it became
    /// full, and times how long the ring stays short. The sleeping feeder of before slept 100 ms
    /// whenever it found the ring full (every refill took about that); the signalled one
    /// refills at once. The best of three refills must take under 40 ms.
    @Test func theRingIsRefilledAsSoonAsRenderFreesAQuarterOfIt() throws {
        let rate = 48000.0
        let channels = 2
        let format = AudioStreamBasicDescription.linearPCM(sampleRate: rate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
        let device = Locked<HandDrivenOutputDevice?>(nil)
        let queue = try AudioOutputQueue(format: format, ringSeconds: 0.5, bufferReturn: .whenCopied, output: { f throws(AudioError) in
            let d = HandDrivenOutputDevice(format: f, framesPerRender: 1024)
            device.withLock { $0 = d }
            return d
        }) { _, _ in }
        defer { queue.dispose(immediately: true) }
        // The ring holds 0.5 s rounded up to a power of two samples: 32768 frames here.
        var samples = 1
        while samples < Int(rate * 0.5) * channels { samples <<= 1 }
        let ringFrames = Int64(samples / channels)
        let quarter = Int(ringFrames / 4)
        // Three seconds of audio in 0.1 s buffers: the ring and three refills, and more.
        let perBuffer = Int(rate / 10)
        let tone = [Float](repeating: 0.25, count: perBuffer * channels)
        for _ in 0..<30 {
            let buffer = try queue.allocateBuffer(byteCapacity: perBuffer * channels * 4)
            _ = tone.withUnsafeBytes { buffer.fill($0) }
            try queue.enqueue(buffer)
        }
        try queue.start()
        let d = try #require(device.withLock { $0 })

        func waitUntilFull() -> Double? {
            let start = HostTime.now()
            let deadline = start + HostTime.ticks(seconds: 5)
            while HostTime.now() < deadline {
                if queue.bufferedFrames >= ringFrames { return HostTime.seconds(ticks: HostTime.now() - start) }
                sleepMilliseconds(0.2)
            }
            return nil
        }
        _ = try #require(waitUntilFull(), "the feeder never filled the ring")
        var refills: [Double] = []
        for _ in 0..<3 {
            let (result, _) = try #require(d.render(quarter, fill: .nan))
            #expect(result.frames == quarter)
            refills.append(try #require(waitUntilFull(), "the feeder did not refill the ring within 5 s"))
        }
        let best = try #require(refills.min())
        #expect(best < 0.04, "refills took \(refills.map { Int($0 * 1000) }) ms after render freed a quarter of the ring")
        #expect(queue.underrunCount == 0)
    }

    /// The signal posts once per arming, only when the level is reached, and a post from
    /// another thread ends a wait early; an unposted wait times out.
    @Test func theSignalPostsOnceWhenTheLevelIsReached() {
        let signal = RealTimeSignal()
        signal.arm(at: 100)
        signal.postIfReached(99)
        #expect(signal.realTimePosts.load(ordering: .relaxed) == 0)
        signal.postIfReached(100)
        signal.postIfReached(500)
        #expect(signal.realTimePosts.load(ordering: .relaxed) == 1)
        #expect(signal.wait(untilHostTime: HostTime.now() + HostTime.ticks(seconds: 1)))
        // Disarmed by the wait: nothing more is posted.
        signal.postIfReached(1000)
        #expect(signal.realTimePosts.load(ordering: .relaxed) == 1)
        let start = HostTime.now()
        #expect(!signal.wait(untilHostTime: start + 20_000_000))
        #expect(HostTime.now() - start >= 19_000_000)
        // A control post wakes the waiter; posts left from before arming do not.
        signal.post()
        signal.arm(at: 10)
        #expect(!signal.wait(untilHostTime: HostTime.now() + 10_000_000))
        signal.arm(at: 10)
        signal.post()
        #expect(signal.wait(untilHostTime: HostTime.now() + HostTime.ticks(seconds: 1)))
    }
}

private func sleepMilliseconds(_ ms: Double) {
    usleep(useconds_t(ms * 1000))
}
