import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// Band filter shapes of ``AUNBandEQNode`` (raw values are Apple's `kAUNBandEQFilterType_*`).
public enum AUEQFilterType: Int, Sendable, CaseIterable {
    /// Peaking (bell): `gain` dB at `frequency`, `bandwidth` octaves wide.
    case parametric = 0
    /// 2nd-order Butterworth low pass (Q = 1/√2) at `frequency`.
    case lowPass = 1
    /// 2nd-order Butterworth high pass (Q = 1/√2) at `frequency`.
    case highPass = 2
    /// Resonant low pass: Q = (1/√2)·10^(gain/20).
    case resonantLowPass = 3
    /// Resonant high pass: Q = (1/√2)·10^(gain/20).
    case resonantHighPass = 4
    /// Band pass (0 dB at `frequency`), `bandwidth` octaves wide.
    case bandPass = 5
    /// Notch (band stop) at `frequency`, `bandwidth` octaves wide.
    case bandStop = 6
    /// Low shelf (shelf slope 1): `gain` dB below `frequency`.
    case lowShelf = 7
    /// High shelf (shelf slope 1): `gain` dB above `frequency`.
    case highShelf = 8
    /// Low shelf whose transition width is `bandwidth` octaves.
    case resonantLowShelf = 9
    /// High shelf whose transition width is `bandwidth` octaves.
    case resonantHighShelf = 10
}

/// Normalised biquad coefficients (a0 = 1), designed with Robert Bristow-Johnson's
/// "Audio EQ Cookbook" formulas.
public struct BiquadCoefficients: Sendable, Equatable {
    /// Feed-forward coefficients.
    public var b0, b1, b2: Double
    /// Feedback coefficients (a0 = 1).
    public var a1, a2: Double

    /// Unity pass-through.
    public static let identity = BiquadCoefficients(b0: 1, b1: 0, b2: 0, a1: 0, a2: 0)

    /// Creates coefficients.
    public init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        self.b0 = b0; self.b1 = b1; self.b2 = b2; self.a1 = a1; self.a2 = a2
    }

    /// Designs a band: `frequency` in Hz (clamped to 10 Hz ... 0.49·rate), `gain` in dB,
    /// `bandwidth` in octaves (0.05 ... 10: the N-band EQ's bands go to 5, the band-pass unit's
    /// 12000 cents to 10).
    public static func design(_ type: AUEQFilterType, frequency: Double, gain: Double, bandwidth: Double, sampleRate: Double) -> BiquadCoefficients {
        let f = min(max(frequency, 10), 0.49 * sampleRate)
        let bw = min(max(bandwidth, 0.05), 10)
        let w0 = 2 * Double.pi * f / sampleRate
        let cw = cos(w0), sw = sin(w0)
        let A = pow(10, gain / 40)
        let alphaBW = sw * sinh(log(2) / 2 * bw * w0 / sw)
        var b0 = 1.0, b1 = 0.0, b2 = 0.0, a0 = 1.0, a1 = 0.0, a2 = 0.0
        switch type {
        case .parametric:
            b0 = 1 + alphaBW * A; b1 = -2 * cw; b2 = 1 - alphaBW * A
            a0 = 1 + alphaBW / A; a1 = -2 * cw; a2 = 1 - alphaBW / A
        case .lowPass, .resonantLowPass, .highPass, .resonantHighPass:
            let q = (type == .lowPass || type == .highPass) ? 1 / 2.0.squareRoot() : pow(10, gain / 20) / 2.0.squareRoot()
            let alpha = sw / (2 * q)
            if type == .lowPass || type == .resonantLowPass {
                b0 = (1 - cw) / 2; b1 = 1 - cw; b2 = (1 - cw) / 2
            } else {
                b0 = (1 + cw) / 2; b1 = -(1 + cw); b2 = (1 + cw) / 2
            }
            a0 = 1 + alpha; a1 = -2 * cw; a2 = 1 - alpha
        case .bandPass:
            b0 = alphaBW; b1 = 0; b2 = -alphaBW
            a0 = 1 + alphaBW; a1 = -2 * cw; a2 = 1 - alphaBW
        case .bandStop:
            b0 = 1; b1 = -2 * cw; b2 = 1
            a0 = 1 + alphaBW; a1 = -2 * cw; a2 = 1 - alphaBW
        case .lowShelf, .resonantLowShelf, .highShelf, .resonantHighShelf:
            let alpha = (type == .lowShelf || type == .highShelf) ? sw / 2 * 2.0.squareRoot() : alphaBW
            let s = 2 * A.squareRoot() * alpha
            if type == .lowShelf || type == .resonantLowShelf {
                b0 = A * ((A + 1) - (A - 1) * cw + s); b1 = 2 * A * ((A - 1) - (A + 1) * cw); b2 = A * ((A + 1) - (A - 1) * cw - s)
                a0 = (A + 1) + (A - 1) * cw + s; a1 = -2 * ((A - 1) + (A + 1) * cw); a2 = (A + 1) + (A - 1) * cw - s
            } else {
                b0 = A * ((A + 1) + (A - 1) * cw + s); b1 = -2 * A * ((A - 1) + (A + 1) * cw); b2 = A * ((A + 1) + (A - 1) * cw - s)
                a0 = (A + 1) - (A - 1) * cw + s; a1 = 2 * ((A - 1) - (A + 1) * cw); a2 = (A + 1) - (A - 1) * cw - s
            }
        }
        return BiquadCoefficients(b0: b0 / a0, b1: b1 / a0, b2: b2 / a0, a1: a1 / a0, a2: a2 / a0)
    }

    /// Render thread: filters `count` samples in place (transposed direct form II), carrying the
    /// section's two state values in `state` from call to call; denormal state is flushed to 0.
    @inline(__always)
    func process(_ samples: UnsafeMutablePointer<Float>, count: Int, state: UnsafeMutablePointer<Double>) {
        var s1 = state[0], s2 = state[1]
        for i in 0..<count {
            let x = Double(samples[i])
            let y = b0 * x + s1
            s1 = b1 * x - a1 * y + s2
            s2 = b2 * x - a2 * y
            samples[i] = Float(y)
        }
        state[0] = abs(s1) < 1e-30 ? 0 : s1
        state[1] = abs(s2) < 1e-30 ? 0 : s2
    }

    /// The magnitude response |H(e^jω)| at `frequency` (the analytic response of these coefficients).
    public func magnitude(at frequency: Double, sampleRate: Double) -> Double {
        let w = 2 * Double.pi * frequency / sampleRate
        let c1 = cos(w), s1 = sin(w), c2 = cos(2 * w), s2 = sin(2 * w)
        let nr = b0 + b1 * c1 + b2 * c2, ni = -(b1 * s1 + b2 * s2)
        let dr = 1 + a1 * c1 + a2 * c2, di = -(a1 * s1 + a2 * s2)
        return ((nr * nr + ni * ni) / (dr * dr + di * di)).squareRoot()
    }
}

/// One band's settings.
public struct AUEQBand: Sendable, Equatable {
    /// The filter shape.
    public var type: AUEQFilterType
    /// Centre or corner frequency in Hz.
    public var frequency: Float
    /// Gain in dB (−96 ... 24; resonance for the resonant passes).
    public var gain: Float
    /// Width in octaves (0.05 ... 5).
    public var bandwidth: Float
    /// True to skip the band.
    public var bypass: Bool

    /// Creates a band.
    public init(_ type: AUEQFilterType, frequency: Float, gain: Float = 0, bandwidth: Float = 1, bypass: Bool = false) {
        self.type = type
        self.frequency = frequency
        self.gain = gain
        self.bandwidth = bandwidth
        self.bypass = bypass
    }
}

/// A parametric equaliser of N bands of RBJ biquads (Apple's `kAUNBandEQ`).
///
/// Parameters (Apple's IDs, global scope, band b = 0 ..< N): global gain 0 (dB, −96 ... 24),
/// bypass 1000 + b (0/1), filter type 2000 + b (``AUEQFilterType`` raw value 0 ... 10),
/// frequency 3000 + b (Hz, 10 ... 24000, clamped to 0.49·rate), gain 4000 + b (dB, −96 ... 24),
/// bandwidth 5000 + b (octaves, 0.05 ... 5). Changes glide over 20 ms: frequency (in log
/// frequency), gain and bandwidth are interpolated and the coefficients recomputed every 32
/// frames during the glide, so coefficient changes do not click. Filter-type changes apply at
/// once (and may click). Each band runs in transposed direct form II in double precision.
public final class AUNBandEQNode: RenderNode, @unchecked Sendable {
    /// Apple's `kAUNBandEQParam_GlobalGain`.
    public static let globalGainID: UInt32 = 0
    /// Apple's `kAUNBandEQParam_BypassBand` (+ band).
    public static let bypassID: UInt32 = 1000
    /// Apple's `kAUNBandEQParam_FilterType` (+ band).
    public static let filterTypeID: UInt32 = 2000
    /// Apple's `kAUNBandEQParam_Frequency` (+ band).
    public static let frequencyID: UInt32 = 3000
    /// Apple's `kAUNBandEQParam_Gain` (+ band).
    public static let gainID: UInt32 = 4000
    /// Apple's `kAUNBandEQParam_Bandwidth` (+ band).
    public static let bandwidthID: UInt32 = 5000

    /// The ISO octave centres of the 10-band graphic preset, 31.25 Hz ... 16 kHz.
    public static let graphicFrequencies: [Float] = [31.25, 62.5, 125, 250, 500, 1000, 2000, 4000, 8000, 16000]

    /// Number of bands.
    public let bandCount: Int
    private let block = 32
    // Render state, per band: smoothed log2 frequency, gain, bandwidth; coefficients; per band
    // and channel: two state words.
    private var smoothF: UnsafeMutablePointer<AUSmoothedValue>
    private var smoothG: UnsafeMutablePointer<AUSmoothedValue>
    private var smoothB: UnsafeMutablePointer<AUSmoothedValue>
    private var coeffs: UnsafeMutablePointer<BiquadCoefficients>
    private var types: UnsafeMutablePointer<Int>
    private var state: UnsafeMutablePointer<Double>
    private var globalGain = AUSmoothedValue(1)
    private var stateCount = 0

    /// Creates an equaliser of `channels` channels with `bands` (at most 32).
    public init(channels: Int = 2, bands: [AUEQBand], name: String = "eq") {
        let list = Array(bands.prefix(32))
        bandCount = list.count
        var params = [NodeParameter(id: AUNBandEQNode.globalGainID, name: "global gain", unit: .decibels, range: -96...24, defaultValue: 0)]
        for (b, band) in list.enumerated() {
            let u = UInt32(b)
            params.append(NodeParameter(id: AUNBandEQNode.bypassID + u, name: "band \(b) bypass", unit: .boolean, range: 0...1, defaultValue: band.bypass ? 1 : 0))
            params.append(NodeParameter(id: AUNBandEQNode.filterTypeID + u, name: "band \(b) type", unit: .indexed, range: 0...10, defaultValue: Float(band.type.rawValue)))
            params.append(NodeParameter(id: AUNBandEQNode.frequencyID + u, name: "band \(b) frequency", unit: .hertz, range: 10...24000, defaultValue: band.frequency))
            params.append(NodeParameter(id: AUNBandEQNode.gainID + u, name: "band \(b) gain", unit: .decibels, range: -96...24, defaultValue: band.gain))
            params.append(NodeParameter(id: AUNBandEQNode.bandwidthID + u, name: "band \(b) bandwidth", unit: .octaves, range: 0.05...5, defaultValue: band.bandwidth))
        }
        smoothF = .allocate(capacity: 1); smoothG = .allocate(capacity: 1); smoothB = .allocate(capacity: 1)
        coeffs = .allocate(capacity: 1); types = .allocate(capacity: 1); state = .allocate(capacity: 1)
        super.init(name: name, inputChannels: [channels], outputChannels: [channels], parameters: params)
    }

    /// The 10-band graphic equaliser: peaking bands one octave wide at ``graphicFrequencies``
    /// with `gains` in dB (missing ones are 0).
    public static func graphic(channels: Int = 2, gains: [Float] = [], name: String = "graphic eq") -> AUNBandEQNode {
        AUNBandEQNode(channels: channels, bands: graphicFrequencies.enumerated().map { i, f in
            AUEQBand(.parametric, frequency: f, gain: i < gains.count ? gains[i] : 0, bandwidth: 1)
        }, name: name)
    }

    deinit { free() }

    private func free() {
        smoothF.deallocate(); smoothG.deallocate(); smoothB.deallocate()
        coeffs.deallocate(); types.deallocate(); state.deallocate()
    }

    /// The global gain parameter (dB).
    public var globalGainParameter: NodeParameter { parameters[0] }
    /// Band `b`'s bypass parameter.
    public func bypass(_ b: Int) -> NodeParameter { parameters[1 + 5 * b] }
    /// Band `b`'s filter type parameter.
    public func filterType(_ b: Int) -> NodeParameter { parameters[2 + 5 * b] }
    /// Band `b`'s frequency parameter (Hz).
    public func frequency(_ b: Int) -> NodeParameter { parameters[3 + 5 * b] }
    /// Band `b`'s gain parameter (dB).
    public func gain(_ b: Int) -> NodeParameter { parameters[4 + 5 * b] }
    /// Band `b`'s bandwidth parameter (octaves).
    public func bandwidth(_ b: Int) -> NodeParameter { parameters[5 + 5 * b] }

    /// Band `b`'s settings now (from the parameters).
    public func band(_ b: Int) -> AUEQBand {
        AUEQBand(AUEQFilterType(rawValue: Int(filterType(b).value.rounded())) ?? .parametric, frequency: frequency(b).value,
                 gain: gain(b).value, bandwidth: bandwidth(b).value, bypass: bypass(b).value >= 0.5)
    }

    /// The designed response of the whole equaliser at `frequency` in dB (bands not bypassed
    /// plus the global gain), from the current parameter values.
    public func designResponse(at frequency: Double) -> Double {
        var db = Double(globalGainParameter.value)
        for b in 0..<bandCount {
            let band = self.band(b)
            if band.bypass { continue }
            let c = BiquadCoefficients.design(band.type, frequency: Double(band.frequency), gain: Double(band.gain),
                                              bandwidth: Double(band.bandwidth), sampleRate: sampleRate)
            db += 20 * log10(c.magnitude(at: frequency, sampleRate: sampleRate))
        }
        return db
    }

    /// Allocates filter state and designs the initial coefficients.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        free()
        let n = max(1, bandCount)
        let ramp = max(1, Int(sampleRate * 0.02) / block)   // in blocks
        smoothF = .allocate(capacity: n); smoothG = .allocate(capacity: n); smoothB = .allocate(capacity: n)
        coeffs = .allocate(capacity: n); types = .allocate(capacity: n)
        stateCount = n * inputChannels[0] * 2
        state = .allocate(capacity: stateCount)
        state.initialize(repeating: 0, count: stateCount)
        for b in 0..<bandCount {
            let band = self.band(b)
            (smoothF + b).initialize(to: AUSmoothedValue(log2(band.frequency), rampFrames: ramp))
            (smoothG + b).initialize(to: AUSmoothedValue(band.gain, rampFrames: ramp))
            (smoothB + b).initialize(to: AUSmoothedValue(band.bandwidth, rampFrames: ramp))
            (types + b).initialize(to: band.type.rawValue)
            (coeffs + b).initialize(to: BiquadCoefficients.design(band.type, frequency: Double(band.frequency), gain: Double(band.gain),
                                                                 bandwidth: Double(band.bandwidth), sampleRate: sampleRate))
        }
        globalGain = AUSmoothedValue(pow(10, globalGainParameter.value / 20), rampFrames: max(1, Int(sampleRate * 0.02)))
    }

    /// Filters.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        let channels = out.channelCount
        let frames = context.frames
        out.copy(from: input)
        let rate = sampleRate
        // Pick up parameter changes (targets), once per slice.
        for b in 0..<bandCount {
            let t = Int(filterType(b).value.rounded())
            smoothF[b].setTarget(log2(frequency(b).value))
            smoothG[b].setTarget(gain(b).value)
            smoothB[b].setTarget(bandwidth(b).value)
            if t != types[b] {
                types[b] = t
                coeffs[b] = design(b)
            }
        }
        var start = 0
        while start < frames {
            let n = min(block, frames - start)
            for b in 0..<bandCount where bypass(b).value < 0.5 {
                if smoothF[b].isRamping || smoothG[b].isRamping || smoothB[b].isRamping {
                    _ = smoothF[b].next(); _ = smoothG[b].next(); _ = smoothB[b].next()
                    coeffs[b] = design(b)
                }
                for ch in 0..<channels {
                    coeffs[b].process(out[ch] + start, count: n, state: state + (b * channels + ch) * 2)
                }
            }
            start += n
        }
        _ = rate
        globalGain.setTarget(pow(10, globalGainParameter.value / 20))
        if globalGain.isRamping || globalGain.current != 1 {
            let g0 = globalGain
            var g = g0
            for ch in 0..<channels {
                g = g0
                let p = out[ch]
                for i in 0..<frames { p[i] *= g.next() }
            }
            globalGain = g
        }
    }

    private func design(_ b: Int) -> BiquadCoefficients {
        BiquadCoefficients.design(AUEQFilterType(rawValue: types[b]) ?? .parametric, frequency: Double(exp2(smoothF[b].current)),
                                  gain: Double(smoothG[b].current), bandwidth: Double(smoothB[b].current), sampleRate: sampleRate)
    }
}

extension AUNBandEQNode {
    /// The named gain presets of the tools' `--eq` option (dB for the 10 graphic bands,
    /// 31.25 Hz ... 16 kHz): flat, rock, pop, jazz, classical, bass, vocal, treble.
    public static let presets: [String: [Float]] = [
        "flat": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        "rock": [5, 4, 2, -1, -2, -1, 2, 3, 4, 4],
        "pop": [-1, 1, 3, 4, 3, 0, -1, -1, 1, 2],
        "jazz": [3, 2, 1, 2, -1, -1, 0, 1, 2, 3],
        "classical": [4, 3, 2, 1, 0, 0, 0, 1, 2, 3],
        "bass": [7, 6, 4, 2, 0, 0, 0, 0, 0, 0],
        "vocal": [-2, -2, -1, 1, 3, 4, 3, 1, 0, -1],
        "treble": [0, 0, 0, 0, 0, 0, 2, 4, 6, 7],
    ]

    /// Parses the tools' `--eq` syntax: a preset name (``presets``), 10 comma-separated dB
    /// gains for the graphic bands, or named bands `bass+6,mid-2,treble-3` (low shelf 120 Hz,
    /// peak 1 kHz over 1.5 octaves, high shelf 6 kHz). Gains are limited to +-24 dB; nil when
    /// the text is none of these.
    public static func bands(parsing text: String) -> [AUEQBand]? {
        let graphic = graphicFrequencies
        if let gains = presets[text.lowercased()] {
            return graphic.indices.map { AUEQBand(.parametric, frequency: graphic[$0], gain: gains[$0], bandwidth: 1) }
        }
        let parts = text.split(separator: ",").map { String($0).filter { $0 != " " } }
        let numbers = parts.compactMap { Float($0) }
        if parts.count == 10, numbers.count == 10 {
            guard numbers.allSatisfy({ abs($0) <= 24 }) else { return nil }
            return graphic.indices.map { AUEQBand(.parametric, frequency: graphic[$0], gain: numbers[$0], bandwidth: 1) }
        }
        var bands: [AUEQBand] = []
        for p in parts {
            guard let sign = p.firstIndex(where: { $0 == "+" || $0 == "-" }) else { return nil }
            let number = p[sign...].first == "+" ? String(p[p.index(after: sign)...]) : String(p[sign...])
            guard let gain = Float(number), abs(gain) <= 24 else { return nil }
            switch p[..<sign].lowercased() {
            case "bass", "low": bands.append(AUEQBand(.lowShelf, frequency: 120, gain: gain))
            case "mid", "middle": bands.append(AUEQBand(.parametric, frequency: 1000, gain: gain, bandwidth: 1.5))
            case "treble", "high": bands.append(AUEQBand(.highShelf, frequency: 6000, gain: gain))
            default: return nil
            }
        }
        return bands.isEmpty ? nil : bands
    }
}
