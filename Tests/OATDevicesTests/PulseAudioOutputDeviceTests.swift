#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATTestSupport
import Synchronization
import Testing
@testable import OATDevices

/// Plays through a private PulseAudio daemon (started and stopped by each test) into a null sink
/// and records its monitor.
@Suite(.serialized, .requires(TestResource.pulseAudioMissing))
struct PulseAudioOutputDeviceTests {
    let format = AudioDeviceFormat(sampleRate: 44100, channels: 2)

    @Test func playsBitExactlyIntoTheNullSinkAndDrains() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: uniqueTempPath("monitor", "raw"))
        let device = try PulseAudioOutputDevice(format: format, sink: daemon.sinkName, server: daemon.server)
        defer { device.close() }
        #expect(device.name == "pulse:oat_test")
        let source = ChirpSource(total: 88_200, sampleRate: 44100)
        let log = EventLog(device)
        try device.start(source.render)
        sleep(seconds: 0.5)
        let midLatency = device.latency
        let midPlayed = device.playedFrames
        #expect(midPlayed > 0 && midPlayed < device.renderedFrames)
        #expect(log.waitFor(10) { $0.contains(.drained) })
        sleep(seconds: 0.3)
        let samples = recording.stop()
        #expect(device.renderedFrames == 88_200)
        #expect(device.playedFrames == 88_200)
        #expect(log.events.first == .started)
        #expect(!log.events.contains { if case .lost = $0 { true } else { false } })
        let cmp = try #require(compare(samples, channels: 2, with: source))
        print("pulse: \(cmp); latency mid-play \(Int(midLatency * 1000)) ms; events \(log.events)")
        #expect(cmp.frames == 88_200)
        #expect(cmp.snr >= 90)
        #expect(cmp.longestZeroRun == 0)
        #expect(midLatency > 0.01 && midLatency < 0.5)
    }

    /// A larger target latency set while playing (what the streaming player does once a stream
    /// plays steadily): the server's buffer grows to it, and the audio stays exact and gapless
    /// (the difference is asked for and rendered at once, never padded).
    @Test func raisingTheTargetLatencyWhilePlayingKeepsTheAudioExact() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: uniqueTempPath("monitor", "raw"))
        let device = try PulseAudioOutputDevice(format: format, sink: daemon.sinkName, server: daemon.server, targetLatency: 0.1)
        defer { device.close() }
        let total = 132_300
        let source = ChirpSource(total: total, sampleRate: 44100)
        let log = EventLog(device)
        try device.start(source.render)
        sleep(seconds: 0.6)
        let before = device.latency
        let aheadBefore = device.renderedFrames - device.playedFrames
        device.setTargetLatency(0.4)
        sleep(seconds: 0.6)
        let after = device.latency
        let aheadAfter = device.renderedFrames - device.playedFrames
        #expect(log.waitFor(10) { $0.contains(.drained) })
        sleep(seconds: 0.3)
        let samples = recording.stop()
        print("pulse latency 0.1 -> 0.4 s: measured \(Int(before * 1000)) -> \(Int(after * 1000)) ms, rendered ahead \(aheadBefore) -> \(aheadAfter) frames")
        #expect(before < 0.2, "latency before \(before)")
        #expect(after > 0.25 && after < 0.6, "latency after \(after)")
        #expect(aheadAfter > Int64(0.25 * 44100), "rendered ahead \(aheadAfter) frames")
        #expect(device.renderedFrames == Int64(total) && device.playedFrames == Int64(total))
        #expect(!log.events.contains { if case .underrun = $0 { true } else { false } })
        let cmp = try #require(compare(samples, channels: 2, with: source))
        #expect(cmp.frames == total)
        #expect(cmp.snr >= 90)
        #expect(cmp.longestZeroRun == 0)
    }

    @Test func pauseCorksAndResumeContinuesWithoutLoss() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: uniqueTempPath("monitor", "raw"))
        let device = try PulseAudioOutputDevice(format: format, sink: daemon.sinkName, server: daemon.server)
        defer { device.close() }
        let source = ChirpSource(total: 66_150, sampleRate: 44100)
        let log = EventLog(device)
        try device.start(source.render)
        sleep(seconds: 0.4)
        try device.pause()
        #expect(throws: AudioError.self) { try device.pause() }
        sleep(seconds: 0.15)
        let played = device.playedFrames, rendered = device.renderedFrames
        sleep(seconds: 0.4)
        #expect(device.playedFrames == played)
        #expect(device.renderedFrames == rendered)
        #expect(rendered < 66_150)
        try device.resume()
        #expect(log.waitFor(10) { $0.contains(.drained) })
        sleep(seconds: 0.3)
        let samples = recording.stop()
        let cmp = try #require(compare(samples, channels: 2, with: source, dropSilentFrames: true))
        print("pulse pause/resume: \(cmp); paused at \(played) played / \(rendered) rendered; events \(log.events)")
        #expect(cmp.frames == 66_150)
        #expect(cmp.snr >= 90)
        #expect(device.playedFrames == 66_150)
    }

    @Test func serverLossIsReportedAndPlaybackResumesWhenItReturns() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let device = try PulseAudioOutputDevice(format: format, sink: daemon.sinkName, server: daemon.server)
        defer { device.close() }
        let source = ChirpSource(total: 44100 * 30, sampleRate: 44100)
        let log = EventLog(device)
        try device.start(source.render)
        sleep(seconds: 0.5)
        daemon.kill()
        #expect(log.waitFor(5) { $0.contains { if case .lost = $0 { true } else { false } } })
        #expect(device.isLost)
        sleep(seconds: 0.3)
        let renderedWhileLost = device.renderedFrames
        let playedWhileLost = device.playedFrames
        try daemon.start()
        let recording = try daemon.recordMonitor(to: uniqueTempPath("monitor", "raw"))
        #expect(log.waitFor(8) { $0.contains(.restored) })
        sleep(seconds: 0.8)
        #expect(device.renderedFrames > renderedWhileLost + 22050)
        #expect(device.playedFrames > playedWhileLost)
        let samples = recording.stop()
        device.stop(drain: false)
        let cmp = try #require(compare(samples, channels: 2, with: source, firstFrame: nil))
        print("pulse loss: events \(log.events); resumed at frame \(cmp.offset) (rendered before loss \(renderedWhileLost)); \(cmp)")
        #expect(cmp.offset >= renderedWhileLost - 1)
        #expect(cmp.frames > 11025)
        #expect(cmp.snr >= 90)
        #expect(cmp.longestZeroRun == 0)
        let lostIndex = try #require(log.events.firstIndex { if case .lost = $0 { true } else { false } })
        let restoredIndex = try #require(log.events.firstIndex(of: .restored))
        #expect(lostIndex < restoredIndex)
    }

    @Test func stopWithDrainPlaysWhatTheServerHolds() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: uniqueTempPath("monitor", "raw"))
        let device = try PulseAudioOutputDevice(format: format, sink: daemon.sinkName, server: daemon.server)
        defer { device.close() }
        let source = ChirpSource(total: 44100 * 10, sampleRate: 44100)
        try device.start(source.render)
        sleep(seconds: 0.5)
        let t0 = HostTime.now()
        device.stop(drain: true)
        let drainTime = HostTime.seconds(ticks: HostTime.now() - t0)
        let rendered = Int(device.renderedFrames)
        #expect(device.playedFrames == device.renderedFrames)
        sleep(seconds: 0.2)
        let samples = recording.stop()
        let cmp = try #require(compare(samples, channels: 2, with: source))
        print("pulse stop(drain:): drained \(rendered) frames in \(Int(drainTime * 1000)) ms; \(cmp)")
        #expect(cmp.frames == rendered)
        #expect(cmp.snr >= 90 && cmp.longestZeroRun == 0)
        #expect(drainTime < 1)
    }

    @Test func aLateRenderCallbackIsReportedAsAnUnderrun() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let device = try PulseAudioOutputDevice(format: format, sink: daemon.sinkName, server: daemon.server)
        defer { device.close() }
        let source = ChirpSource(total: 44100 * 2, sampleRate: 44100)
        let stalled = Atomic<Bool>(false)
        let render = source.render
        let log = EventLog(device)
        // Test-only misbehaviour: the callback blocks once for 300 ms (3x the buffer).
        try device.start { buffers, frames, time in
            if source.produced.load(ordering: .relaxed) >= 22050, !stalled.exchange(true, ordering: .relaxed) {
                usleep(300_000)
            }
            return render(buffers, frames, time)
        }
        #expect(log.waitFor(10) { $0.contains(.drained) })
        let underruns = log.events.compactMap { if case .underrun(let n) = $0 { n } else { nil } }
        print("pulse underrun: events \(log.events)")
        #expect(underruns.count >= 1)
        #expect(underruns.reduce(0, +) > 4410)
    }

    @Test func listsSinksAndProbesTheServer() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let sinks = try PulseAudioOutputDevice.listSinks(server: daemon.server)
        let sink = try #require(sinks.first { $0.name == "oat_test" })
        #expect(sink.isDefault && sink.sampleRate == 48000 && sink.channels == 2)
        // The same query lists sources: the sink's monitor, with its format; the server's
        // default source (the monitor, with no other source) marked once.
        let sources = try PulseAudioInputDevice.listSources(server: daemon.server)
        let monitor = try #require(sources.first { $0.spec == .pulse(source: "oat_test.monitor") })
        #expect(monitor.isMonitor && monitor.nativeFormat == AudioDeviceFormat(sampleRate: 48000, channels: 2))
        #expect(sources.filter(\.isDefault).count == 1)
        #expect(PulseAudioOutputDevice.serverAnswers(server: daemon.server))
        let opened = try AudioOutput.open(.auto, format: AudioDeviceFormat(sampleRate: 48000, channels: 2),
                                          options: AudioOutput.Options(pulseServer: daemon.server))
        #expect(opened.device.name == "pulse" && opened.notice == nil)
        opened.device.close()
        let missing = try PulseAudioOutputDevice(format: format, sink: "oat_no_such_sink", server: daemon.server)
        defer { missing.close() }
        do {
            try missing.start(ChirpSource(total: 1000, sampleRate: 44100).render)
            Issue.record("played to a sink that does not exist")
        } catch {
            #expect(error.code == .deviceUnavailable)
            print("pulse missing sink: \(error)")
        }
        #expect(!missing.takeEvents().contains { if case .lost = $0 { true } else { false } })
    }

    @Test func noServerIsAClearError() {
        let server = "unix:/tmp/oat-no-such-server-\(getpid())/native"
        #expect(!PulseAudioOutputDevice.serverAnswers(server: server))
        do {
            _ = try PulseAudioOutputDevice(format: format, server: server, connectTimeout: 1)
            Issue.record("connected to a server that does not exist")
        } catch {
            #expect(error.code == .deviceUnavailable)
            #expect(error.underlying != nil)
            print("pulse without a server: \(error)")
        }
    }
}
