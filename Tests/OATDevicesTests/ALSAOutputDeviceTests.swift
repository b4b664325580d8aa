#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATTestSupport
import Testing
@testable import OATDevices

/// ALSA through PCMs that need no card: a `file` PCM (the written bytes are compared with what
/// was rendered) and the `pulse` plugin against a private PulseAudio daemon.
@Suite struct ALSAOutputDeviceTests {
    /// An ALSA `file` PCM writing raw samples to `path` (its slave is the `null` PCM).
    func fileConfig(_ pcm: String, _ path: String) -> String {
        "pcm.\(pcm) { type file slave.pcm null file \"\(path)\" format raw }\n"
    }

    @Test func filePCMWritesExactlyTheRenderedFloats() throws {
        let path = uniqueTempPath("alsa", "raw")
        defer { removeFile(path) }
        let device = try ALSAOutputDevice(device: "oatfile", format: AudioDeviceFormat(sampleRate: 48000, channels: 2),
                                          periodFrames: 1000, configText: fileConfig("oatfile", path))
        #expect(device.sampleFormat == .float32)
        #expect(device.format.sampleRate == 48000)
        let source = ChirpSource(total: 50_123, sampleRate: 48000)
        let log = EventLog(device)
        try device.start(source.render)
        #expect(waitUntil(10) { device.hasFinished })
        device.close()
        #expect(log.contains(.drained))
        #expect(device.renderedFrames == 50_123 && device.playedFrames == 50_123)
        let bytes = try #require(Corpus.read(path))
        #expect(bytes.count == 50_123 * 2 * 4)
        let samples: [Float] = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        var mismatches = 0
        for i in 0..<min(samples.count / 2, 50_123) {
            for c in 0..<2 where samples[i * 2 + c] != source.sample(i, c) { mismatches += 1 }
        }
        #expect(mismatches == 0)
        print("alsa file float32: period \(device.framesPerRender), buffer \(device.bufferFrames), \(samples.count / 2) frames, \(mismatches) mismatches")
    }

    @Test func filePCMWritesInt16WhenAsked() throws {
        let path = uniqueTempPath("alsa16", "raw")
        defer { removeFile(path) }
        let device = try ALSAOutputDevice(device: "oatfile16", format: AudioDeviceFormat(sampleRate: 44100, channels: 2),
                                          preferredSampleFormat: .int16, periodFrames: 512,
                                          configText: fileConfig("oatfile16", path))
        #expect(device.sampleFormat == .int16)
        let source = ChirpSource(total: 20_000, sampleRate: 44100)
        try device.start(source.render)
        #expect(waitUntil(10) { device.hasFinished })
        device.close()
        let bytes = try #require(Corpus.read(path))
        #expect(bytes.count == 20_000 * 2 * 2)
        let samples: [Int16] = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        var mismatches = 0
        for i in 0..<min(samples.count / 2, 20_000) {
            for c in 0..<2 where samples[i * 2 + c] != ALSAOutputDevice.int16Sample(source.sample(i, c)) { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }

    @Test func pauseAndStopOnTheFilePCM() throws {
        let path = uniqueTempPath("alsap", "raw")
        defer { removeFile(path) }
        let device = try ALSAOutputDevice(device: "oatfilep", format: AudioDeviceFormat(sampleRate: 48000, channels: 1),
                                          periodFrames: 256, configText: fileConfig("oatfilep", path))
        // Endless source: the file PCM is not real time, so the device runs as fast as it can.
        let source = ChirpSource(total: Int.max / 4, sampleRate: 48000)
        try device.start(source.render)
        #expect(waitUntil(5) { device.renderedFrames > 10_000 })
        try device.pause()
        sleep(seconds: 0.05)
        let rendered = device.renderedFrames
        sleep(seconds: 0.1)
        #expect(device.renderedFrames == rendered)
        try device.resume()
        #expect(waitUntil(5) { device.renderedFrames > rendered + 10_000 })
        device.stop(drain: false)
        #expect(device.hasFinished)
        device.close()
    }

    @Test func missingPCMIsAClearError() {
        #expect(throws: AudioError.self) {
            _ = try ALSAOutputDevice(device: "oat_no_such_pcm", format: AudioDeviceFormat(sampleRate: 44100, channels: 2))
        }
        #expect(!ALSAOutputDevice.listDevices().isEmpty)
    }

    /// The channel map path (`snd_pcm_set_chmap`), on the one PCM here that has a map: ALSA's
    /// `null` plugin with a `chmap` list (the `pulse` plugin and `file`/`plug` PCMs over a plain
    /// slave offer none; a `hw` PCM needs a card). The `null` PCM has no settable map, so ALSA
    /// accepts a map equal to the one it has for the channel count and refuses any other:
    /// labels that reach it in the right ALSA positions and layout are taken, the same labels in
    /// another order are refused, and a PCM without a map takes none.
    @Test func channelLabelsBecomeTheALSAChannelMap() throws {
        let config = "pcm.oatchmap { type null chmap [ \"FL,FR,FC,LFE,RL,RR\" \"FL,FR\" \"MONO\" ] }\n"
        func open(_ labels: [ChannelLabel]?, channels: Int, device: String = "oatchmap") throws -> ALSAOutputDevice {
            try ALSAOutputDevice(device: device, format: AudioDeviceFormat(sampleRate: 48000, channels: channels, channelLabels: labels),
                                 periodFrames: 480, configText: config)
        }
        let fivePointOne: [ChannelLabel] = [.left, .right, .center, .lfeScreen, .leftSurround, .rightSurround]
        #expect(try open(fivePointOne, channels: 6).hasChannelMap)
        #expect(try open([.left, .right], channels: 2).hasChannelMap)
        #expect(try open([.mono], channels: 1).hasChannelMap)
        // Rear labels map to ALSA's RL/RR too.
        #expect(try open([.left, .right, .center, .lfeScreen, .rearSurroundLeft, .rearSurroundRight], channels: 6).hasChannelMap)
        // Another order (SMPTE/WAV 5.1 moved to L R Ls Rs C LFE) is not the PCM's map: refused.
        #expect(try !open([.left, .right, .leftSurround, .rightSurround, .center, .lfeScreen], channels: 6).hasChannelMap)
        #expect(try !open([.right, .left], channels: 2).hasChannelMap)
        // A label ALSA has no position for: no map is set.
        #expect(try !open([.left, .unused], channels: 2).hasChannelMap)
        // No labels, or a PCM without a map: none.
        #expect(try !open(nil, channels: 2).hasChannelMap)
        #expect(try !open([.left, .right], channels: 2, device: "null").hasChannelMap)
    }

    @Test(.requires(TestResource.first(TestResource.pulseAudioMissing, TestResource.alsaPulsePluginMissing)))
    func pulsePluginPlaysThroughThePrivateDaemon() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let config = "pcm.oatpulse { type pulse server \"\(daemon.server)\" device \"\(daemon.sinkName)\" }\n"
        let device = try ALSAOutputDevice(device: "oatpulse", format: AudioDeviceFormat(sampleRate: 44100, channels: 2),
                                          periodFrames: 1024, configText: config)
        defer { device.close() }
        let recording = try daemon.recordMonitor(to: uniqueTempPath("monitor", "raw"))
        let source = ChirpSource(total: 66_150, sampleRate: 44100)
        let log = EventLog(device)
        try device.start(source.render)
        sleep(seconds: 0.5)
        let latency = device.latency
        #expect(waitUntil(10) { device.hasFinished })
        sleep(seconds: 0.3)
        let samples = recording.stop()
        #expect(log.contains(.drained))
        let cmp = try #require(compare(samples, channels: 2, with: source))
        print("alsa pulse plugin: \(device.sampleFormat), period \(device.framesPerRender), buffer \(device.bufferFrames), latency \(Int(latency * 1000)) ms; \(cmp); events \(log.events)")
        #expect(cmp.frames == 66_150)
        #expect(cmp.snr >= 90)
        #expect(cmp.longestZeroRun == 0)
    }

    @Test(.requires(TestResource.first(TestResource.pulseAudioMissing, TestResource.alsaPulsePluginMissing)))
    func pulsePluginLossIsReportedAndTheDeviceReopens() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let config = "pcm.oatpulse { type pulse server \"\(daemon.server)\" device \"\(daemon.sinkName)\" }\n"
        let device = try ALSAOutputDevice(device: "oatpulse", format: AudioDeviceFormat(sampleRate: 44100, channels: 2),
                                                 periodFrames: 1024, configText: config)
        defer { device.close() }
        let source = ChirpSource(total: 44100 * 30, sampleRate: 44100)
        let log = EventLog(device)
        try device.start(source.render)
        sleep(seconds: 0.4)
        daemon.kill()
        #expect(log.waitFor(5) { $0.contains { if case .lost = $0 { true } else { false } } })
        sleep(seconds: 0.3)
        let rendered = device.renderedFrames
        try daemon.start()
        #expect(log.waitFor(5) { $0.contains(.restored) })
        #expect(waitUntil(3) { device.renderedFrames > rendered + 22050 })
        device.stop(drain: false)
        print("alsa pulse plugin loss: events \(log.events)")
    }

    @Test func autoWithNoServerAndNoCardFallsBackToNullWithANotice() throws {
        let options = AudioOutput.Options(pulseServer: "unix:/tmp/oat-no-such-server-\(getpid())/native",
                                          alsaDevice: "oat_no_such_pcm")
        let opened = try AudioOutput.open(.auto, format: AudioDeviceFormat(sampleRate: 44100, channels: 2), options: options)
        defer { opened.device.close() }
        #expect(opened.device is NullOutputDevice)
        #expect(opened.device.name == "null")
        let notice = try #require(opened.notice)
        #expect(notice.hasPrefix("no audio device found: playing to the null output"))
        print("auto: \(notice)")
    }

    @Test func autoWithTheMachineDefaultsAnswersQuickly() throws {
        let t0 = HostTime.now()
        let opened = try AudioOutput.open(.auto, format: AudioDeviceFormat(sampleRate: 44100, channels: 2))
        defer { opened.device.close() }
        let seconds = HostTime.seconds(ticks: HostTime.now() - t0)
        print("auto on this machine: \(opened.device.name) in \(Int(seconds * 1000)) ms; notice: \(opened.notice ?? "none")")
        #expect(seconds < 3)
    }
}
