import OATCore
import OATDevices
import OATQueueEngine
import OATStreaming
import OATTestSupport
import Synchronization
import Testing

/// The start of a stream: the output device opens before the first audio bytes arrive
/// (``BufferingPolicy/opensOutputEarly``), and a stream at another format than the
/// early guess still plays exactly.
@Suite struct StreamingStartTests {
    /// Records when and at which format the player opens devices (WAV files, not real time).
    final class DeviceOpens: Sendable {
        let opens = Locked<[(seconds: Double, format: AudioDeviceFormat)]>([])
        let start = HostTime.now()

        func factory(_ path: String) -> AudioOutputDeviceFactory {
            { [self] format throws(AudioError) in
                opens.withLock { $0.append((HostTime.seconds(ticks: HostTime.now() - start), format)) }
                return try AudioOutput.open(.wav(path: path, realTime: false), format: format).device
            }
        }

        var all: [(seconds: Double, format: AudioDeviceFormat)] { opens.withLock { $0 } }
    }

    /// A server that sends its response head at once and its first body bytes only after
    /// 0.6 s: the device is open long before the bytes, and the stream plays every frame once.
    /// Before the early open, the device opened only after the first bytes had been parsed
    /// (>= 0.6 s).
    @Test func outputOpensBeforeTheFirstBytes() async throws {
        let dir = try ScratchDirectory("splayer-early-open")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let reference = try decodeWithToolbox(file).samples
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg")
        route.faults = [.stall(afterBytes: 0, seconds: 0.6)]
        server.route("/a.mp3", route)
        let out = dir.path + "/out.wav"
        let opens = DeviceOpens()
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: opens.factory(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/a.mp3"))
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended)
        let all = opens.all
        #expect(all.count == 1, "devices opened: \(all)")
        let first = try #require(all.first)
        #expect(first.seconds < 0.4, "the device opened \(first.seconds) s after play, the first bytes came after 0.6 s")
        #expect(first.format == AudioDeviceFormat(sampleRate: 44100, channels: 2))
        let played = try decodeWithToolbox(out).samples
        #expect(played.count == reference.count, "played \(played.count / 2) frames of \(reference.count / 2)")
        let alignment = alignSegments(recording: played, reference: reference, channels: 2)
        #expect(alignment.segments.count == 1 && alignment.unmatchedFrames == 0, "\(alignment)")
    }

    /// A 48 kHz mono stream: the early device (44.1 kHz stereo) is replaced by one at the
    /// stream's own format before anything plays, and every frame plays once at 48 kHz.
    @Test func anotherFormatReopensTheOutputAtTheStreamsFormat() async throws {
        let dir = try ScratchDirectory("splayer-early-reopen")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 48000, channels: 1, seconds: 2, codec: ["-c:a", "libmp3lame", "-b:a", "96k"]))
        let reference = try decodeWithToolbox(file)
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/a.mp3", TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg"))
        let out = dir.path + "/out.wav"
        let opens = DeviceOpens()
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: opens.factory(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/a.mp3"))
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended)
        #expect(opens.all.last?.format == AudioDeviceFormat(sampleRate: 48000, channels: 1), "devices opened: \(opens.all)")
        let played = try decodeWithToolbox(out)
        #expect(played.rate == 48000 && played.channels == 1)
        #expect(played.samples.count == reference.samples.count, "played \(played.samples.count) frames of \(reference.samples.count)")
        let alignment = alignSegments(recording: played.samples, reference: reference.samples, channels: 1)
        #expect(alignment.segments.count == 1 && alignment.unmatchedFrames == 0, "\(alignment)")
    }

    /// With the early open off, the device opens at the stream's format only (once).
    @Test func earlyOpenCanBeTurnedOff() async throws {
        let dir = try ScratchDirectory("splayer-early-off")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 48000, channels: 1, seconds: 1, codec: ["-c:a", "libmp3lame", "-b:a", "96k"]))
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/a.mp3", TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg"))
        let opens = DeviceOpens()
        var policy = BufferingPolicy()
        policy.opensOutputEarly = false
        let log = StreamingEventLog()
        let player = StreamingPlayer(policy: policy, output: opens.factory(dir.path + "/out.wav"), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(server.url("/a.mp3"))
        #expect(await log.waitFor(20, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended)
        #expect(opens.all.map(\.format) == [AudioDeviceFormat(sampleRate: 48000, channels: 1)])
    }
}
