#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import OATQueueEngine
import OATStreaming
import OATTestSupport
import Testing

/// Device faults under the streaming path: the PulseAudio server killed (SIGKILL) and restarted
/// on the same socket while `afplay URL` and StreamingPlayer play into it.
@Suite(.serialized) struct PlaybackDeviceFaultTests {
    /// `afplay http://…` (a 6 s on-demand MP3 from the loopback server) plays into a private
    /// PulseAudio; after 1.5 s the daemon is killed with SIGKILL, 0.5 s later a new one starts on
    /// the same socket. afplay neither crashes nor hangs: it reconnects, the new daemon's sink
    /// monitor hears the rest of the file to its last frame, in order, and afplay exits 0.
    @Test(.requires(TestResource.pulseAudioMissing)) func afplayURLSurvivesAPulseAudioKillAndRestart() throws {
        let afplay = try #require(AfplayURLTests.afplayPath(), "afplay is not built (swift build)")
        let dir = try ScratchDirectory("pulse-kill-afplay")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 6, codec: ["-c:a", "libmp3lame", "-b:a", "192k"]))
        let reference = try decodeWithToolbox(file)
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/a.mp3", TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg"))
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let p = try ToolProcess(afplay, ["--json-events", "--output", "pulse:\(daemon.sinkName)", server.url("/a.mp3")],
                                environment: daemon.environment, outputPath: dir.path + "/out.txt")
        usleep(1_500_000)
        daemon.kill()
        usleep(500_000)
        try daemon.start()
        let recording = try daemon.recordMonitor(to: dir.path + "/monitor.raw")
        let code = p.wait(timeout: 30)
        if code == nil { p.stop() }
        usleep(300_000)
        let samples = recording.stop()
        #expect(code == 0, "afplay exit \(String(describing: code)): \(p.output)")
        let alignment = alignSegments(recording: samples, reference: reference.samples, channels: 2, tolerance: 1e-4)
        print("afplay pulse kill/restart: exit \(String(describing: code)); \(alignment)")
        #expect(alignment.unmatchedFrames == 0, "\(alignment)")
        let last = try #require(alignment.segments.last, "the new daemon heard nothing: \(p.output)")
        #expect(last.referenceEnd == reference.samples.count / 2, "\(alignment)")
        for (a, b) in zip(alignment.segments, alignment.segments.dropFirst()) {
            #expect(b.referenceFrame == a.referenceEnd, "frames lost or repeated after the restart: \(a) then \(b)")
        }
    }

    /// The PulseAudio server killed and never restarted: a StreamingPlayer keeps its state (no
    /// crash, no hang), `stop()` returns promptly, and the process can play again once a server
    /// is back.
    @Test(.requires(TestResource.pulseAudioMissing)) func streamingPlayerStopsPromptlyWhileTheServerIsGone() async throws {
        let dir = try ScratchDirectory("pulse-kill-player")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 4, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let sink = daemon.sinkName, pulseServer = daemon.server
        let output: AudioOutputDeviceFactory = { format throws(AudioError) in
            try AudioOutput.open(.pulse(sink: sink), format: format, options: AudioOutput.Options(pulseServer: pulseServer)).device
        }
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: output, onEvent: log.handler)
        let task = log.attach(player)
        await player.play(file)
        #expect(await log.waitFor(10, isPlaying))
        try await Task.sleep(for: .seconds(0.5))
        daemon.kill()
        try await Task.sleep(for: .seconds(1))
        let t0 = HostTime.now()
        await player.stop()
        let stopSeconds = HostTime.seconds(ticks: HostTime.now() - t0)
        #expect(stopSeconds < 2, "stop took \(stopSeconds) s with the server gone")
        // A new server and a new play: audio reaches it.
        try daemon.start()
        let recording = try daemon.recordMonitor(to: dir.path + "/monitor.raw")
        await player.play(file)
        #expect(await log.waitFor(15) { e in
            if case .state(.stopped(.ended)) = e { return true }
            return false
        })
        usleep(300_000)
        let samples = recording.stop()
        task.cancel()
        let reference = try decodeWithToolbox(file)
        let alignment = alignSegments(recording: samples, reference: reference.samples, channels: 2, tolerance: 1e-4)
        print("player stop with the server gone: \(stopSeconds) s; replay after restart: \(alignment)")
        #expect(alignment.unmatchedFrames == 0 && alignment.segments.count >= 1, "\(alignment)")
    }

    /// The PulseAudio server killed and not restarted while a StreamingPlayer plays: the device
    /// keeps retrying, and after ``BufferingPolicy/deviceLostTimeout`` (2 s here, 30 s by
    /// default) the player stops with a `deviceUnavailable` error naming the device: no hang.
    @Test(.requires(TestResource.pulseAudioMissing)) func aServerThatStaysGoneStopsThePlayerWithAClearError() async throws {
        let dir = try ScratchDirectory("pulse-gone")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 8, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let sink = daemon.sinkName, pulseServer = daemon.server
        let output: AudioOutputDeviceFactory = { format throws(AudioError) in
            try AudioOutput.open(.pulse(sink: sink), format: format, options: AudioOutput.Options(pulseServer: pulseServer)).device
        }
        var policy = BufferingPolicy()
        policy.deviceLostTimeout = 2
        let log = StreamingEventLog()
        let player = StreamingPlayer(policy: policy, output: output, onEvent: log.handler)
        let task = log.attach(player)
        await player.play(file)
        #expect(await log.waitFor(10, isPlaying))
        try await Task.sleep(for: .seconds(0.5))
        let killed = log.timed.last?.seconds ?? 0
        daemon.kill()
        #expect(await log.waitFor(15, isStopped))
        await player.stop()
        task.cancel()
        let timed = log.timed
        let stoppedAt = timed.last { isStopped($0.event) }?.seconds ?? 99
        guard case .error(let e) = log.stopReason else {
            Issue.record("expected an error stop, got \(String(describing: log.stopReason))")
            return
        }
        print("pulse gone: stopped \(stoppedAt - killed) s after the kill: \(e)")
        #expect(e.code == .deviceUnavailable, "\(e)")
        #expect(e.message.contains("pulse") && e.message.contains("gone"), "\(e)")
        #expect(stoppedAt - killed < 8, "stopped \(stoppedAt - killed) s after the kill")
    }

    /// An ALSA device that disappears: the ALSA `pulse` plugin PCM pointed at a private daemon
    /// (ALSA configuration given to the device). The daemon is killed mid-play: the device reports
    /// the loss and reopens every 0.5 s; restarted, it comes back and the rest of the file reaches
    /// the new daemon; never restarted, the player stops after `deviceLostTimeout` (2 s here)
    /// with a clear error. Neither case hangs.
    @Test(.requires(TestResource.pulseAudioMissing), arguments: [true, false])
    func alsaPulsePCMWhoseServerDies(restart: Bool) async throws {
        let dir = try ScratchDirectory("alsa-gone")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 5, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let config = "pcm.oatpulse { type pulse server \"\(daemon.server)\" device \"\(daemon.sinkName)\" }\n"
        let output: AudioOutputDeviceFactory = { format throws(AudioError) in
            try ALSAOutputDevice(device: "oatpulse", format: format, periodFrames: 1024, configText: config)
        }
        var policy = BufferingPolicy()
        policy.deviceLostTimeout = 2
        let log = StreamingEventLog()
        let player = StreamingPlayer(policy: policy, output: output, onEvent: log.handler)
        let task = log.attach(player)
        await player.play(file)
        #expect(await log.waitFor(10, isPlaying))
        try await Task.sleep(for: .seconds(1))
        daemon.kill()
        var recording: MonitorRecording?
        if restart {
            try await Task.sleep(for: .seconds(0.5))
            try daemon.start()
            recording = try daemon.recordMonitor(to: dir.path + "/monitor.raw")
        }
        let stopped = await log.waitFor(20, isStopped)
        #expect(stopped, "the player hung: \(log.states)")
        await player.stop()
        task.cancel()
        let samples = recording?.stop() ?? []
        print("ALSA pulse PCM, server killed\(restart ? " and restarted" : ""): \(String(describing: log.stopReason))")
        if restart {
            #expect(log.stopReason == .ended, "\(String(describing: log.stopReason))")
            let reference = try decodeWithToolbox(file)
            let alignment = alignSegments(recording: samples, reference: reference.samples, channels: 2, tolerance: 1e-3)
            print("  after the restart: \(alignment)")
            let last = try #require(alignment.segments.last, "the new daemon heard nothing")
            #expect(last.referenceEnd == reference.samples.count / 2, "\(alignment)")
        } else {
            guard case .error(let e) = log.stopReason else {
                Issue.record("expected an error stop, got \(String(describing: log.stopReason))")
                return
            }
            #expect(e.code == .deviceUnavailable && e.message.contains("alsa:oatpulse"), "\(e)")
        }
    }

    /// `afplay FILE` (the file player) into a PulseAudio server that is killed and stays gone:
    /// after `OAT_DEVICE_LOST_TIMEOUT` (2 s here; 30 s by default) afplay says so and exits 1,
    /// instead of waiting forever; its stderr is not flooded meanwhile.
    @Test(.requires(TestResource.pulseAudioMissing)) func afplayFileGivesUpWhenTheServerStaysGone() throws {
        let afplay = try #require(AfplayURLTests.afplayPath(), "afplay is not built (swift build)")
        let dir = try ScratchDirectory("pulse-gone-afplay")
        defer { dir.remove() }
        let file = dir.path + "/a.wav"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 6, codec: ["-c:a", "pcm_s16le"]))
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        var environment = daemon.environment
        environment["OAT_DEVICE_LOST_TIMEOUT"] = "2"
        let p = try ToolProcess(afplay, ["--output", "pulse:\(daemon.sinkName)", file], environment: environment, outputPath: dir.path + "/out.txt")
        usleep(1_500_000)
        daemon.kill()
        let t0 = HostTime.now()
        let code = p.wait(timeout: 20)
        let seconds = HostTime.seconds(ticks: HostTime.now() - t0)
        if code == nil { p.stop() }
        let output = p.output
        print("afplay file, server gone: exit \(String(describing: code)) after \(seconds) s: \(output.prefix(300))")
        #expect(code == 1, "\(output.prefix(500))")
        #expect(output.contains("has been gone for 2 s"), "\(output.prefix(500))")
        #expect(seconds < 8)
        #expect(output.split(separator: "\n").count < 20, "stderr flooded: \(output.split(separator: "\n").count) lines")
    }

    /// While the server is gone the PulseAudio output retries on its backoff (0.1 s doubling to
    /// 2 s): about 10 attempts in 12 s. (A connect failing at once used to schedule two retries,
    /// doubling the timers each round until the main loop spun about 30 s after the server died.)
    @Test(.requires(TestResource.pulseAudioMissing)) func pulseReconnectAttemptsStayOnTheBackoff() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let device = try PulseAudioOutputDevice(format: AudioDeviceFormat(sampleRate: 44100, channels: 2), sink: daemon.sinkName, server: daemon.server)
        defer { device.close() }
        try device.start { buffers, frames, _ in
            for c in 0..<buffers.count { buffers[c].update(repeating: 0, count: frames) }
            return AudioRenderResult(frames: frames)
        }
        usleep(500_000)
        daemon.kill()
        usleep(12_000_000)
        let attempts = device.reconnectAttempts
        print("pulse reconnect attempts in 12 s without a server: \(attempts)")
        #expect(device.isLost)
        #expect(attempts >= 4 && attempts <= 14, "\(attempts) attempts")
    }
}
