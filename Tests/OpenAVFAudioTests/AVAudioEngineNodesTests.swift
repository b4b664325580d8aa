import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// What a source or sink block saw, kept in storage allocated before rendering (the blocks run
/// on the render thread and must not allocate).
final class BlockLog: @unchecked Sendable {
    let capacity: Int
    let samples: UnsafeMutablePointer<Float>
    var count = 0
    var calls = 0
    var times: [Float64] = []
    var frameCounts: [AVAudioFrameCount] = []

    init(capacity: Int) {
        self.capacity = capacity
        samples = .allocate(capacity: capacity)
        samples.initialize(repeating: 0, count: capacity)
        times.reserveCapacity(4096)
        frameCounts.reserveCapacity(4096)
    }

    deinit { samples.deallocate() }

    var array: [Float] { Array(UnsafeBufferPointer(start: samples, count: count)) }
}

/// The value the test source renders at frame `i` of channel `c`: a 440 Hz sine, the right
/// channel at half level.
func sourceSample(_ i: Int64, channel c: Int, rate: Double = 48000, frequency: Double = 440) -> Float {
    Float(0.5 * sin(2 * .pi * frequency * Double(i) / rate)) * (c == 0 ? 1 : 0.5)
}

@Suite struct AVAudioSourceNodeTests {
    static let stereo = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!

    static func offlineEngine(maximumFrameCount: AVAudioFrameCount = 1024) throws -> AVAudioEngine {
        let engine = AVAudioEngine()
        try engine.enableManualRenderingMode(.offline, format: stereo, maximumFrameCount: maximumFrameCount)
        return engine
    }

    @Test func theBlockRendersThroughTheMainMixerSampleExact() throws {
        let engine = try Self.offlineEngine()
        let log = BlockLog(capacity: 1)
        let source = AVAudioSourceNode { _, timestamp, frameCount, data in
            let buffers = UnsafeMutableAudioBufferListPointer(data)
            let start = Int64(timestamp.pointee.mSampleTime)
            log.times.append(timestamp.pointee.mSampleTime)
            log.frameCounts.append(frameCount)
            for (c, buffer) in buffers.enumerated() {
                let p = buffer.mData!.assumingMemoryBound(to: Float.self)
                for f in 0..<Int(frameCount) { p[f] = sourceSample(start + Int64(f), channel: c) }
            }
            return noErr
        }
        engine.attach(source)
        engine.connect(source, to: engine.mainMixerNode, format: Self.stereo)
        try engine.start()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 10000)
        try #require(out[0].count == 10000)
        let expectedLeft = (0..<10000).map { sourceSample(Int64($0), channel: 0) }
        let expectedRight = (0..<10000).map { sourceSample(Int64($0), channel: 1) }
        #expect(out[0] == expectedLeft && out[1] == expectedRight, "the block's audio, bit for bit, on both channels")
        #expect(log.times.first == 0 && zip(log.times, log.times.dropFirst()).allSatisfy { $1 - $0 == 1024 },
                "sample times run on without gaps: \(log.times.prefix(4))")
        #expect(log.frameCounts.reduce(0, +) == 10000, "the block was asked for exactly the frames rendered: \(log.frameCounts.reduce(0, +))")
    }

    @Test func aFailingBlockIsSilenceAndItsOwnBuffersAreCopied() throws {
        // The block points mData at memory of its own: the engine copies it.
        let engine = try Self.offlineEngine()
        let own = UnsafeMutablePointer<Float>.allocate(capacity: 4096)
        defer { own.deallocate() }
        own.initialize(repeating: 0.25, count: 4096)
        var calls = 0
        let source = AVAudioSourceNode(format: AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1)!) { silence, _, frameCount, data in
            calls += 1
            if calls == 2 { return -1 }                    // the second render fails
            let buffers = UnsafeMutableAudioBufferListPointer(data)
            buffers[0].mData = UnsafeMutableRawPointer(own)
            buffers[0].mDataByteSize = frameCount * 4
            silence.pointee = false
            return noErr
        }
        engine.attach(source)
        engine.connect(source, to: engine.mainMixerNode, format: nil)
        try engine.start()
        #expect(source.outputFormat(forBus: 0).channelCount == 1, "nil connection format: the block's own format")
        let out = try AVAudioEngineOfflineTests.render(engine, total: 3072)
        // A mono input to a stereo mixer, centred: on both sides at its level (the engine's
        // mono-to-stereo mapping, as for a mono player).
        let centred: Float = 0.25
        #expect(out[0][0..<1024].allSatisfy { abs($0 - centred) < 1e-6 }, "the block's own buffer was played: \(out[0][0])")
        #expect(out[0][1024..<2048].allSatisfy { $0 == 0 }, "an error status renders silence")
        #expect(out[1][2048..<3072].allSatisfy { abs($0 - centred) < 1e-6 }, "and it plays again after")
    }

    @Test func aSourceAt44100IsResampledByTheMixerTo48000() throws {
        let engine = try Self.offlineEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2))
        let log = BlockLog(capacity: 1)
        let source = AVAudioSourceNode(format: format) { _, timestamp, frameCount, data in
            let buffers = UnsafeMutableAudioBufferListPointer(data)
            let start = Int64(timestamp.pointee.mSampleTime)
            log.frameCounts.append(frameCount)
            for (c, buffer) in buffers.enumerated() {
                let p = buffer.mData!.assumingMemoryBound(to: Float.self)
                for f in 0..<Int(frameCount) { p[f] = sourceSample(start + Int64(f), channel: c, rate: 44100, frequency: 1000) }
            }
            return noErr
        }
        engine.attach(source)
        engine.connect(source, to: engine.mainMixerNode, format: format)
        #expect(engine.mainMixerNode.inputFormat(forBus: 0).sampleRate == 44100, "the mixer's input is at the source's rate")
        try engine.start()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 96000)
        let f = dominantFrequency(Array(out[0][4800..<52800]), sampleRate: 48000)
        #expect(abs(f - 1000) < 2, "1 kHz at 44.1 kHz plays as 1 kHz at 48 kHz, not 1088 Hz: \(f)")
        let level = toneAmplitude(out[0], freq: 1000, rate: 48000, from: 4800, count: 48000)
        let right = toneAmplitude(out[1], freq: 1000, rate: 48000, from: 4800, count: 48000)
        #expect(abs(level - 0.5) < 0.01 && abs(right - 0.25) < 0.01, "levels kept: \(level), \(right)")
        let pulled = Int(log.frameCounts.reduce(0, +))
        #expect(abs(pulled - 88200) < 2048, "2 s at 48 kHz took 2 s of the 44.1 kHz source: \(pulled) frames")
    }
}

@Suite struct AVAudioSinkNodeTests {
    @Test func aSinkReceivesExactlyWhatFeedsItWhileTheOutputPlaysOn() throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let log = BlockLog(capacity: 20000)
        let sink = AVAudioSinkNode { timestamp, frameCount, data in
            let buffers = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: data))
            let p = buffers[0].mData!.assumingMemoryBound(to: Float.self)
            let n = min(Int(frameCount), log.capacity - log.count)
            (log.samples + log.count).update(from: p, count: n)
            log.count += n
            log.times.append(timestamp.pointee.mSampleTime)
            return noErr
        }
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.attach(sink)
        engine.connect(player, to: [AVAudioConnectionPoint(node: engine.mainMixerNode, bus: 0), AVAudioConnectionPoint(node: sink, bus: 0)],
                       fromBus: 0, format: format)
        try engine.start()
        let tone = AVAudioEngineOfflineTests.toneBuffer(frequency: 440, amplitude: 0.5, frames: 12000, channels: 2)
        player.scheduleBuffer(tone)
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 12000)
        let input = Array(UnsafeBufferPointer(start: tone.floatChannelData![0], count: 12000))
        #expect(log.count == 12000 && log.array == input, "the sink saw the player's 12000 frames exactly (\(log.count))")
        #expect(out[0] == input, "and the output still plays them")
        #expect(log.times.first == 0 && log.times.count == 12, "one call per render, from sample time 0: \(log.times.count)")
    }
}

@Suite struct AVAudioEngineFanOutTests {
    @Test func onePlayerFeedsTwoMixersAndBothPathsCarryTheSignal() throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let player = AVAudioPlayerNode()
        let left = AVAudioMixerNode(), right = AVAudioMixerNode()
        for n in [player, left, right] as [AVAudioNode] { engine.attach(n) }
        engine.connect(player, to: [AVAudioConnectionPoint(node: left, bus: 0), AVAudioConnectionPoint(node: right, bus: 0)], fromBus: 0, format: format)
        engine.connect(left, to: engine.mainMixerNode, format: format)
        engine.connect(right, to: engine.mainMixerNode, format: format)
        left.pan = -1
        right.pan = 1
        right.volume = 0.5
        let points = engine.outputConnectionPoints(for: player, outputBus: 0)
        #expect(points.count == 2 && points[0].node === left && points[1].node === right && points.allSatisfy { $0.bus == 0 })
        #expect(engine.inputConnectionPoint(for: right, inputBus: 0)?.node === player)
        #expect(engine.inputConnectionPoint(for: engine.mainMixerNode, inputBus: 1)?.node === right)
        #expect(engine.inputConnectionPoint(for: right, inputBus: 1) == nil)
        try engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 500, amplitude: 0.4, frames: 48000, channels: 2))
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 24000)
        let l = toneAmplitude(out[0], freq: 500, rate: 48000, from: 4800, count: 9600)
        let r = toneAmplitude(out[1], freq: 500, rate: 48000, from: 4800, count: 9600)
        #expect(abs(l - 0.4) < 0.005, "path 1 (hard left, full volume): \(l)")
        #expect(abs(r - 0.2) < 0.005, "path 2 (hard right, half volume): \(r)")

        // Reconnecting the bus one to one ends the fan-out.
        engine.connect(player, to: left, fromBus: 0, toBus: 0, format: format)
        #expect(engine.outputConnectionPoints(for: player, outputBus: 0).count == 1)
    }

    @Test func onePlayerThroughTwoDifferentEffects() throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let player = AVAudioPlayerNode()
        let low = AVAudioUnitEQ(numberOfBands: 1), high = AVAudioUnitEQ(numberOfBands: 1)
        low.bands[0].filterType = .lowPass; low.bands[0].frequency = 1000; low.bands[0].bypass = false
        high.bands[0].filterType = .highPass; high.bands[0].frequency = 4000; high.bands[0].bypass = false
        for n in [player, low, high] as [AVAudioNode] { engine.attach(n) }
        engine.connect(player, to: [AVAudioConnectionPoint(node: low, bus: 0), AVAudioConnectionPoint(node: high, bus: 0)], fromBus: 0, format: format)
        engine.connect(low, to: engine.mainMixerNode, fromBus: 0, toBus: 0, format: format)
        engine.connect(high, to: engine.mainMixerNode, fromBus: 0, toBus: 1, format: format)
        try engine.start()
        let both = AVAudioEngineOfflineTests.toneBuffer(frequency: 200, amplitude: 0.3, frames: 48000, channels: 2)
        let hi = AVAudioEngineOfflineTests.toneBuffer(frequency: 10000, amplitude: 0.3, frames: 48000, channels: 2)
        for c in 0..<2 { for i in 0..<48000 { both.floatChannelData![c][i] += hi.floatChannelData![c][i] } }
        player.scheduleBuffer(both)
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 24000)
        let a = toneAmplitude(out[0], freq: 200, rate: 48000, from: 4800, count: 9600)
        let b = toneAmplitude(out[0], freq: 10000, rate: 48000, from: 4800, count: 9600)
        // Each tone passes one path and is cut on the other: both at about their level.
        #expect(abs(a - 0.3) < 0.03, "200 Hz through the low-pass path: \(a)")
        #expect(abs(b - 0.3) < 0.03, "10 kHz through the high-pass path: \(b)")
    }
}

@Suite struct AVAudioPlayerNodeStartTimeTests {
    @Test(arguments: [(Int64(10000), 48000.0), (Int64(5000), 24000.0), (Int64(1500), 48000.0)])
    func playAtAFutureSampleTimeIsSilentUntilThatSample(_ sample: Int64, _ rate: Double) throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: format)
        try engine.start()
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 4000))
        for c in 0..<2 { for i in 0..<4000 { buffer.floatChannelData![c][i] = 0.25 + Float(i) * 1e-5 } }
        buffer.frameLength = 4000
        player.scheduleBuffer(buffer)
        let when = AVAudioTime(sampleTime: sample, atRate: rate)
        player.play(at: when)
        let start = Int(Double(sample) * 48000 / rate)
        let out = try AVAudioEngineOfflineTests.render(engine, total: start + 6000)
        let firstSound = out[0].firstIndex { $0 != 0 }
        #expect(firstSound == start, "silence until node sample \(start), then the buffer: first sound at \(String(describing: firstSound))")
        #expect(out[0][start] == 0.25 && out[0][start + 3999] == 0.25 + 3999 * 1e-5 && out[0][start + 4000] == 0,
                "the buffer whole and in place")
        let now = try #require(player.lastRenderTime)
        #expect(now.sampleTime == Int64(start + 6000))
        let playerNow = try #require(player.playerTime(forNodeTime: now))
        #expect(playerNow.sampleTime == 6000, "player time counts from the start: \(playerNow.sampleTime)")
        let zero = try #require(player.nodeTime(forPlayerTime: AVAudioTime(sampleTime: 0, atRate: 48000)))
        #expect(zero.sampleTime == Int64(start), "player time 0 is node time \(start): \(zero.sampleTime)")
        let before = try #require(player.playerTime(forNodeTime: AVAudioTime(sampleTime: 0, atRate: 48000)))
        #expect(before.sampleTime == -Int64(start), "before the start the player time is negative")
    }

    @Test func playWithoutATimeStartsAtTheNextRender() throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: format)
        try engine.start()
        _ = try AVAudioEngineOfflineTests.render(engine, total: 2048)
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 440, amplitude: 0.5, frames: 4800, channels: 2))
        player.play()
        let node = try #require(player.nodeTime(forPlayerTime: AVAudioTime(sampleTime: 0, atRate: 48000)))
        #expect(node.sampleTime == 2048, "started at the next render, node time 2048: \(node.sampleTime)")
        player.stop()
        #expect(player.playerTime(forNodeTime: AVAudioTime(sampleTime: 4096, atRate: 48000)) == nil, "a stopped player has no player time")
    }
}

extension AVAudioPlayerNodeStartTimeTests {
    /// Apple: "The player's sample time doesn't advance while the node is in a paused state";
    /// the player timeline leaves out "intervals during which it was paused"; stop resets it.
    @Test func pauseKeepsThePlayerTimelineAndStopResetsIt() throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: format)
        try engine.start()
        let tone = AVAudioEngineOfflineTests.toneBuffer(frequency: 440, amplitude: 0.5, frames: 48000, channels: 2)
        player.scheduleBuffer(tone)
        player.play()
        _ = try AVAudioEngineOfflineTests.render(engine, total: 4800)
        let t1 = try #require(player.lastRenderTime.flatMap { player.playerTime(forNodeTime: $0) })
        #expect(t1.sampleTime == 4800)
        player.pause()
        _ = try AVAudioEngineOfflineTests.render(engine, total: 7200)
        let paused = try #require(player.lastRenderTime.flatMap { player.playerTime(forNodeTime: $0) }, "a paused player keeps its time")
        #expect(paused.sampleTime == 4800, "the player's time does not advance while paused: \(paused.sampleTime)")
        player.play()
        let resumed = try AVAudioEngineOfflineTests.render(engine, total: 8400)
        let t2 = try #require(player.lastRenderTime.flatMap { player.playerTime(forNodeTime: $0) })
        // Before the fix the timeline restarted at the play: 1200.
        #expect(t2.sampleTime == 6000, "4800 before the pause and 1200 after it: \(t2.sampleTime)")
        let zero = try #require(player.nodeTime(forPlayerTime: AVAudioTime(sampleTime: 0, atRate: 48000)))
        #expect(zero.sampleTime == 2400, "player time 0 moved by the 2400 frames paused: \(zero.sampleTime)")
        let sample = try #require(player.nodeTime(forPlayerTime: AVAudioTime(sampleTime: 5000, atRate: 48000)))
        #expect(sample.sampleTime == 7400, "player frame 5000 was heard at node time 7400: \(sample.sampleTime)")
        // The audio goes on from frame 4800 of the buffer: player time and audio agree.
        let worst = (0..<1200).map { abs(resumed[0][$0] - tone.floatChannelData![0][4800 + $0]) }.max() ?? 1
        #expect(worst < 1e-4, "the resumed audio is the buffer from frame 4800: \(worst)")
        player.stop()
        let stoppedAt = try #require(player.lastRenderTime)
        #expect(player.playerTime(forNodeTime: stoppedAt) == nil, "a stopped player has no player time")
        player.scheduleBuffer(tone)
        player.play()
        _ = try AVAudioEngineOfflineTests.render(engine, total: 9424)
        let t3 = try #require(player.lastRenderTime.flatMap { player.playerTime(forNodeTime: $0) })
        #expect(t3.sampleTime == 1024, "after a stop the timeline starts again at the play: \(t3.sampleTime)")
    }

    /// Streamers call `play()` after every `scheduleBuffer`. On a player that is already playing,
    /// Apple's `play()` changes nothing: the player's timeline and the audio go on. Here it
    /// restarted the timeline (player time 1200 instead of 6000).
    @Test func playOnAPlayingPlayerChangesNothing() throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: format)
        try engine.start()
        let tone = AVAudioEngineOfflineTests.toneBuffer(frequency: 440, amplitude: 0.5, frames: 48000, channels: 2)
        player.scheduleBuffer(tone)
        player.play()
        _ = try AVAudioEngineOfflineTests.render(engine, total: 4800)
        player.play()
        #expect(player.isPlaying)
        let after = try AVAudioEngineOfflineTests.render(engine, total: 6000)
        let t = try #require(player.lastRenderTime.flatMap { player.playerTime(forNodeTime: $0) })
        #expect(t.sampleTime == 6000, "the second play() restarted the player's timeline: \(t.sampleTime)")
        let worst = (0..<1200).map { abs(after[0][$0] - tone.floatChannelData![0][4800 + $0]) }.max() ?? 1
        #expect(worst < 1e-4, "the audio goes on from frame 4800: \(worst)")
    }
}

@Suite struct AVAudioMixerNodeBusTests {
    @Test func aMixerTakesMoreThanSixteenInputs() throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let mixer = engine.mainMixerNode
        var players: [AVAudioPlayerNode] = []
        for i in 0..<40 {
            let p = AVAudioPlayerNode()
            engine.attach(p)
            #expect(mixer.nextAvailableInputBus == i)
            engine.connect(p, to: mixer, format: format)
            players.append(p)
        }
        #expect(mixer.numberOfInputs == 40 && mixer.nextAvailableInputBus == 40)
        try engine.start()
        for (i, p) in players.enumerated() {
            let b = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 2048))
            for c in 0..<2 { for f in 0..<2048 { b.floatChannelData![c][f] = Float(i + 1) / 1024 } }
            b.frameLength = 2048
            p.scheduleBuffer(b)
            p.play()
        }
        let out = try AVAudioEngineOfflineTests.render(engine, total: 2048)
        let expected = Float((1...40).reduce(0, +)) / 1024
        #expect(out[0].allSatisfy { abs($0 - expected) < 1e-5 }, "all 40 inputs mixed: \(out[0][100]) for \(expected)")
    }
}

@Suite struct AVAudioUnitDistortionTests {
    /// Renders `buffer` through a distortion set up by `configure`; returns the left channel.
    static func distort(_ buffer: AVAudioPCMBuffer, frames: Int, _ configure: (AVAudioUnitDistortion) -> Void) throws -> [Float] {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let player = AVAudioPlayerNode()
        let distortion = AVAudioUnitDistortion()
        configure(distortion)
        engine.attach(player)
        engine.attach(distortion)
        engine.connect(player, to: distortion, format: format)
        engine.connect(distortion, to: engine.mainMixerNode, format: format)
        try engine.start()
        player.scheduleBuffer(buffer)
        player.play()
        return try AVAudioEngineOfflineTests.render(engine, total: frames)[0]
    }

    static func tone(_ f: Double = 1000, amplitude: Float = 0.5) -> AVAudioPCMBuffer {
        AVAudioEngineOfflineTests.toneBuffer(frequency: f, amplitude: amplitude, frames: 48000, channels: 2)
    }

    @Test func allDryIsTheInputBitForBit() throws {
        let source = Self.tone()
        let out = try Self.distort(source, frames: 9600) { $0.loadFactoryPreset(.multiEverythingIsBroken); $0.wetDryMix = 0 }
        #expect(out == Array(UnsafeBufferPointer(start: source.floatChannelData![0], count: 9600)))
    }

    @Test func cubedAddsOddHarmonicsAndSquaredEvenOnes() throws {
        let cubed = try Self.distort(Self.tone(), frames: 24000) { $0.loadFactoryPreset(.multiDistortedCubed); $0.preGain = 0; $0.wetDryMix = 100 }
        let squared = try Self.distort(Self.tone(), frames: 24000) { $0.loadFactoryPreset(.multiDistortedSquared); $0.preGain = 0; $0.wetDryMix = 100 }
        func h(_ x: [Float], _ f: Double) -> Double { toneAmplitude(x, freq: f, rate: 48000, from: 4800, count: 9600) }
        #expect(h(cubed, 3000) > 0.03 && h(cubed, 2000) < 1e-3, "cubic: 3rd harmonic \(h(cubed, 3000)), 2nd \(h(cubed, 2000))")
        #expect(h(squared, 2000) > 0.1, "squared: 2nd harmonic \(h(squared, 2000))")
        #expect((cubed + squared).allSatisfy { abs($0) <= 1 }, "the soft clipper keeps the output within its 0 dB ceiling")
    }

    @Test func preGainDrivesTheClipperHarder() throws {
        func thd(_ preGain: Float) throws -> Double {
            let out = try Self.distort(Self.tone(amplitude: 0.3), frames: 24000) { $0.loadFactoryPreset(.multiDistortedCubed); $0.preGain = preGain; $0.wetDryMix = 100 }
            let f = toneAmplitude(out, freq: 1000, rate: 48000, from: 4800, count: 9600)
            let h3 = toneAmplitude(out, freq: 3000, rate: 48000, from: 4800, count: 9600)
            return h3 / f
        }
        let soft = try thd(-20), hard = try thd(20)
        #expect(hard > 10 * soft && hard > 0.05, "3rd harmonic relative to the fundamental: \(soft) at -20 dB, \(hard) at +20 dB")
    }

    @Test func decimationFoldsImagesAndRingModulationMakesSidebands() throws {
        let decimated = try Self.distort(Self.tone(), frames: 24000) { $0.loadFactoryPreset(.multiDecimated4); $0.preGain = 0; $0.wetDryMix = 100 }
        // Held over 15 samples: the rate is 3200 Hz and 1 kHz images at 3200 ± 1000.
        let image = toneAmplitude(decimated, freq: 2200, rate: 48000, from: 4800, count: 9600)
        #expect(image > 0.05, "an image at 2.2 kHz: \(image)")
        let ring = try Self.distort(Self.tone(), frames: 24000) { $0.loadFactoryPreset(.speechGoldenPi); $0.preGain = 0; $0.wetDryMix = 100 }
        let lower = toneAmplitude(ring, freq: 1000 - 314.159, rate: 48000, from: 4800, count: 19200)
        let upper = toneAmplitude(ring, freq: 1000 + 314.159, rate: 48000, from: 4800, count: 19200)
        #expect(lower > 0.08 && upper > 0.08, "sidebands at 1000 ± 314 Hz: \(lower), \(upper)")
    }

    @Test func echoPresetsRepeatAClickAfterTheirDelay() throws {
        let click = try #require(AVAudioPCMBuffer(pcmFormat: AVAudioSourceNodeTests.stereo, frameCapacity: 48000))
        for c in 0..<2 { click.floatChannelData![c].update(repeating: 0, count: 48000); click.floatChannelData![c][0] = 0.1 }
        click.frameLength = 48000
        let out = try Self.distort(click, frames: 24000) { $0.loadFactoryPreset(.multiEcho1); $0.preGain = 0; $0.wetDryMix = 100 }
        let first = out[0], echo = out[4800], second = out[9600]
        #expect(first > 0.04 && abs(echo - first) < 0.001 * first + 1e-4, "a 100 ms echo as loud as the click's direct half: \(first), \(echo)")
        #expect(second > 0.2 * echo && second < 0.5 * echo, "the next repeat decays: \(second)")
        #expect(out[1..<4800].allSatisfy { abs($0) < 1e-6 }, "nothing between")
    }

    @Test func everyPresetRendersBoundedAudio() throws {
        for raw in 0...21 {
            let preset = try #require(AVAudioUnitDistortionPreset(rawValue: raw))
            let out = try Self.distort(Self.tone(), frames: 9600) { $0.loadFactoryPreset(preset) }
            let peak = out.map { abs($0) }.max() ?? 0
            #expect(out.allSatisfy { $0.isFinite } && peak > 0.01 && peak <= 1, "\(preset): peak \(peak)")
        }
    }
}

extension AVAudioMixerNodeBusTests {
    /// Apple's mixer still renders an input whose volume is 0 (it is silenced, not skipped): a
    /// tap above it sees the audio. Before the fix the mixer did not pull it and the tap got
    /// nothing.
    @Test func anInputAtVolumeZeroIsRenderedAndSilenced() throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let format = AVAudioSourceNodeTests.stereo
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: format)
        player.volume = 0
        let lock = NSLock()
        var tapped: [Float] = []
        player.installTap(onBus: 0, bufferSize: 1024, format: format) { buffer, _ in
            lock.lock(); tapped += Array(UnsafeBufferPointer(start: buffer.floatChannelData![0], count: Int(buffer.frameLength))); lock.unlock()
        }
        try engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 440, amplitude: 0.5, frames: 48000, channels: 2))
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 9600)
        lock.lock(); let seen = tapped; lock.unlock()
        #expect(seen.count == 9600, "the tap above the volume-0 input sees every frame: \(seen.count)")
        let level = seen.count >= 9600 ? toneAmplitude(seen, freq: 440, rate: 48000, from: 0, count: 9600) : 0
        #expect(abs(level - 0.5) < 0.01, "the player rendered its tone: \(level)")
        #expect((out[0].map { abs($0) }.max() ?? 1) == 0, "the input is not heard")
        let now = try #require(player.lastRenderTime)
        #expect(now.sampleTime == 9600, "the player renders on: \(now.sampleTime)")
    }
}

/// A mono source into a stereo mixer at the pans Apple documents: `pan` −1 is "far left" and 1
/// "far right" (kMultiChannelMixerParam_Pan; AVAudioPlayer.pan: "full left", "full right"), so
/// the other channel is silent. The level per channel at pan 0 is not documented by Apple
/// (searched: AVAudioMixerNode, AVAudioStereoMixing.pan, AUMultiChannelMixer, the mixer
/// subtypes); it is printed here, not asserted (a mono input is upmixed to both channels at
/// full level, then balanced).
@Suite struct AVAudioMixerMonoPanTests {
    @Test("A mono player panned to −1 plays on the left only, to 1 on the right only", arguments: [Float(-1), 0, 1])
    func monoPanAtTheEnds(_ pan: Float) throws {
        let engine = try AVAudioSourceNodeTests.offlineEngine()
        let player = AVAudioPlayerNode()
        engine.attach(player)
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 1))
        engine.connect(player, to: engine.mainMixerNode, format: mono)
        player.pan = pan
        try engine.start()
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: 500, amplitude: 0.4, frames: 48000, channels: 1))
        player.play()
        let out = try AVAudioEngineOfflineTests.render(engine, total: 24000)
        let l = toneAmplitude(out[0], freq: 500, rate: 48000, from: 4800, count: 9600)
        let r = toneAmplitude(out[1], freq: 500, rate: 48000, from: 4800, count: 9600)
        print("mono 0.4 at pan \(pan): left \(l), right \(r)")
        switch pan {
        case -1:
            #expect(l > 0.1, "left \(l)")
            #expect(r < 1e-4, "far left: the right channel is silent (\(r))")
        case 1:
            #expect(r > 0.1, "right \(r)")
            #expect(l < 1e-4, "far right: the left channel is silent (\(l))")
        default:
            #expect(abs(l - r) < 1e-3, "centre: both channels alike (\(l), \(r))")
        }
    }
}
