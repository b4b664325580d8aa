import OATCore
import OATTestSupport
import OATUnits
import Foundation
import Testing

/// The effect nodes at 96 and 192 kHz (users of other engines report EQ and effect nodes that
/// break at high sample rates, SFB#619 in ANCHORS.md): the same settings must sound the same as
/// at 48 kHz, checked by analysis of offline renders at each rate.
@Suite("OATUnits nodes at 44.1, 96 and 192 kHz")
struct HighRateNodeTests {
    static let rates: [Double] = [44100, 96000, 192000]

    /// EQ: the measured response matches the design within 0.5 dB, and the design is the same
    /// curve at every rate where it matters (the peak's gain at its centre, the shelves' plateaus).
    @Test(arguments: rates) func eqKeepsItsResponse(rate: Double) throws {
        let bands = [
            AUEQBand(.parametric, frequency: 1000, gain: 9, bandwidth: 1),
            AUEQBand(.lowShelf, frequency: 150, gain: -6),
            AUEQBand(.highShelf, frequency: 6000, gain: 4),
        ]
        let absolute: [(Double, Double, Double)] = [(1000, 9, 0.3), (30, -6, 0.3), (18000, 4, 0.3)]  // (Hz, dB, tolerance)
        for f in [30.0, 100, 1000, 3000, 10000, 18000] {
            let eq = AUNBandEQNode(channels: 1, bands: bands)
            let n = Int(rate / 2)
            let out = try renderChain([eq], source: sineSource(channels: 1, freq: f, amp: 0.25, rate: rate), rate: rate, frames: n)[0]
            let measured = toDB(toneAmplitude(out, freq: f, rate: rate, from: n / 2, count: n / 2) / 0.25)
            #expect(abs(measured - eq.designResponse(at: f)) < 0.5, "\(rate) Hz, at \(f) Hz: measured \(measured), design \(eq.designResponse(at: f))")
            if let a = absolute.first(where: { $0.0 == f }) {
                #expect(abs(measured - a.1) < a.2, "\(rate) Hz, at \(f) Hz: \(measured) dB, expected about \(a.1) dB")
            }
        }
    }

    /// Compressor: the same static curve (levels in dB do not depend on the rate).
    @Test(arguments: rates) func compressorKeepsItsCurve(rate: Double) throws {
        for inputDB in [-30.0, -20, -10, -3] {
            let comp = AUDynamicsNode(channels: 1, threshold: -20, ratio: 4, knee: 6, attack: 0.005, release: 0.05, makeup: 2)
            let amp = Float(pow(10, inputDB / 20) * 2.0.squareRoot())
            let n = Int(rate / 2)
            let out = try renderChain([comp], source: sineSource(channels: 1, freq: 1000, amp: amp, rate: rate), rate: rate, frames: n)[0]
            let outDB = toDB(rms(out, from: n / 2, to: n))
            let expected = inputDB + AUDynamicsNode.staticGain(level: inputDB, threshold: -20, ratio: 4, knee: 6) + 2
            #expect(abs(outDB - expected) < 0.5, "\(rate) Hz, input \(inputDB) dB: output \(outDB) dB, curve \(expected) dB")
        }
    }

    /// Delay: the echo lands at the same time (so at rate x seconds samples), with its gain.
    @Test(arguments: rates) func delayKeepsItsTime(rate: Double) throws {
        let delay = AUDelayNode(channels: 1, delayTime: 0.25, feedback: 0, lowPassCutoff: Float(rate / 2), wetDryMix: 40)
        var impulse = [Float](repeating: 0, count: 10)
        impulse[0] = 1
        let d = Int(0.25 * rate)
        let out = try renderChain([delay], source: bufferSource(channels: 1, samples: impulse), rate: rate, frames: d + 1000)[0]
        #expect(abs(out[0] - 0.6) < 1e-5, "\(rate) Hz: dry \(out[0])")
        #expect(abs(out[d] - 0.4) < 1e-3, "\(rate) Hz: echo \(out[d]) at \(d)")
        #expect(out[(d - 5)..<d].allSatisfy { abs($0) < 1e-6 })
    }

    /// Reverb: the decay time set is the decay time heard (T20 extrapolated, within 30 %).
    @Test(arguments: rates) func reverbKeepsItsDecay(rate: Double) throws {
        let decay: Float = 1.0
        let reverb = AUReverbNode(channels: 1, decayTime: decay, decayAtNyquist: decay, wetDryMix: 100)
        var impulse = [Float](repeating: 0, count: 10)
        impulse[0] = 1
        let n = Int(Double(decay) * 1.2 * rate)
        let out = try renderChain([reverb], source: bufferSource(channels: 1, samples: impulse), rate: rate, frames: n)[0]
        var edc = [Double](repeating: 0, count: n)
        var acc = 0.0
        for i in stride(from: n - 1, through: 0, by: -1) { acc += Double(out[i]) * Double(out[i]); edc[i] = acc }
        let total = edc[0]
        try #require(total > 0 && total.isFinite)
        func time(at db: Double) -> Double {
            let level = total * pow(10, db / 10)
            return Double(edc.firstIndex { $0 < level } ?? n) / rate
        }
        let rt60 = (time(at: -25) - time(at: -5)) * 3
        #expect(abs(rt60 - Double(decay)) / Double(decay) < 0.3, "\(rate) Hz: set \(decay) s, measured \(rt60) s")
    }
}
