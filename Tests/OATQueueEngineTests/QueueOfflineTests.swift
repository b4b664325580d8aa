#if canImport(Glibc)
import Glibc
#endif
import OATDevices
import OATFiles
import OATProcessing
import OATTestSupport
import Synchronization
import Testing
@testable import OATQueueEngine

/// Feeds a queue a generated interleaved Float32 signal from its output callback (Apple's
/// refill-in-the-callback pattern), `framesPerBuffer` frames per buffer, three buffers.
final class SignalFeeder: @unchecked Sendable {
    let channels: Int
    let totalFrames: Int
    let framesPerBuffer: Int
    let sample: @Sendable (Int, Int) -> Float
    let position = Locked(0)

    init(channels: Int, totalFrames: Int, framesPerBuffer: Int, sample: @escaping @Sendable (Int, Int) -> Float) {
        self.channels = channels
        self.totalFrames = totalFrames
        self.framesPerBuffer = framesPerBuffer
        self.sample = sample
    }

    /// Fills and enqueues `buffer`; at the end, asks the queue to stop after what it has.
    /// (Under the lock from taking a position to enqueuing, so that the priming thread and the
    /// queue's thread cannot enqueue out of order.)
    func refill(_ queue: AudioOutputQueue, _ buffer: QueueBuffer) {
        let ended = position.withLock { p -> Bool in
            let start = p
            let n = min(framesPerBuffer, totalFrames - start)
            guard n > 0 else { return true }
            p = start + n
            var samples = [Float](repeating: 0, count: n * channels)
            for i in 0..<n { for c in 0..<channels { samples[i * channels + c] = sample(start + i, c) } }
            samples.withUnsafeBytes { _ = buffer.fill($0) }
            try? queue.enqueue(buffer)
            return false
        }
        if ended { queue.stop(immediately: false) }
    }

    func makeQueue(rate: Double) throws -> AudioOutputQueue {
        let format = AudioStreamBasicDescription.linearPCM(sampleRate: rate, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
        let queue = try AudioOutputQueue(format: format, output: { f throws(AudioError) in NullOutputDevice(format: f, realTime: false) }) { [self] q, b in refill(q, b) }
        try queue.setOfflineRendering(true)
        return queue
    }

    func prime(_ queue: AudioOutputQueue) throws {
        for _ in 0..<3 {
            let b = try queue.allocateBuffer(byteCapacity: framesPerBuffer * channels * 4)
            refill(queue, b)
        }
    }
}

/// Renders a started offline queue to the end (or `limit` frames); planar output.
func renderAll(_ queue: AudioOutputQueue, channels: Int, chunk: Int = 4096, limit: Int = 50_000_000) throws -> [[Float]] {
    var out = [[Float]](repeating: [], count: channels)
    let buffers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
    for c in 0..<channels { buffers[c] = .allocate(capacity: chunk) }
    defer { for c in 0..<channels { buffers[c].deallocate() }; buffers.deallocate() }
    while out[0].count < limit {
        let n = try queue.renderOffline(into: buffers, frames: chunk)
        for c in 0..<channels { out[c].append(contentsOf: UnsafeBufferPointer(start: buffers[c], count: n)) }
        if n < chunk { break }
    }
    return out
}

func sine(_ f: Double, rate: Double) -> @Sendable (Int, Int) -> Float {
    { i, c in Float(0.5 * sin(2 * Double.pi * f * Double(i) / rate)) * (c == 0 ? 1 : 0.7) }
}

@Suite(.serialized) struct QueueOfflineTests {
    @Test(.requires(TestResource.corpusMissing)) func offlineRenderOfAFileEqualsItsDecode() throws {
        let root = try TestResource.corpusRoot()
        for name in ["ffmpeg-generated/wav/pcm_f32le_st.wav", "ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3"] {
            let path = root + "/" + name
            let reference = try decodeWithToolbox(path, trim: false)
            let file = try AudioFile(path: path)
            let queue = try AudioOutputQueue(format: file.dataFormat, magicCookie: file.magicCookie,
                                             output: { f throws(AudioError) in NullOutputDevice(format: f, realTime: false) }) { _, _ in }
            try queue.setOfflineRendering(true)
            var next: Int64 = 0
            while next < file.packetCount {
                let batch = try file.readPackets(next..<(next + 300))
                let buffer = try queue.allocateBuffer(byteCapacity: max(1, batch.data.count), packetDescriptionCapacity: batch.packetDescriptions.count)
                batch.data.withUnsafeBytes { _ = buffer.fill($0, packetDescriptions: batch.packetDescriptions) }
                try queue.enqueue(buffer)
                next += Int64(batch.packetCount)
            }
            try queue.start()
            queue.stop(immediately: false)
            let started = HostTime.now()
            let planar = try renderAll(queue, channels: reference.channels)
            let seconds = HostTime.seconds(ticks: HostTime.now() - started)
            var interleaved = [Float](repeating: 0, count: planar[0].count * reference.channels)
            for i in 0..<planar[0].count { for c in 0..<reference.channels { interleaved[i * reference.channels + c] = planar[c][i] } }
            let s = snr(reference.samples, interleaved)
            print("offline render \(name): \(planar[0].count) frames (decode: \(reference.samples.count / reference.channels)), SNR \(s) dB, \(Double(planar[0].count) / reference.rate / seconds)x real time")
            #expect(interleaved.count == reference.samples.count)
            #expect(s >= 90)
            queue.dispose(immediately: true)
        }
    }

    @Test func playRateTwoPlaysInHalfTheFrames() throws {
        let rate = 44100.0
        let feeder = SignalFeeder(channels: 2, totalFrames: Int(rate * 3), framesPerBuffer: 4096, sample: sine(440, rate: rate))
        let queue = try feeder.makeQueue(rate: rate)
        queue.isTimePitchEnabled = true
        try queue.setParameter(.playRate, 2)
        try feeder.prime(queue)
        try queue.start()
        let out = try renderAll(queue, channels: 2)
        let expected = Double(feeder.totalFrames) / 2
        let f = dominantFrequency(out[0], sampleRate: rate)
        print("queue PlayRate 2: \(out[0].count) frames for \(feeder.totalFrames) in (expected \(Int(expected))), dominant \(f) Hz")
        #expect(abs(Double(out[0].count) - expected) / expected < 0.01)
        #expect(abs(f - 440) / 440 < 0.01)
        #expect(queue.parameter(.playRate) == 2)
        queue.dispose(immediately: true)
    }

    @Test func pitchShiftsTheDominantFrequency() throws {
        let rate = 44100.0
        for algorithm in [TimePitchAlgorithm.spectral, .timeDomain, .varispeed] {
            let feeder = SignalFeeder(channels: 2, totalFrames: Int(rate * 2), framesPerBuffer: 4096, sample: sine(440, rate: rate))
            let queue = try feeder.makeQueue(rate: rate)
            queue.isTimePitchEnabled = true
            queue.timePitchAlgorithm = algorithm
            try queue.setParameter(.pitch, 700)
            try feeder.prime(queue)
            try queue.start()
            let out = try renderAll(queue, channels: 2)
            let measured = cents(dominantFrequency(out[0], sampleRate: rate), relativeTo: 440)
            print("queue Pitch +700 (\(algorithm)): \(measured) cents, \(out[0].count) frames")
            #expect(abs(measured - 700) < 5, "\(algorithm): \(measured) cents")
            if algorithm == .varispeed {
                // Varispeed links rate to pitch: +700 cents plays 1.498x as fast.
                #expect(abs(Double(out[0].count) - Double(feeder.totalFrames) / 1.4983) < 50)
            } else {
                #expect(abs(out[0].count - feeder.totalFrames) < feeder.totalFrames / 100)
            }
            queue.dispose(immediately: true)
        }
    }

    @Test func bypassAndUnityLeaveTheAudioUntouched() throws {
        let rate = 44100.0
        let feeder = SignalFeeder(channels: 2, totalFrames: 100_000, framesPerBuffer: 3000, sample: sine(997, rate: rate))
        let queue = try feeder.makeQueue(rate: rate)
        queue.isTimePitchEnabled = true
        try queue.setParameter(.playRate, 1.5)
        queue.isTimePitchBypassed = true
        try feeder.prime(queue)
        try queue.start()
        let out = try renderAll(queue, channels: 2)
        #expect(out[0].count == feeder.totalFrames)
        var maxError: Float = 0
        for i in 0..<min(out[0].count, feeder.totalFrames) { maxError = max(maxError, abs(out[0][i] - feeder.sample(i, 0)), abs(out[1][i] - feeder.sample(i, 1))) }
        #expect(maxError == 0)
        queue.dispose(immediately: true)
    }

    @Test(arguments: [AudioQueueProcessingTapFlags.preEffects, [.preEffects, .siphon], .postEffects, [.postEffects, .siphon]])
    func tapsSeeEveryFrame(flags: AudioQueueProcessingTapFlags) throws {
        let rate = 44100.0
        let feeder = SignalFeeder(channels: 2, totalFrames: 50_000, framesPerBuffer: 3000, sample: sine(600, rate: rate))
        let queue = try feeder.makeQueue(rate: rate)
        let seen = Locked<[Float]>([])
        let flagsSeen = Locked<[AudioQueueProcessingTapFlags]>([])
        let modifies = !flags.contains(.siphon)
        _ = try queue.addProcessingTap(flags: flags, maximumFrames: 512) { tap, frames, _, buffers, outFlags in
            let got = tap.getSourceAudio(frames: frames, into: buffers)
            seen.withLock { s in s.append(contentsOf: UnsafeBufferPointer(start: buffers[0], count: got.frames)) }
            flagsSeen.withLock { $0.append(got.flags) }
            // A modifying tap halves the level; a siphon's changes must be ignored.
            for c in 0..<buffers.count { for i in 0..<got.frames { buffers[c][i] *= 0.5 } }
            return got.frames
        }
        try feeder.prime(queue)
        try queue.start()
        let out = try renderAll(queue, channels: 2)
        let tapped = seen.withLock { $0 }
        #expect(tapped.count == feeder.totalFrames)
        var tapError: Float = 0
        var outError: Float = 0
        for i in 0..<min(tapped.count, feeder.totalFrames) { tapError = max(tapError, abs(tapped[i] - feeder.sample(i, 0))) }
        let gain: Float = modifies ? 0.5 : 1
        for i in 0..<min(out[0].count, feeder.totalFrames) { outError = max(outError, abs(out[0][i] - gain * feeder.sample(i, 0))) }
        #expect(out[0].count == feeder.totalFrames)
        #expect(tapError == 0, "the tap saw other audio than was enqueued")
        #expect(outError < 1e-7, "output is not \(gain) x the input (\(flags))")
        let f = flagsSeen.withLock { $0 }
        #expect(f.first?.contains(.startOfStream) == true)
        #expect(f.last?.contains(.endOfStream) == true)
        queue.dispose(immediately: true)
    }

    @Test func postEffectsTapSeesTheStretchedAudio() throws {
        let rate = 44100.0
        let feeder = SignalFeeder(channels: 1, totalFrames: 88200, framesPerBuffer: 4096, sample: sine(440, rate: rate))
        let queue = try feeder.makeQueue(rate: rate)
        queue.isTimePitchEnabled = true
        try queue.setParameter(.playRate, 0.5)
        let preCount = Locked(0)
        let postCount = Locked(0)
        _ = try queue.addProcessingTap(flags: [.preEffects, .siphon]) { tap, frames, _, buffers, _ in
            let got = tap.getSourceAudio(frames: frames, into: buffers)
            preCount.withLock { $0 += got.frames }
            return got.frames
        }
        _ = try queue.addProcessingTap(flags: [.postEffects, .siphon]) { tap, frames, _, buffers, _ in
            let got = tap.getSourceAudio(frames: frames, into: buffers)
            postCount.withLock { $0 += got.frames }
            return got.frames
        }
        try feeder.prime(queue)
        try queue.start()
        let out = try renderAll(queue, channels: 1)
        #expect(preCount.withLock { $0 } == feeder.totalFrames)
        #expect(postCount.withLock { $0 } == out[0].count)
        #expect(abs(out[0].count - 2 * feeder.totalFrames) < feeder.totalFrames / 50)
        queue.dispose(immediately: true)
    }

    /// Two queues started at one host time, rendered offline and mixed into the non-paced null
    /// sink for ten minutes of audio: they stay sample-aligned from start to end.
    @Test func twoQueuesStartedTogetherStayInSampleSyncForTenMinutes() throws {
        let rate = 16000.0
        let total = Int(rate * 600)
        // Deterministic noise, so cross-correlation has one sharp peak.
        let signal: @Sendable (Int, Int) -> Float = { i, _ in
            var x = UInt64(i) &* 0x9E37_79B9_7F4A_7C15
            x ^= x >> 29; x = x &* 0xBF58_476D_1CE4_E5B9; x ^= x >> 32
            return Float(Double(x >> 11) / Double(1 << 53) - 0.5)
        }
        let a = SignalFeeder(channels: 1, totalFrames: total, framesPerBuffer: 4096, sample: signal)
        let b = SignalFeeder(channels: 1, totalFrames: total, framesPerBuffer: 3001, sample: signal)
        let qa = try a.makeQueue(rate: rate)
        let qb = try b.makeQueue(rate: rate)
        try a.prime(qa)
        try b.prime(qb)
        let origin = HostTime.now()
        let startAt = AudioTimeStamp(hostTime: origin + 12_345_678, flags: .hostTimeValid)
        try qa.start(at: startAt)
        usleep(20_000) // the second queue is started later on the wall clock, for the same host time
        try qb.start(at: startAt)
        let window = 4096
        let lead = Int((12_345_678.0 / 1e9 * rate).rounded())
        let endAt = total - 20_000
        let captured = Locked<(a0: [Float], b0: [Float], a1: [Float], b1: [Float], mixedPeak: Float, frames: Int)>(([], [], [], [], 0, 0))
        let sink = NullOutputDevice(format: AudioDeviceFormat(sampleRate: rate, channels: 1), realTime: false, framesPerRender: 1024)
        let started = HostTime.now()
        let failed = Atomic<Bool>(false)
        try sink.start { buffers, frames, _ in
            let done = captured.withLock { $0.frames }
            let tmp = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: 1)
            let bufA = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            let bufB = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            defer { tmp.deallocate(); bufA.deallocate(); bufB.deallocate() }
            let time = AudioTimeStamp(hostTime: origin + UInt64(Double(done) / rate * 1e9), flags: .hostTimeValid)
            tmp[0] = bufA
            let na = (try? qa.renderOffline(into: tmp, frames: frames, timeStamp: time)) ?? -1
            tmp[0] = bufB
            let nb = (try? qb.renderOffline(into: tmp, frames: frames, timeStamp: time)) ?? -1
            if na < 0 || nb < 0 { failed.store(true, ordering: .relaxed); return AudioRenderResult(frames: 0, isEndOfStream: true) }
            for i in 0..<frames { buffers[0][i] = bufA[i] + bufB[i] }
            let n = max(na, nb)
            captured.withLock { c in
                for i in 0..<frames {
                    let at = done + i
                    if at < lead + window { c.a0.append(bufA[i]); c.b0.append(bufB[i]) }
                    if at >= endAt && at < endAt + window + lead { c.a1.append(bufA[i]); c.b1.append(bufB[i]) }
                    c.mixedPeak = max(c.mixedPeak, abs(buffers[0][i]))
                }
                c.frames += n
            }
            return AudioRenderResult(frames: n, isEndOfStream: n < frames)
        }
        #expect(wait(seconds: 600) { sink.hasFinished })
        sink.close()
        let seconds = HostTime.seconds(ticks: HostTime.now() - started)
        let c = captured.withLock { $0 }
        let renderFailed = failed.load(ordering: .relaxed)
        #expect(!renderFailed)
        let startLag = bestLag(c.a0, c.b0, range: lead..<(lead + window - 64), maxLag: 32)
        let endLag = bestLag(c.a1, c.b1, range: 0..<(window - 64), maxLag: 32)
        // The first audible frame sits exactly `lead` frames in, in both.
        let firstA = c.a0.firstIndex { $0 != 0 } ?? -1
        let firstB = c.b0.firstIndex { $0 != 0 } ?? -1
        print("two queues, 10 min at 16 kHz offline in \(seconds) s (\(600 / seconds)x real time): lag at start \(startLag), at end \(endLag) samples; first audio at \(firstA)/\(firstB) (expected \(lead)); \(c.frames) frames")
        #expect(c.frames >= total)
        #expect(abs(startLag) <= 1 && abs(endLag) <= 1)
        #expect(abs(firstA - firstB) <= 1)
        #expect(abs(firstA - lead) <= 1)
        qa.dispose(immediately: true)
        qb.dispose(immediately: true)
    }

    @Test func offlineRenderNeedsOfflineModeAndAStartedQueue() throws {
        let feeder = SignalFeeder(channels: 1, totalFrames: 1000, framesPerBuffer: 500, sample: sine(440, rate: 8000))
        let queue = try feeder.makeQueue(rate: 8000)
        let buffers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: 1)
        buffers[0] = .allocate(capacity: 16)
        defer { buffers[0].deallocate(); buffers.deallocate() }
        #expect(throws: AudioError.self) { try queue.renderOffline(into: buffers, frames: 16) }
        #expect(throws: AudioError.self) { try queue.setParameter(.playRate, 3) }
        #expect(throws: AudioError.self) { try queue.addProcessingTap(flags: .siphon) { _, _, _, _, _ in 0 } }
        queue.dispose(immediately: true)
    }
}
