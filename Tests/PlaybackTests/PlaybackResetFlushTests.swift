#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Synchronization
import Testing

/// `AudioOutputQueue.reset()` and `AudioFilePlayer.seek(to:)` drop what the PulseAudio server
/// still holds (pa_stream_flush), not only the queue's play ring: the old audio stops within
/// one device period of the reset instead of playing on for the server's buffer (0.4 s for
/// afplay files). Measured on a private daemon's null sink through its monitor.
@Suite(.serialized, .requires(playbackUnavailable))
struct PlaybackResetFlushTests {
    static let rate = 44100
    static let latency = 0.4

    /// The device a factory opened.
    final class OpenedDevice: Sendable {
        let device = Locked<(any AudioOutputDevice)?>(nil)
        var framesPerRender: Int { device.withLock { $0?.framesPerRender } ?? 0 }
    }

    /// A PulseAudio output on the daemon's sink with afplay's file latency (0.4 s).
    static func output(_ daemon: PulseTestDaemon, device: OpenedDevice) -> AudioOutputDeviceFactory {
        let sink = daemon.sinkName, server = daemon.server
        return { format throws(AudioError) in
            var options = AudioOutput.Options(pulseServer: server)
            options.pulseLatency = latency
            let d = try AudioOutput.open(.pulse(sink: sink), format: format, options: options).device
            device.device.withLock { $0 = d }
            return d
        }
    }

    /// An ALSA device through the pulse plugin on the daemon's sink (a real-time PCM): 1024-frame
    /// periods, 4 of them.
    static func alsaOutput(_ daemon: PulseTestDaemon, device: OpenedDevice) -> AudioOutputDeviceFactory {
        let config = "pcm.oatpulse { type pulse server \"\(daemon.server)\" device \"\(daemon.sinkName)\" }\n"
        return { format throws(AudioError) in
            let d = try ALSAOutputDevice(device: "oatpulse", format: format, periodFrames: 1024, configText: config)
            device.device.withLock { $0 = d }
            return d
        }
    }

    /// Interleaved stereo sine frames `start..<start+count` at `frequency` and `amplitude`.
    static func tone(_ frequency: Double, amplitude: Float, start: Int, count: Int) -> [Float] {
        var out = [Float](repeating: 0, count: count * 2)
        for i in 0..<count {
            let v = amplitude * Float(sin(2 * Double.pi * frequency * Double(start + i) / Double(rate)))
            out[2 * i] = v
            out[2 * i + 1] = v
        }
        return out
    }

    /// Tone A (0.5) plays for about 0.6 s, the queue is reset, then tone B (0.2) is enqueued for
    /// 0.6 s. In the monitor recording, tone A must stop within one device period of the frames
    /// the device had played at the reset, and tone B must follow with all its frames.
    @Test(.requires(TestResource.first(TestResource.pulseAudioMissing, TestResource.alsaPulsePluginMissing)), arguments: ["pulse", "alsa"])
    func resetDropsTheServersBufferWithinOnePeriod(_ output: String) throws {
        let daemon = try PulseTestDaemon(sampleRate: Self.rate, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: "\(daemon.directory)/monitor.raw")
        let device = OpenedDevice()
        let format = AudioStreamBasicDescription.linearPCM(sampleRate: Double(Self.rate), channels: 2, bitsPerChannel: 32, isFloat: true)
        let free = Locked<[OATQueueEngine.QueueBuffer]>([])
        let factory = output == "alsa" ? Self.alsaOutput(daemon, device: device) : Self.output(daemon, device: device)
        if output == "alsa" {
            // The ALSA pulse plugin (libasound2-plugins) may be missing: nothing to test then.
            _ = try factory(AudioDeviceFormat(sampleRate: Double(Self.rate), channels: 2)).close()
        }
        let queue = try AudioOutputQueue(format: format, output: factory) { _, buffer in
            free.withLock { $0.append(buffer) }
        }
        defer { queue.dispose(immediately: true) }
        let framesPerBuffer = 4096
        func enqueue(_ samples: [Float]) throws {
            var offset = 0
            while offset < samples.count {
                let n = min(framesPerBuffer * 2, samples.count - offset)
                let buffer = try free.withLock { $0.popLast() } ?? queue.allocateBuffer(byteCapacity: framesPerBuffer * 8)
                samples[offset..<(offset + n)].withUnsafeBytes { _ = buffer.fill($0) }
                try queue.enqueue(buffer)
                offset += n
            }
        }
        // 1.5 s of tone A (the ring holds 2 s): far more than plays before the reset.
        try enqueue(Self.tone(440, amplitude: 0.5, start: 0, count: Self.rate * 3 / 2))
        try queue.start()
        sleep(seconds: 0.6)
        // The device clock advances at each write request (a period): reset right after it
        // moved, so that it is current.
        let stale = queue.currentTime()?.time.sampleTime ?? 0
        _ = waitUntil(0.5) { (queue.currentTime()?.time.sampleTime ?? 0) != stale }
        let playedAtReset = queue.currentTime()?.time.sampleTime ?? 0
        queue.reset()
        let afterReset = queue.currentTime()?.time.sampleTime ?? -1
        // More than the device's buffer: the queue flushes it once that much is ready.
        let bFrames = Self.rate * 6 / 10
        try enqueue(Self.tone(880, amplitude: 0.2, start: 0, count: bFrames))
        sleep(seconds: 0.6 + Self.latency + 0.4)
        let timeline = queue.currentTime()?.time.sampleTime ?? 0
        let samples = recording.stop()
        let period = device.framesPerRender
        queue.stop(immediately: true)

        let frames = samples.count / 2
        func level(_ i: Int) -> Float { abs(samples[2 * i]) }
        let aStart = try #require((0..<frames).first { level($0) > 1e-3 }, "no audio recorded")
        let aEnd = try #require((0..<frames).last { level($0) > 0.25 }) + 1
        let end = try #require((0..<frames).last { level($0) > 1e-3 }) + 1
        let bStart = try #require((aEnd..<frames).first { level($0) > 1e-3 && level($0) <= 0.25 })
        let oldFrames = Double(aEnd - aStart) - playedAtReset
        let ms = oldFrames / Double(Self.rate) * 1000
        print("queue reset (\(output)): tone A played \(aEnd - aStart) frames, the device had played \(Int(playedAtReset)) at the reset: old audio went on for \(Int(oldFrames)) frames (\(ms) ms); device period \(period) frames; gap before tone B \(bStart - aEnd) frames; tone B \(end - bStart) frames of \(bFrames); timeline after the reset \(afterReset), \(Int(timeline)) frames later")
        #expect(period > 0)
        // ALSA: the device thread drops between two periods (it may be in a blocking write of
        // one), and the pulse plugin holds a little more: two periods.
        let allowed = Double(output == "alsa" ? 2 * period : period)
        #expect(oldFrames < allowed, "old audio went on for \(oldFrames) frames after the reset (period \(period))")
        #expect(bStart - aEnd < period / 4, "a gap of \(bStart - aEnd) frames before the new audio")
        // Tone B plays whole (tone A's last quarter wave, below 0.25, may count as B).
        #expect(abs((end - bStart) - bFrames) <= 30, "tone B: \(end - bStart) frames of \(bFrames)")
        // The timeline restarted at the reset and follows the device clock from there.
        #expect(afterReset >= 0 && afterReset < Double(period))
        let sinceReset = (0.6 + Self.latency + 0.4) * Double(Self.rate)
        #expect(abs(timeline - sinceReset) < Double(Self.rate) * 0.1, "timeline \(timeline), about \(sinceReset) expected")
    }

    /// afplay's player: a seek in a file longer than the play ring stops the old audio within
    /// two and a half device periods (140-180 ms measured: the stale frames filling the ring are
    /// skipped at the next render; it played on for the server's 0.4 s before: 16 349 frames),
    /// and the new audio follows without a gap.
    @Test func seekDropsTheServersBufferWithinAFewPeriods() throws {
        let scratch = try ScratchDirectory("seek-flush")
        defer { scratch.remove() }
        let path = try Fixture.flac(44100, 2).with(seconds: 8.0).make(in: scratch.path)
        let reference = try referenceDecode(path)
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: "\(daemon.directory)/monitor.raw")
        let device = OpenedDevice()
        let player = try AudioFilePlayer(paths: [path], output: Self.output(daemon, device: device))
        try player.play(from: 0)
        sleep(seconds: 0.8)
        // The position follows the device clock, which advances at each write request (a
        // period): seek right after it moved, so that it is current.
        let stale = player.position().seconds
        _ = waitUntil(0.5) { player.position().seconds != stale }
        let before = player.position().seconds
        player.seek(to: 2.0)
        _ = waitUntil(10) { player.currentState == AudioFilePlayer.State.ended }
        sleep(seconds: 0.3)
        let samples = recording.stop()
        let period = device.framesPerRender
        player.stop()
        let alignment = alignSegments(recording: samples, reference: reference.samples, channels: 2)
        print("seek with flush: \(alignment)")
        #expect(alignment.segments.count == 2)
        let first = try #require(alignment.segments.first)
        let old = Double(first.referenceEnd) - before * 44100
        let ms = old / 44.1
        print("seek: position \(before) s at the seek, old audio went on for \(Int(old)) frames (\(ms) ms); device period \(period) frames")
        #expect(first.referenceFrame == 0)
        #expect(old < 2.5 * Double(period), "old audio went on for \(old) frames after the seek (period \(period))")
        // The new audio follows at once (no silence while the server refills), to the end.
        let second = try #require(alignment.segments.last)
        #expect(second.recordingFrame - first.recordingEnd < period / 4, "gap of \(second.recordingFrame - first.recordingEnd) frames")
        #expect(second.referenceEnd == reference.frames)
    }
}
