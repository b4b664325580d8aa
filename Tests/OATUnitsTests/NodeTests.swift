import OATTestSupport
import OATCore
import OATUnits
import Foundation
import Synchronization
import Testing

/// Builds `source -> node -> output` (mono unless told) and renders `frames`.
func renderChain(_ nodes: [RenderNode], source: RenderNode, channels: Int = 1, rate: Double = 48000, frames: Int) throws -> [[Float]] {
    let g = try AudioGraph(sampleRate: rate, channels: channels, maxFramesPerSlice: 512)
    try g.add(source)
    var last: RenderNode = source
    for n in nodes {
        try g.add(n)
        try g.connect(last, to: n)
        last = n
    }
    try g.connect(last, to: g.output)
    try g.commit()
    return g.renderOffline(frames: frames)
}

@Suite("OATUnits nodes by offline analysis")
struct NodeTests {
    let rate = 48000.0

    @Test func eqMagnitudeMatchesTheDesignWithinHalfADecibel() throws {
        let bands = [
            AUEQBand(.parametric, frequency: 1000, gain: 9, bandwidth: 1),
            AUEQBand(.lowShelf, frequency: 150, gain: -6),
            AUEQBand(.highShelf, frequency: 6000, gain: 4),
            AUEQBand(.bandStop, frequency: 3000, gain: 0, bandwidth: 0.5),
            AUEQBand(.highPass, frequency: 40),
        ]
        let probes: [Double] = [50, 100, 200, 500, 800, 1000, 1300, 2000, 2800, 3300, 4000, 8000, 12000]
        for f in probes {
            let eq = AUNBandEQNode(channels: 1, bands: bands)
            let out = try renderChain([eq], source: sineSource(channels: 1, freq: f, amp: 0.25, rate: rate), frames: 24000)[0]
            let measured = toDB(toneAmplitude(out, freq: f, rate: rate, from: 12000, count: 12000) / 0.25)
            let design = eq.designResponse(at: f)
            #expect(abs(measured - design) < 0.5, "at \(f) Hz: measured \(measured) dB, design \(design) dB")
        }
        // The design itself: the peaking band gives its gain at its centre.
        let peak = BiquadCoefficients.design(.parametric, frequency: 1000, gain: 9, bandwidth: 1, sampleRate: rate)
        #expect(abs(toDB(peak.magnitude(at: 1000, sampleRate: rate)) - 9) < 0.01)
    }

    @Test func graphicPresetHasTheIsoCentres() throws {
        let gains: [Float] = [6, 0, 0, 0, 0, -6, 0, 0, 0, 3]
        let eq = AUNBandEQNode.graphic(channels: 1, gains: gains)
        #expect(eq.bandCount == 10)
        #expect(eq.frequency(0).value == 31.25 && eq.frequency(9).value == 16000)
        for (i, f) in [31.25, 1000.0, 16000.0].enumerated() {
            let e = AUNBandEQNode.graphic(channels: 1, gains: gains)
            let out = try renderChain([e], source: sineSource(channels: 1, freq: f, amp: 0.25, rate: rate), frames: 48000)[0]
            let measured = toDB(toneAmplitude(out, freq: f, rate: rate, from: 24000, count: 24000) / 0.25)
            #expect(abs(measured - e.designResponse(at: f)) < 0.5, "probe \(i) at \(f) Hz")
        }
    }

    @Test func eqGainChangesDoNotClick() throws {
        // Step a band's gain by 18 dB while a 200 Hz sine plays: the output's sample-to-sample
        // change stays near that of the sine itself (no jump).
        let g = try AudioGraph(sampleRate: rate, channels: 1, maxFramesPerSlice: 256)
        let src = sineSource(channels: 1, freq: 200, amp: 0.3, rate: rate)
        let eq = AUNBandEQNode(channels: 1, bands: [AUEQBand(.parametric, frequency: 200, gain: 0, bandwidth: 1)])
        try g.add(src); try g.add(eq)
        try g.connect(src, to: eq); try g.connect(eq, to: g.output)
        try g.commit()
        var out = g.renderOffline(frames: 4800)[0]
        eq.gain(0).value = 18
        out += g.renderOffline(frames: 9600)[0]
        var worst: Float = 0
        for i in 1..<out.count { worst = max(worst, abs(out[i] - out[i - 1])) }
        // The largest step of a 200 Hz sine of amplitude 0.3 * 7.94 (+18 dB) is about 0.062.
        #expect(worst < 0.075)
        #expect(abs(toDB(toneAmplitude(out, freq: 200, rate: rate, from: 9600, count: 4800) / 0.3) - 18) < 0.5)
    }

    @Test func mixerGainAndConstantPowerPanLaw() throws {
        let g = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: 512)
        let mixer = AUMixerNode(inputs: 3, inputChannels: 1, outputChannels: 2)
        let a = bufferSource(channels: 1, samples: [Float](repeating: 0.5, count: 48000))
        let b = bufferSource(channels: 1, samples: [Float](repeating: 0.25, count: 48000))
        let c = bufferSource(channels: 1, samples: [Float](repeating: 1, count: 48000))
        for n in [mixer, a, b, c] as [RenderNode] { try g.add(n) }
        try g.connect(a, to: mixer, input: 0)
        try g.connect(b, to: mixer, input: 1)
        try g.connect(c, to: mixer, input: 2)
        try g.connect(mixer, to: g.output)
        mixer.pan(input: 0).value = -1          // hard left
        mixer.pan(input: 1).value = 0.5
        mixer.volume(input: 1).value = 2
        mixer.enable(input: 2).value = 0         // muted
        mixer.masterVolume.value = 0.5
        try g.commit()
        let out = g.renderOffline(frames: 4800)
        let theta = (0.5 + 1) * Double.pi / 4
        let expectL = 0.5 * (0.5 + 0.25 * 2 * cos(theta))
        let expectR = 0.5 * (0.25 * 2 * sin(theta))
        #expect(abs(Double(out[0][4000]) - expectL) < 1e-5)
        #expect(abs(Double(out[1][4000]) - expectR) < 1e-5)
        // Constant power at every pan for a mono input.
        for p in stride(from: Float(-1), through: 1, by: 0.25) {
            let gains = AUMixerNode.panGains(pan: p, inputChannels: 1)
            #expect(abs(gains.left * gains.left + gains.right * gains.right - 1) < 1e-5)
        }
        let centre = AUMixerNode.panGains(pan: 0, inputChannels: 1)
        #expect(abs(toDB(Double(centre.left)) + 3.0103) < 0.01)
        // Stereo inputs: unity at the centre, balance at the sides.
        let s = AUMixerNode.panGains(pan: 0, inputChannels: 2)
        #expect(abs(s.left - 1) < 1e-6 && abs(s.right - 1) < 1e-6)
        let r = AUMixerNode.panGains(pan: 1, inputChannels: 2)
        #expect(abs(r.left) < 1e-6 && abs(r.right - 1) < 1e-6)
    }

    @Test func compressorStaticCurveWithinHalfADecibel() throws {
        for inputDB in [-40.0, -30, -24, -20, -16, -10, -6, -3] {
            let comp = AUDynamicsNode(channels: 1, threshold: -20, ratio: 4, knee: 6, attack: 0.005, release: 0.05, makeup: 2)
            let amp = Float(pow(10, inputDB / 20) * 2.0.squareRoot())     // sine RMS = inputDB
            let out = try renderChain([comp], source: sineSource(channels: 1, freq: 1000, amp: amp, rate: rate), frames: 24000)[0]
            let outDB = toDB(rms(out, from: 12000, to: 24000))
            let expected = inputDB + AUDynamicsNode.staticGain(level: inputDB, threshold: -20, ratio: 4, knee: 6) + 2
            #expect(abs(outDB - expected) < 0.5, "input \(inputDB) dB: output \(outDB) dB, curve \(expected) dB")
        }
    }

    @Test func limiterCeilingIsNeverExceeded() throws {
        // Bursts of loud noise and sharp transients, pushed by +12 dB of pre-gain.
        var samples = [Float](repeating: 0, count: 96000)
        var seed: UInt32 = 12345
        for i in 0..<samples.count {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let noise = Float(Int32(bitPattern: seed)) / Float(Int32.max)
            let burst: Float = (i / 4800) % 3 == 0 ? 1 : 0.1
            samples[i] = noise * burst + ((i % 9000) == 0 ? 1 : 0)
        }
        let limiter = AUPeakLimiterNode(channels: 1, ceiling: -1, lookahead: 0.005, release: 0.01, preGain: 12)
        let out = try renderChain([limiter], source: bufferSource(channels: 1, samples: samples), frames: samples.count)[0]
        let ceiling = Float(pow(10, -1.0 / 20))
        let peak = out.map { abs($0) }.max() ?? 0
        #expect(peak <= ceiling + 1e-6)
        #expect(peak > ceiling * 0.9)          // it does reach the ceiling
        // The quiet parts (−20 dB + 12 dB) pass at their level, delayed by the look-ahead.
        let delay = Int(0.005 * rate)
        let quiet = rms(out, from: 6800 + delay, to: 8900 + delay)
        let quietIn = rms(samples, from: 6800, to: 8900) * pow(10, 12.0 / 20)
        #expect(abs(toDB(quiet) - toDB(quietIn)) < 0.5)
    }

    @Test func reverbTailDecaysAtRoughlyTheSetRT60() throws {
        for decay: Float in [0.8, 2.0] {
            let reverb = AUReverbNode(channels: 1, decayTime: decay, decayAtNyquist: decay, wetDryMix: 100)
            var impulse = [Float](repeating: 0, count: 10)
            impulse[0] = 1
            let n = Int(Double(decay) * 1.2 * rate)
            let out = try renderChain([reverb], source: bufferSource(channels: 1, samples: impulse), frames: n)[0]
            // Schroeder backward integration of the energy.
            var edc = [Double](repeating: 0, count: n)
            var acc = 0.0
            for i in stride(from: n - 1, through: 0, by: -1) { acc += Double(out[i]) * Double(out[i]); edc[i] = acc }
            let total = edc[0]
            #expect(total > 0)
            func time(at db: Double) -> Double {
                let level = total * pow(10, db / 10)
                return Double(edc.firstIndex { $0 < level } ?? n) / rate
            }
            // T20 (−5 to −25 dB) extrapolated to 60 dB. The integration limit truncates the
            // tail, so stay within the first 25 dB.
            let rt60 = (time(at: -25) - time(at: -5)) * 3
            #expect(abs(rt60 - Double(decay)) / Double(decay) < 0.3, "set \(decay) s, measured \(rt60) s")
            // Tail energy decreases block by block.
            let block = Int(rate / 10)
            let energies = (0..<(n / block)).map { rms(out, from: $0 * block, to: ($0 + 1) * block) }
            for i in 2..<energies.count { #expect(energies[i] < energies[i - 1] * 1.05) }
        }
    }

    @Test func delayEchoAtTheRightSampleWithTheRightGain() throws {
        let delay = AUDelayNode(channels: 1, delayTime: 0.25, feedback: 50, lowPassCutoff: 24000, wetDryMix: 40)
        var impulse = [Float](repeating: 0, count: 10)
        impulse[0] = 1
        let out = try renderChain([delay], source: bufferSource(channels: 1, samples: impulse), frames: 30000)[0]
        let d = 12000
        #expect(abs(out[0] - 0.6) < 1e-5)                  // dry
        #expect(abs(out[d] - 0.4) < 1e-5)                  // first echo: wet gain, exact sample
        #expect(out[(d - 5)..<d].allSatisfy { abs($0) < 1e-6 })
        #expect(out[(d + 1)..<(d + 50)].allSatisfy { abs($0) < 1e-3 })
        // The second echo carries the feedback (through the loop's low pass, nearly flat here).
        let second = out[(2 * d - 3)...(2 * d + 3)].reduce(0, +)
        #expect(abs(second - 0.2) < 0.02)
    }

    @Test func varispeedScalesLengthAndFrequency() throws {
        for rate in [0.5, 1.5, 2.0] as [Float] {
            let vs = AUVarispeedNode(channels: 1, rate: rate)
            let frames = 48000
            let out = try renderChain([vs], source: sineSource(channels: 1, freq: 440, amp: 0.5, rate: self.rate), frames: frames)[0]
            let consumed = Double(vs.consumedFrames)
            #expect(abs(consumed / Double(frames) - Double(rate)) < 0.01, "rate \(rate): consumed \(consumed)")
            let f = zeroCrossingFrequency(out, rate: self.rate, from: 4800, to: frames)
            #expect(abs(f / (440 * Double(rate)) - 1) < 0.005, "rate \(rate): \(f) Hz")
        }
    }

    @Test func converterSplitterAndTap() throws {
        let g = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: 256)
        let src = bufferSource(channels: 1, samples: (0..<4800).map { Float($0 % 100) / 100 })
        let conv = AUFormatConverterNode(inputChannels: 1, outputChannels: 2)
        let tap = AUTapNode(channels: 2, capacityFrames: 8192)
        for n in [src, conv, tap] as [RenderNode] { try g.add(n) }
        try g.connect(src, to: conv); try g.connect(conv, to: tap); try g.connect(tap, to: g.output)
        try g.commit()
        let out = g.renderOffline(frames: 1000)
        #expect(out[0][57] == 0.57 as Float && out[1][57] == 0.57 as Float)
        var read = [Float](repeating: 0, count: 4000)
        let n = read.withUnsafeMutableBufferPointer { tap.read(into: $0) }
        #expect(n == 1000)
        #expect(read[2 * 57] == out[0][57] && read[2 * 57 + 1] == out[1][57])
        #expect(tap.droppedFrames == 0)
    }

    @Test func playerPlaysScheduledFramesAndAFeeder() throws {
        let g = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: 256)
        let player = AUPlayerNode(channels: 2)
        try g.add(player)
        try g.connect(player, to: g.output)
        try g.commit()
        var frames = [Float](repeating: 0, count: 2000)
        for i in 0..<1000 { frames[2 * i] = Float(i) / 1000; frames[2 * i + 1] = -Float(i) / 1000 }
        player.scheduleAll(frames)
        player.endOfInput()
        let out = g.renderOffline(frames: 1200)
        #expect(out[0][500] == 0.5 && out[1][500] == -0.5)
        #expect(out[0][1100] == 0)
        #expect(player.isFinished && player.playedFrames == 1000)

        // An AudioPCMBuffer (mono, non-interleaved) goes to both channels.
        let pcm = try AudioPCMBuffer(format: .canonicalFloat(sampleRate: 48000, channels: 1), frameCapacity: 100)
        pcm.frameLength = 100
        for i in 0..<100 { pcm.floatChannel(0)![i] = 0.25 }
        let p1 = AUPlayerNode(channels: 2)
        let g1 = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: 256)
        try g1.add(p1)
        try g1.connect(p1, to: g1.output)
        try g1.commit()
        try p1.scheduleBuffer(pcm)
        let o1 = g1.renderOffline(frames: 128)
        #expect(o1[0][99] == 0.25 && o1[1][99] == 0.25 && o1[0][100] == 0)

        // A feeder thread pulling a counter.
        let p2 = AUPlayerNode(channels: 2, bufferFrames: 4096)
        try g.remove(player)
        try g.add(p2)
        try g.connect(p2, to: g.output)
        try g.commit()
        let counter = Locked(0)
        p2.play(from: { buffer in
            counter.withLock { c in
                let n = min(buffer.count / 2, 20000 - c)
                for i in 0..<n { buffer[2 * i] = Float(c + i); buffer[2 * i + 1] = 0 }
                c += n
                return n
            }
        })
        var got: [Float] = []
        let deadline = Date().addingTimeInterval(10)
        while !p2.isFinished && Date() < deadline {
            if p2.bufferedFrames < 512 && !p2.isInputEnded { usleep(2000); continue }
            got += g.renderOffline(frames: 512)[0]
        }
        got += g.renderOffline(frames: 512)[0]
        let played = got.prefix(20000)
        #expect(played.count == 20000)
        #expect(played.enumerated().allSatisfy { Float($0.offset) == $0.element })
        p2.stop()
    }
}
