import OATCore
import OATUnits
import Foundation
import Testing

/// Deterministic white noise in −amp ... amp.
func spatialNoise(_ count: Int, amp: Float = 0.5, seed: UInt32 = 12345) -> [Float] {
    var s = seed
    return (0..<count).map { _ in
        s = s &* 1_664_525 &+ 1_013_904_223
        return (Float(s >> 8) / Float(1 << 24) * 2 - 1) * amp
    }
}

/// The lag (frames) at which `b` best matches `a` delayed: positive when `b` lags `a`.
func crossCorrelationLag(_ a: [Float], _ b: [Float], from: Int, to: Int, maxLag: Int) -> Int {
    var best = 0, bestValue = -Double.infinity
    for lag in -maxLag...maxLag {
        var s = 0.0
        for i in from..<to where i - lag >= 0 && i - lag < a.count { s += Double(a[i - lag]) * Double(b[i]) }
        if s > bestValue { bestValue = s; best = lag }
    }
    return best
}

/// Energy (dB) of `x[from..<to]` at `freq` by a single-bin DFT.
func toneLevel(_ x: [Float], freq: Double, rate: Double, from: Int, to: Int) -> Double {
    var re = 0.0, im = 0.0
    for i in from..<to {
        let w = 2 * Double.pi * freq * Double(i) / rate
        re += Double(x[i]) * cos(w); im += Double(x[i]) * sin(w)
    }
    return toDB(2 * (re * re + im * im).squareRoot() / Double(to - from))
}

@Suite("Spatial mixer by what a listener hears")
struct SpatialMixerTests {
    let rate = 48000.0

    /// Renders `source` through a one-input spatial mixer set up by `setUp`, in slices of `slice`
    /// frames, calling `perSlice` before each.
    func render(_ source: RenderNode, frames: Int, slice: Int = 480, setUp: (AUSpatialMixerNode) -> Void,
                perSlice: ((AUSpatialMixerNode, Int) -> Void)? = nil) throws -> (left: [Float], right: [Float], node: AUSpatialMixerNode) {
        let node = AUSpatialMixerNode(inputs: 1, inputChannels: 1)
        setUp(node)
        let g = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: 512)
        try g.add(source); try g.add(node)
        try g.connect(source, to: node)
        try g.connect(node, to: g.output)
        try g.commit()
        var l: [Float] = [], r: [Float] = []
        var done = 0, index = 0
        while done < frames {
            perSlice?(node, index)
            let out = g.renderOffline(frames: min(slice, frames - done))
            l += out[0]; r += out[1]
            done += out[0].count
            index += 1
        }
        return (l, r, node)
    }

    @Test func equalPowerGainsAtFrontAndSides() throws {
        for (az, wantL, wantR) in [(Float(0), 0.70710677, 0.70710677), (90, 0, 1), (-90, 1, 0)] {
            let out = try render(sineSource(channels: 1, freq: 1000, amp: 0.5, rate: rate), frames: 4800) { n in
                n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = 1
                n.parameter(AUSpatialMixerNode.ParameterID.azimuth, input: 0).value = az
            }
            let l = rms(out.left, from: 960) / (0.5 / 2.0.squareRoot()), r = rms(out.right, from: 960) / (0.5 / 2.0.squareRoot())
            print("equal power azimuth \(az): left \(l) right \(r)")
            #expect(abs(l - wantL) < 0.01 && abs(r - wantR) < 0.01, "azimuth \(az): left \(l) right \(r)")
        }
    }

    @Test func inHeadSourceIsCentred() throws {
        // The default distance 0 is inside the head: rendered as mono, whatever the azimuth.
        let out = try render(sineSource(channels: 1, freq: 1000, amp: 0.5, rate: rate), frames: 2400) { n in
            n.parameter(AUSpatialMixerNode.ParameterID.azimuth, input: 0).value = 90
        }
        #expect(abs(rms(out.left, from: 960) - rms(out.right, from: 960)) < 1e-4)
    }

    @Test func sphericalHeadRightSourceIsLouderAndEarlierOnTheRight() throws {
        let noise = spatialNoise(9600)
        let out = try render(bufferSource(channels: 1, samples: noise), frames: 9600) { n in
            n.settings(input: 0).algorithm = .sphericalHead
            n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = 1
            n.parameter(AUSpatialMixerNode.ParameterID.azimuth, input: 0).value = 90
        }
        let lag = crossCorrelationLag(out.right, out.left, from: 1000, to: 9000, maxLag: 80)
        let itd = Double(lag) / rate * 1000
        let ild = toDB(rms(out.right, from: 1000)) - toDB(rms(out.left, from: 1000))
        print("spherical head +90°: ITD \(itd) ms (model \(AUSpatialMixerNode.interauralDelay(azimuth: 90) * 1000) ms), ILD \(ild) dB")
        #expect(itd > 0.6 && itd < 0.8, "ITD \(itd) ms")
        #expect(ild > 3, "ILD \(ild) dB")
    }

    @Test func hrtfRightSourceIsLouderAndEarlierOnTheRight() throws {
        try SpatialHRTFTable.checkLibrary()
        for algorithm in [AUSpatialAlgorithm.hrtf, .hrtfHQ] {
            let noise = spatialNoise(9600)
            let out = try render(bufferSource(channels: 1, samples: noise), frames: 9600) { n in
                n.settings(input: 0).algorithm = algorithm
                n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = 1
                n.parameter(AUSpatialMixerNode.ParameterID.azimuth, input: 0).value = 90
            }
            #expect(out.node.hrtf != nil, "\(String(describing: out.node.hrtfError))")
            let lag = crossCorrelationLag(out.right, out.left, from: 1500, to: 9000, maxLag: 80)
            let itd = Double(lag) / rate * 1000
            let ild = toDB(rms(out.right, from: 1500)) - toDB(rms(out.left, from: 1500))
            print("\(algorithm) +90°: ITD \(itd) ms, ILD \(ild) dB, \(out.node.hrtf?.taps ?? 0) taps")
            #expect(itd > 0.5 && itd < 0.9, "\(algorithm): ITD \(itd) ms")
            #expect(ild > 6, "\(algorithm): ILD \(ild) dB")
        }
    }

    @Test func hrtfElevationChangesTheSpectrum() throws {
        try SpatialHRTFTable.checkLibrary()
        // Tones at 1 kHz and 8 kHz: the level difference between them changes with elevation
        // (the pinna's notches and peaks).
        var balance: [Float: Double] = [:]
        for el in [Float(0), 60] {
            let src = AURenderCallbackNode(channels: 1) { b, frames, time in
                for f in 0..<frames {
                    let t = Double(time + Int64(f)) / 48000
                    b[0][f] = Float(0.25 * sin(2 * .pi * 1000 * t) + 0.25 * sin(2 * .pi * 8000 * t))
                }
            }
            let out = try render(src, frames: 4800) { n in
                n.settings(input: 0).algorithm = .hrtfHQ
                n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = 1
                n.parameter(AUSpatialMixerNode.ParameterID.azimuth, input: 0).value = 30
                n.parameter(AUSpatialMixerNode.ParameterID.elevation, input: 0).value = el
            }
            let hi = toneLevel(out.left, freq: 8000, rate: rate, from: 1200, to: 4800)
            let lo = toneLevel(out.left, freq: 1000, rate: rate, from: 1200, to: 4800)
            balance[el] = hi - lo
        }
        let change = abs(balance[60]! - balance[0]!)
        print("HRTF elevation 0° -> 60°: 8 kHz/1 kHz balance \(balance[0]!) -> \(balance[60]!) dB (change \(change) dB)")
        #expect(change > 2, "change \(change) dB")
    }

    @Test func distanceAttenuationFollowsTheModel() throws {
        func level(_ curve: AUSpatialAttenuationCurve, _ d: Float) throws -> Double {
            let out = try render(sineSource(channels: 1, freq: 1000, amp: 0.5, rate: rate), frames: 4800) { n in
                let s = n.settings(input: 0)
                s.curve = curve; s.referenceDistance = 2; s.maximumDistance = 20; s.rolloffFactor = 1.5
                n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = d
            }
            return toDB(rms(out.left, from: 960))
        }
        for curve in [AUSpatialAttenuationCurve.inverse, .exponential, .linear] {
            let ref = try level(curve, 2), far = try level(curve, 8)
            let want: Double
            switch curve {
            case .inverse: want = toDB(2 / (2 + 1.5 * 6))
            case .exponential: want = toDB(pow(8.0 / 2, -1.5))
            default: want = toDB(1 - 1.5 * 6 / 18)
            }
            print("distance \(curve) 2 m -> 8 m: \(far - ref) dB (model \(want) dB)")
            #expect(abs((far - ref) - want) < 0.2, "\(curve): \(far - ref) dB, want \(want)")
        }
    }

    @Test func obstructionAttenuatesFiveKilohertzByItsDecibels() throws {
        func level(_ dB: Float, freq: Double) throws -> Double {
            let out = try render(sineSource(channels: 1, freq: freq, amp: 0.5, rate: rate), frames: 4800) { n in
                n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = 1
                n.parameter(AUSpatialMixerNode.ParameterID.obstruction, input: 0).value = dB
            }
            return toDB(rms(out.left, from: 1200))
        }
        let drop5k = try level(-20, freq: 5000) - level(0, freq: 5000)
        let drop200 = try level(-20, freq: 200) - level(0, freq: 200)
        print("obstruction -20 dB: 5 kHz \(drop5k) dB, 200 Hz \(drop200) dB")
        #expect(abs(drop5k + 20) < 1, "5 kHz: \(drop5k) dB")
        #expect(drop200 > -3, "200 Hz: \(drop200) dB")
    }

    @Test func movingSourceDoesNotClick() throws {
        // A 500 Hz tone swept from −90° to +90° in 2° steps per 5 ms slice: the largest
        // sample-to-sample step stays near the tone's own (2π·500/48000·A per sample).
        for algorithm in [AUSpatialAlgorithm.equalPowerPanning, .sphericalHead, .hrtf] {
            let amp: Float = 0.5
            let out = try render(sineSource(channels: 1, freq: 500, amp: amp, rate: rate), frames: 19200, slice: 240) { n in
                n.settings(input: 0).algorithm = algorithm
                n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = 1
                n.parameter(AUSpatialMixerNode.ParameterID.azimuth, input: 0).value = -90
            } perSlice: { n, i in
                n.parameter(AUSpatialMixerNode.ParameterID.azimuth, input: 0).value = min(90, -90 + Float(i) * 2)
            }
            var worst: Float = 0
            for ch in [out.left, out.right] {
                for i in 1200..<ch.count { worst = max(worst, abs(ch[i] - ch[i - 1])) }
            }
            let own = Float(2 * Double.pi * 500 / rate) * amp
            print("\(algorithm) moving: largest step \(worst) (tone's own \(own))")
            #expect(worst < 2 * own, "\(algorithm): step \(worst) vs \(own)")
            // The measure catches a discontinuity: the louder ear's output with its sign flipped
            // from a peak on (a jump of twice the peak) has a step far beyond the bound.
            var cut = rms(out.right, from: 9600, to: 9696) > rms(out.left, from: 9600, to: 9696) ? out.right : out.left
            let peak = (9600..<9696).max { abs(cut[$0]) < abs(cut[$1]) }!
            for i in peak..<cut.count { cut[i] = -cut[i] }
            var cutWorst: Float = 0
            for i in 1200..<cut.count { cutWorst = max(cutWorst, abs(cut[i] - cut[i - 1])) }
            #expect(cutWorst > 2 * own, "\(algorithm): a cut gives \(cutWorst)")
        }
    }

    @Test func renderingFlagsTurnOffDistanceAndDelay() throws {
        // Without distance attenuation a source at 8 m is as loud as at 1 m; without the
        // interaural delay the spherical head's ears are aligned.
        let far = try render(sineSource(channels: 1, freq: 1000, amp: 0.5, rate: rate), frames: 2400) { n in
            n.settings(input: 0).renderingFlags = 0b001
            n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = 8
        }
        #expect(abs(toDB(rms(far.left, from: 960)) - toDB(0.25)) < 0.1)
        let noise = spatialNoise(4800)
        let aligned = try render(bufferSource(channels: 1, samples: noise), frames: 4800) { n in
            n.settings(input: 0).algorithm = .sphericalHead
            n.settings(input: 0).renderingFlags = 0b100
            n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = 1
            n.parameter(AUSpatialMixerNode.ParameterID.azimuth, input: 0).value = 90
        }
        // Only the head-shadow filters' own phase is left (a few frames; the delay alone is 31).
        let lag = crossCorrelationLag(aligned.right, aligned.left, from: 1000, to: 4500, maxLag: 80)
        print("spherical head +90° without the interaural delay: lag \(lag) frames")
        #expect(abs(lag) < 10, "lag \(lag)")
    }

    @Test func headYawTurnsTheScene() throws {
        // A source ahead, the head turned 90° to the left: the source is now on the right.
        let out = try render(sineSource(channels: 1, freq: 1000, amp: 0.5, rate: rate), frames: 2400) { n in
            n.parameter(AUSpatialMixerNode.ParameterID.distance, input: 0).value = 1
            n.parameters.first { $0.id == AUSpatialMixerNode.ParameterID.headYaw }!.value = -90
        }
        #expect(rms(out.right, from: 960) > 0.35 && rms(out.left, from: 960) < 0.01)
    }

    @Test func missingSOFAFileIsAnError() {
        #expect(throws: AudioError.self) { try SpatialHRTFTable(path: "/nonexistent/set.sofa", sampleRate: 48000) }
    }
}
