// Changes to a running engine's graph (a tap installed and removed, a node attached, connected,
// disconnected and detached while it renders) happen on the running engine, as on Apple: the
// engine's sample time and a playing player's timeline go on, and the player's audio continues
// where it was (checked by the phase of the sine it plays). They rebuilt the graph: the clocks
// went back to 0 and up to a second of the player's audio was lost.
import OATTestSupport
import Foundation
import OpenAVFAudio
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The times a render left behind: the output's, the main mixer's and the player's node
/// times, and the player's time.
private struct Clocks: CustomStringConvertible {
    var output: Int64?
    var mixer: Int64?
    var player: Int64?
    var playerTime: Int64?

    init(_ engine: AVAudioEngine, _ player: AVAudioPlayerNode) {
        output = engine.outputNode.lastRenderTime?.sampleTime
        mixer = engine.mainMixerNode.lastRenderTime?.sampleTime
        let node = player.lastRenderTime
        self.player = node?.sampleTime
        playerTime = node.flatMap { player.playerTime(forNodeTime: $0)?.sampleTime }
    }

    var description: String {
        "output \(output.map(String.init) ?? "nil"), mixer \(mixer.map(String.init) ?? "nil"), player \(player.map(String.init) ?? "nil"), player time \(playerTime.map(String.init) ?? "nil")"
    }
}

/// The phase (radians) of `frequency` Hz in `samples` at `rate`, relative to a sine starting at
/// index `start` of the whole signal: 0 all along for a continuous sine with no lost frames.
func phaseOffset(_ samples: ArraySlice<Float>, start: Int, frequency: Double, rate: Double) -> (phase: Double, amplitude: Double) {
    var re = 0.0, im = 0.0
    for (k, v) in samples.enumerated() {
        let w = 2 * Double.pi * frequency * Double(start + k) / rate
        re += Double(v) * cos(w)
        im += Double(v) * sin(w)
    }
    let n = Double(samples.count)
    return (atan2(re, im), 2 * (re * re + im * im).squareRoot() / n)
}

/// Wraps an angle into -pi ... pi.
func wrapped(_ a: Double) -> Double {
    var x = a.truncatingRemainder(dividingBy: 2 * .pi)
    if x > .pi { x -= 2 * .pi }
    if x < -.pi { x += 2 * .pi }
    return x
}

@Suite struct AVAudioEngineLiveChangeTests {
    @Test("Offline: sample times and the player's time go on across installTap, removeTap, attach/connect, disconnect/detach; the sine's phase continues")
    func offlineClocksAndAudioContinueAcrossChanges() throws {
        let rate = 48000.0
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: rate, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        engine.attach(player)
        let mono = try #require(AVAudioFormat(standardFormatWithSampleRate: rate, channels: 1))
        engine.connect(player, to: engine.mainMixerNode, format: mono)
        let frequency = 437.0
        player.scheduleBuffer(AVAudioEngineOfflineTests.toneBuffer(frequency: frequency, amplitude: 0.5, frames: 5 * 48000))
        try engine.start()
        player.play()

        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 1024))
        var left: [Float] = []
        var clocks: [Clocks] = []
        var stages: [(name: String, at: Int)] = []
        func render(_ calls: Int) throws {
            for _ in 0..<calls {
                #expect(try engine.renderOffline(1024, to: buffer) == .success)
                left += Array(UnsafeBufferPointer(start: buffer.floatChannelData![0], count: Int(buffer.frameLength)))
                clocks.append(Clocks(engine, player))
            }
        }
        try render(8)
        let tapped = Atomic<Int>(0)
        // The tap's buffers carry the node's time: from the time it was installed, contiguous.
        let tapTimes = Locked<[(Int64, Int)]>([])
        stages.append(("installTap", clocks.count))
        engine.mainMixerNode.installTap(onBus: 0, bufferSize: 1024, format: nil) { b, when in
            tapped.add(Int(b.frameLength), ordering: .relaxed)
            tapTimes.withLock { $0.append((when.sampleTime, Int(b.frameLength))) }
        }
        try render(8)
        stages.append(("removeTap", clocks.count))
        engine.mainMixerNode.removeTap(onBus: 0)
        try render(8)
        // A second player on a new mixer bus (the mixer's unit grows a bus).
        let second = AVAudioPlayerNode()
        stages.append(("attach+connect", clocks.count))
        engine.attach(second)
        engine.connect(second, to: engine.mainMixerNode, format: mono)
        try render(8)
        stages.append(("disconnect+detach", clocks.count))
        engine.disconnectNodeOutput(second)
        engine.detach(second)
        try render(8)
        #expect(tapped.load(ordering: .relaxed) >= 8 * 1024 - 1024, "the tap received \(tapped.load(ordering: .relaxed)) frames")
        let times = tapTimes.withLock { $0 }
        let firstTapTime: Int64 = times.first.map { $0.0 } ?? -1
        #expect(firstTapTime == Int64(8 * 1024), "the tap's first buffer is at node time \(firstTapTime), where it was installed (8192)")
        for (a, b) in zip(times, times.dropFirst()) where b.0 != a.0 + Int64(a.1) {
            Issue.record("the tap's times are not contiguous: \(a) then \(b)")
        }

        // Every clock advances by exactly the frames of each render, through every change.
        for (i, c) in clocks.enumerated() {
            let expected = Int64((i + 1) * 1024)
            let stage = stages.last { $0.at <= i }?.name ?? "start"
            #expect(c.output == expected && c.mixer == expected && c.player == expected, "render \(i) (after \(stage)): \(c)")
            #expect(c.playerTime == expected, "render \(i) (after \(stage)): the player's time is \(c.playerTime.map(String.init) ?? "nil"), not \(expected)")
        }
        // The sine goes on without a jump: fitted over the first renders (before any change),
        // it matches every frame after them. Lost or repeated frames leave a residual of the
        // sine's size.
        let w = 2 * Double.pi * frequency / rate
        var (ss, sc, cc, ys, yc) = (0.0, 0.0, 0.0, 0.0, 0.0)
        for n in 1024..<7168 {
            let (a, b) = (sin(w * Double(n)), cos(w * Double(n)))
            ss += a * a; sc += a * b; cc += b * b; ys += Double(left[n]) * a; yc += Double(left[n]) * b
        }
        let det = ss * cc - sc * sc
        let (ampS, ampC) = ((ys * cc - yc * sc) / det, (yc * ss - ys * sc) / det)
        #expect((ampS * ampS + ampC * ampC).squareRoot() > 0.2, "the player is heard (\(ampS), \(ampC))")
        var worst = 0.0, worstAt = 0
        for n in 1024..<left.count {
            let d = abs(Double(left[n]) - ampS * sin(w * Double(n)) - ampC * cos(w * Double(n)))
            if d > worst { worst = d; worstAt = n }
        }
        #expect(worst < 0.005, "the sine jumps at frame \(worstAt) (render \(worstAt / 1024), off by \(worst)); changes at renders \(stages)")
        player.stop()
        engine.stop()
    }

    /// Buffers at 44.1 kHz played by a 48 kHz engine go through the player's converter, which the
    /// next buffer takes over (same format): the converter holds back the last frames of a buffer
    /// until the next one's arrive. A `.dataRendered` handler must wait for them.
    @Test("Offline: .dataRendered of resampled consecutive buffers fires once the buffer's last frame is rendered, not before")
    func dataRenderedWaitsForTheFramesTheConverterHolds() throws {
        let engine = AVAudioEngine()
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        try engine.enableManualRenderingMode(.offline, format: format, maximumFrameCount: 1024)
        let player = AVAudioPlayerNode()
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: nil)
        try engine.start()
        let count = 6
        final class Box: @unchecked Sendable { var callEnd: Int64 = 0; var fired: [Int: Int64] = [:] }
        let box = Box()
        for i in 0..<count {
            let b = AVAudioEngineOfflineTests.toneBuffer(frequency: 300 + 100 * Double(i), amplitude: 0.4, frames: 4410, rate: 44100)
            player.scheduleBuffer(b, at: nil, options: [], completionCallbackType: .dataRendered) { _ in box.fired[i] = box.callEnd }
        }
        player.play()
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 1024))
        // Small renders: the time a handler fires is known to 8 frames.
        let step: AVAudioFrameCount = 8
        while engine.manualRenderingSampleTime < Int64(count * 4800 + 4800) {
            box.callEnd = engine.manualRenderingSampleTime + Int64(step)
            #expect(try engine.renderOffline(step, to: buffer) == .success)
        }
        for i in 0..<count {
            let fired = try #require(box.fired[i], "buffer \(i)'s handler never ran")
            // Buffer i ends at (i + 1) * 4410 frames of 44.1 kHz: (i + 1) * 4800 at 48 kHz.
            let end = Int64((i + 1) * 4800)
            #expect(fired >= end, "buffer \(i): .dataRendered with \(fired) frames rendered, \(end - fired) before its end at \(end)")
            #expect(fired <= end + 2 * Int64(step), "buffer \(i): .dataRendered \(fired - end) frames after its end at \(end)")
        }
        player.stop()
        engine.stop()
    }
}

/// The same at a real device: a private PulseAudio daemon's null sink, recorded from its monitor.
@Suite(.serialized, .requires(TestResource.pulseAudioMissing))
struct PlaybackAVAudioEngineLiveChangeTests {
    @Test("At a PulseAudio sink: installTap, removeTap and a connect while playing keep the clocks going and the sine continuous")
    func changesWhilePlayingAtASink() throws {
        try withEngineAtPulseSink { daemon in
            let recording = try daemon.recordMonitor(to: "\(daemon.directory)/monitor.raw")
            let engine = AVAudioEngine()
            let player = AVAudioPlayerNode()
            engine.attach(player)
            engine.connect(player, to: engine.mainMixerNode, format: nil)
            let frequency = 523.25, seconds = 3.0
            let tone = AVAudioEngineOfflineTests.toneBuffer(frequency: frequency, amplitude: 0.3, frames: Int(seconds * 48000), channels: 2)
            player.scheduleBuffer(tone, at: nil)
            try engine.start()
            #expect(engine.outputNode.outputFormat(forBus: 0).sampleRate == 48000 || engine.outputNode.inputFormat(forBus: 0).sampleRate == 48000)
            player.play()
            var samples: [Clocks] = []
            var events: [(String, Int)] = []
            let second = AVAudioPlayerNode()
            let began = Date()
            let tapped = Atomic<Int>(0)
            let firstTapTime = Locked<Int64?>(nil)
            var done = (tap: false, untap: false, connect: false)
            while Date().timeIntervalSince(began) < seconds + 0.4 {
                let t = Date().timeIntervalSince(began)
                if t > 0.8 && !done.tap {
                    done.tap = true
                    events.append(("installTap", samples.count))
                    engine.mainMixerNode.installTap(onBus: 0, bufferSize: 2048, format: nil) { b, when in
                        tapped.add(Int(b.frameLength), ordering: .relaxed)
                        firstTapTime.withLock { if $0 == nil { $0 = when.sampleTime } }
                    }
                } else if t > 1.4 && !done.untap {
                    done.untap = true
                    events.append(("removeTap", samples.count))
                    engine.mainMixerNode.removeTap(onBus: 0)
                } else if t > 2.0 && !done.connect {
                    done.connect = true
                    events.append(("attach+connect", samples.count))
                    engine.attach(second)
                    engine.connect(second, to: engine.mainMixerNode, format: nil)
                }
                samples.append(Clocks(engine, player))
                usleep(20_000)
            }
            engine.stop()
            let recorded = recording.stop()
            #expect(tapped.load(ordering: .relaxed) > 0, "the tap installed while running received audio")
            // Its buffers carry the node's time (installed 0.8 s in), not a count from 0.
            let tapTime = firstTapTime.withLock { $0 }
            #expect((tapTime ?? 0) > Int64(0.5 * 48000), "the tap's first buffer is at node time \(String(describing: tapTime))")

            // The clocks never go back.
            for i in 1..<samples.count {
                let (a, b) = (samples[i - 1], samples[i])
                let stage = events.last { $0.1 <= i }?.0 ?? "start"
                #expect((b.output ?? -1) >= (a.output ?? Int64.max), "the output's sample time went back after \(stage): \(a) -> \(b)")
                #expect((b.playerTime ?? -1) >= (a.playerTime ?? Int64.max), "the player's time went back after \(stage): \(a) -> \(b)")
            }
            let last = try #require(samples.last?.output)
            #expect(Double(last) > 0.8 * (seconds + 0.3) * 48000, "the output rendered \(last) frames in \(seconds + 0.4) s")

            // The sine arrives whole: no gap, no lost frames (its phase never jumps), all of it.
            let left = stride(from: 0, to: recorded.count, by: 2).map { recorded[$0] }
            let first = try #require(left.firstIndex { abs($0) > 0.02 }, "nothing was heard")
            let lastLoud = try #require(left.lastIndex { abs($0) > 0.02 })
            let heard = Double(lastLoud - first) / 48000
            #expect(abs(heard - seconds) < 0.03, "the tone lasted \(heard) s of its \(seconds) s (changes: \(events.map(\.0)))")
            let window = 480
            let reference = phaseOffset(left[(first + 960)..<(first + 960 + window)], start: first + 960, frequency: frequency, rate: 48000)
            var worst = 0.0, worstAt = 0
            for start in stride(from: first + 960, to: lastLoud - 960, by: window) {
                let w = phaseOffset(left[start..<(start + window)], start: start, frequency: frequency, rate: 48000)
                let d = max(abs(wrapped(w.phase - reference.phase)), abs(w.amplitude - reference.amplitude) / reference.amplitude)
                if d > worst { worst = d; worstAt = start }
            }
            print("live changes at a sink: heard \(heard) s, worst phase/amplitude deviation \(worst) at \(Double(worstAt - first) / 48000) s")
            #expect(worst < 0.2, "the sine jumps \(Double(worstAt - first) / 48000) s in (deviation \(worst)); changes: \(events.map(\.0))")
        }
    }
}
