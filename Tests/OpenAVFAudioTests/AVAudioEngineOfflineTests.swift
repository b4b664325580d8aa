import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// AVAudioEngine in offline manual rendering, as Apple's "Performing Offline Audio Processing"
/// sample does it: players, effects and mixers rendered to buffers with exact frame counts.
@Suite struct AVAudioEngineOfflineTests {
    /// A mono or stereo buffer of `frequency` Hz at `amplitude`.
    static func toneBuffer(frequency: Double, amplitude: Float, frames: Int, rate: Double = 48000, channels: AVAudioChannelCount = 1) -> AVAudioPCMBuffer {
        let format = AVAudioFormat(standardFormatWithSampleRate: rate, channels: channels)!
        let b = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: AVAudioFrameCount(frames))!
        for c in 0..<Int(channels) {
            for i in 0..<frames { b.floatChannelData![c][i] = amplitude * Float(sin(2 * .pi * frequency * Double(i) / rate)) }
        }
        b.frameLength = AVAudioFrameCount(frames)
        return b
    }

    /// Renders the engine in 1024-frame calls until `total` frames; channel-major output.
    static func render(_ engine: AVAudioEngine, total: Int) throws -> [[Float]] {
        let format = engine.manualRenderingFormat
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: engine.manualRenderingMaximumFrameCount))
        var out = [[Float]](repeating: [], count: Int(format.channelCount))
        while engine.manualRenderingSampleTime < total {
            let n = min(AVAudioFrameCount(total) - AVAudioFrameCount(engine.manualRenderingSampleTime), buffer.frameCapacity)
            let status = try engine.renderOffline(n, to: buffer)
            #expect(status == .success)
            guard status == .success else { break }
            for c in 0..<out.count { out[c] += Array(UnsafeBufferPointer(start: buffer.floatChannelData![c], count: Int(buffer.frameLength))) }
        }
        return out
    }

    @Test func aFileRendersOfflineToTheExactFrameThroughTheMainMixer() throws {
        let dir = try ScratchDirectory("avf-offline")
        defer { dir.remove() }
        let path = dir.path + "/a.flac"
        try #require(makeFixture(path, rate: 44100, channels: 2, seconds: 1.5, codec: ["-c:a", "flac"]))
        let file = try AVAudioFile(forReading: URL(fileURLWithPath: path))
        let engine = AVAudioEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: file.processingFormat)
        try engine.enableManualRenderingMode(.offline, format: file.processingFormat, maximumFrameCount: 4096)
        try engine.start()
        var completed = false
        player.scheduleFile(file, at: nil) { completed = true }
        player.play()
        let out = try Self.render(engine, total: Int(file.length))
        #expect(out[0].count == Int(file.length) && engine.manualRenderingSampleTime == file.length)
        #expect(completed, "the file's completion handler ran once its data was consumed")
        let reference = try #require(decodeWithFFmpeg(path))
        var interleaved = [Float](repeating: 0, count: out[0].count * 2)
        for i in 0..<out[0].count { interleaved[2 * i] = out[0][i]; interleaved[2 * i + 1] = out[1][i] }
        #expect(snr(reference, interleaved) > 100, "player -> main mixer -> output: \(dB(snr(reference, interleaved)))")
        player.stop()
        engine.stop()
    }

    @Test func threeSourcesMixWithTheirVolumesAndPans() throws {
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let players = (0..<3).map { _ in AVAudioPlayerNode() }
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        for p in players {
            engine.attach(p)
            engine.connect(p, to: engine.mainMixerNode, format: mono)
        }
        players[0].volume = 0.5; players[0].pan = -1
        players[1].volume = 0.25; players[1].pan = 1
        players[2].volume = 1; players[2].pan = 1
        try engine.start()
        for (p, f) in zip(players, [300.0, 500.0, 700.0]) {
            p.scheduleBuffer(Self.toneBuffer(frequency: f, amplitude: 0.5, frames: 48000))
            p.play()
        }
        let out = try Self.render(engine, total: 24000)
        try #require(out[0].count == 24000)
        func level(_ channel: Int, _ f: Double) -> Double { toneAmplitude(out[channel], freq: f, rate: 48000, from: 4800, count: 9600) }
        #expect(abs(level(0, 300) - 0.25) < 0.01 && level(1, 300) < 0.01, "300 Hz at half volume, hard left: \(level(0, 300)) / \(level(1, 300))")
        #expect(abs(level(1, 500) - 0.125) < 0.01 && level(0, 500) < 0.01, "500 Hz at a quarter, hard right: \(level(0, 500)) / \(level(1, 500))")
        #expect(abs(level(1, 700) - 0.5) < 0.01 && level(0, 700) < 0.01, "700 Hz at full volume, hard right: \(level(0, 700)) / \(level(1, 700))")
        engine.mainMixerNode.outputVolume = 0.5
        let quieter = try Self.render(engine, total: 48000)
        try #require(quieter[1].count == 24000)
        let half = toneAmplitude(quieter[1], freq: 700, rate: 48000, from: 2400, count: 9600)
        #expect(abs(half - 0.25) < 0.01, "outputVolume 0.5 halves the mix: \(half)")
    }

    @Test func eqReverbAndDelayShapeTheSound() throws {
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        let eq = AVAudioUnitEQ(numberOfBands: 1)
        eq.bands[0].filterType = .lowPass
        eq.bands[0].frequency = 1000
        eq.bands[0].bypass = false
        engine.attach(player)
        engine.attach(eq)
        engine.connect(player, to: eq, format: format)
        engine.connect(eq, to: engine.mainMixerNode, format: format)
        try engine.start()
        let both = Self.toneBuffer(frequency: 200, amplitude: 0.3, frames: 48000, channels: 2)
        let high = Self.toneBuffer(frequency: 8000, amplitude: 0.3, frames: 48000, channels: 2)
        for c in 0..<2 { for i in 0..<48000 { both.floatChannelData![c][i] += high.floatChannelData![c][i] } }
        player.scheduleBuffer(both)
        player.play()
        let out = try Self.render(engine, total: 48000)
        let low = toneAmplitude(out[0], freq: 200, rate: 48000, from: 9600, count: 24000)
        let cut = toneAmplitude(out[0], freq: 8000, rate: 48000, from: 9600, count: 24000)
        #expect(abs(low - 0.3) < 0.03, "200 Hz passes the 1 kHz low-pass: \(low)")
        #expect(cut < 0.3 / 30, "8 kHz is cut by more than 30 dB: \(cut)")

        // A parametric band of +6 dB doubles its centre frequency.
        let engine3 = AVAudioEngine()
        try engine3.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let p3 = AVAudioPlayerNode()
        let boost = AVAudioUnitEQ(numberOfBands: 2)
        boost.bands[0].filterType = .lowPass
        boost.bands[0].frequency = 2000
        boost.bands[0].bypass = false
        boost.bands[1].filterType = .parametric
        boost.bands[1].frequency = 440
        boost.bands[1].gain = 6
        boost.bands[1].bandwidth = 1
        boost.bands[1].bypass = false
        engine3.attach(p3)
        engine3.attach(boost)
        engine3.connect(p3, to: boost, format: format)
        engine3.connect(boost, to: engine3.mainMixerNode, format: format)
        try engine3.start()
        p3.scheduleBuffer(Self.toneBuffer(frequency: 440, amplitude: 0.2, frames: 48000, channels: 2))
        p3.play()
        let boosted = try Self.render(engine3, total: 48000)
        let at440 = toneAmplitude(boosted[0], freq: 440, rate: 48000, from: 9600, count: 24000)
        #expect(abs(at440 - 0.4) < 0.02, "+6 dB at 440 Hz: \(at440) for 0.4")

        // A reverb leaves a tail after a short burst; bypassed, it does not.
        let engine2 = AVAudioEngine()
        try engine2.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let p2 = AVAudioPlayerNode()
        let reverb = AVAudioUnitReverb()
        reverb.loadFactoryPreset(.largeHall)
        reverb.wetDryMix = 50
        engine2.attach(p2)
        engine2.attach(reverb)
        engine2.connect(p2, to: reverb, format: format)
        engine2.connect(reverb, to: engine2.mainMixerNode, format: format)
        try engine2.start()
        p2.scheduleBuffer(Self.toneBuffer(frequency: 440, amplitude: 0.5, frames: 4800, channels: 2))
        p2.play()
        let wet = try Self.render(engine2, total: 48000)
        let tail = wet[0][24000..<28800].map { Double($0 * $0) }.reduce(0, +) / 4800
        #expect(tail.squareRoot() > 1e-3, "a large hall rings on 0.4 s after the burst: rms \(tail.squareRoot())")
    }

    @Test func varispeedChangesRateAndPitchTogether() throws {
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        let varispeed = AVAudioUnitVarispeed()
        varispeed.rate = 2
        engine.attach(player)
        engine.attach(varispeed)
        engine.connect(player, to: varispeed, format: format)
        engine.connect(varispeed, to: engine.mainMixerNode, format: format)
        try engine.start()
        player.scheduleBuffer(Self.toneBuffer(frequency: 440, amplitude: 0.5, frames: 48000, channels: 2))
        player.play()
        let out = try Self.render(engine, total: 36000)
        try #require(out[0].count == 36000)
        let f = dominantFrequency(Array(out[0][2400..<19200]), sampleRate: 48000)
        #expect(abs(f - 880) < 4, "rate 2: 440 Hz plays at \(f) Hz")
        let after = out[0][26000..<36000].map { abs($0) }.max() ?? 0
        #expect(after < 1e-3, "1 s at rate 2 is over after 0.5 s: peak \(after) later")
    }

    @Test func aTapOnTheMainMixerGetsEveryRenderedFrame() throws {
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: format)
        var tapped: [Float] = []
        engine.mainMixerNode.installTap(onBus: 0, bufferSize: 512, format: nil) { buffer, _ in
            tapped += Array(UnsafeBufferPointer(start: buffer.floatChannelData![0], count: Int(buffer.frameLength)))
        }
        try engine.start()
        player.scheduleBuffer(Self.toneBuffer(frequency: 440, amplitude: 0.5, frames: 10000, channels: 2))
        player.play()
        let out = try Self.render(engine, total: 10000)
        #expect(tapped.count == 10000 && tapped == out[0], "the tap saw \(tapped.count) frames")
        engine.mainMixerNode.removeTap(onBus: 0)
    }
}

/// AVAudioUnitTimePitch offline: rate changes the duration and keeps the pitch; pitch changes
/// the pitch and keeps the duration (Rubber Band underneath).
/// renderOffline's errors, as Apple's engine gives them (`AVAudioEngineManualRenderingError`).
@Suite struct AVAudioEngineRenderOfflineErrorTests {
    static func code(_ body: () throws -> AVAudioEngineManualRenderingStatus) -> Int? {
        do { _ = try body(); return nil } catch { return (error as NSError).code }
    }

    @Test func renderOfflineBeforeStartThrowsNotRunning() throws {
        let engine = AVAudioEngine()
        let format = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 1024))
        // Not in manual rendering mode: invalidMode (-80800).
        #expect(Self.code { try engine.renderOffline(512, to: buffer) } == -80800)
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        _ = engine.mainMixerNode
        // Before start(): notRunning (-80802). Before the fix it rendered.
        #expect(Self.code { try engine.renderOffline(512, to: buffer) } == -80802)
        try engine.start()
        #expect(try engine.renderOffline(512, to: buffer) == .success)
        #expect(buffer.frameLength == 512)
        engine.pause()
        #expect(Self.code { try engine.renderOffline(512, to: buffer) } == -80802, "paused: not running")
        try engine.start()
        #expect(try engine.renderOffline(512, to: buffer) == .success)
        engine.stop()
        #expect(Self.code { try engine.renderOffline(512, to: buffer) } == -80802, "stopped: not running")
        // The real-time variant renders through manualRenderingBlock: invalidMode.
        let realtime = AVAudioEngine()
        try realtime.enableManualRenderingMode(.realtime, format: format, maximumFrameCount: 1024)
        _ = realtime.mainMixerNode
        try realtime.start()
        #expect(Self.code { try realtime.renderOffline(512, to: buffer) } == -80800)
        realtime.stop()
    }
}

@Suite struct AVAudioEngineTimePitchTests {
    @Test(arguments: [(Float(0.5), Float(0)), (Float(2), Float(0)), (Float(1), Float(1200)), (Float(1), Float(-1200))])
    func rateAndPitch(_ rate: Float, _ shift: Float) throws {
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        let timePitch = AVAudioUnitTimePitch()
        timePitch.rate = rate
        timePitch.pitch = shift
        engine.attach(player)
        engine.attach(timePitch)
        engine.connect(player, to: timePitch, format: format)
        engine.connect(timePitch, to: engine.mainMixerNode, format: format)
        try engine.start()
        let seconds = 2.0
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 440, amplitude: 0.4, frames: Int(48000 * seconds), channels: 2))
        player.play()
        let expectedSeconds = seconds / Double(rate)
        let out = try AVAudioEngineOfflineTests.render(engine, total: Int(48000 * (expectedSeconds + 1)))
        let left = out[0]
        let loud = left.indices.filter { abs(left[$0]) > 0.05 }
        let first = try #require(loud.first), last = try #require(loud.last)
        let heard = Double(last - first) / 48000
        let f = dominantFrequency(Array(left[(first + 4800)..<(first + 4800 + 24000)]), sampleRate: 48000)
        let expectedFrequency = 440 * pow(2, Double(shift) / 1200)
        print("time-pitch rate \(rate), pitch \(shift): \(heard) s (expected \(expectedSeconds)), \(f) Hz (expected \(expectedFrequency))")
        #expect(abs(heard - expectedSeconds) < 0.05 * expectedSeconds + 0.05, "duration \(heard) s for \(expectedSeconds)")
        #expect(abs(cents(f, relativeTo: expectedFrequency)) < 10, "\(f) Hz for \(expectedFrequency)")
    }
}

/// `AVAudioUnitEffect.bypass`: the graph passes the audio through the effect untouched.
@Suite struct AVAudioUnitBypassTests {
    @Test func aBypassedEQLetsEverythingThrough() throws {
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        let eq = AVAudioUnitEQ(numberOfBands: 1)
        eq.bands[0].filterType = .lowPass
        eq.bands[0].frequency = 500
        eq.bands[0].bypass = false
        eq.bypass = true
        engine.attach(player)
        engine.attach(eq)
        engine.connect(player, to: eq, format: format)
        engine.connect(eq, to: engine.mainMixerNode, format: format)
        try engine.start()
        let source = AVAudioEngineOfflineTests.toneBuffer(frequency: 4000, amplitude: 0.3, frames: 9600, channels: 2)
        player.scheduleBuffer(source)
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 9600)
        let input = Array(UnsafeBufferPointer(start: source.floatChannelData![0], count: 9600))
        #expect(out[0] == input, "bypassed: the 4 kHz tone exactly as scheduled")
    }
}
