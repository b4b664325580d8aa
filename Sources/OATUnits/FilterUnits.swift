import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// Which of Apple's single-filter effect units a ``AUFilterUnitNode`` is (AudioUnitParameters.h).
public enum AUFilterUnitKind: Sendable, CaseIterable {
    /// `kAudioUnitSubType_LowPassFilter`: a two-pole low-pass. Parameters: cutoff 0 (Hz, 10 ... Nyquist,
    /// default 6900), resonance 1 (dB, −20 ... 40, default 0).
    case lowPass
    /// `kAudioUnitSubType_HighPassFilter`: a two-pole high-pass, parameters as the low-pass.
    case highPass
    /// `kAudioUnitSubType_BandPassFilter`: a two-pole band-pass with 0 dB at its centre. Parameters:
    /// centre 0 (Hz, 20 ... Nyquist, default 5000), bandwidth 1 (cents, 100 ... 12000, default 600).
    case bandPass
    /// `kAudioUnitSubType_HighShelfFilter`: parameters: cutoff 0 (Hz, 10000 ... Nyquist, default
    /// 10000), gain 1 (dB, −40 ... 40, default 0).
    case highShelf
    /// `kAudioUnitSubType_LowShelfFilter`: parameters: cutoff 0 (Hz, 10 ... 200, default 80),
    /// gain 1 (dB, −40 ... 40, default 0).
    case lowShelf
    /// `kAudioUnitSubType_ParametricEQ`: one peaking band. Parameters: centre 0 (Hz, 20 ... Nyquist,
    /// default 2000), Q 1 (0.1 ... 20, default 1), gain 2 (dB, −20 ... 20, default 0).
    case parametricEQ
}

/// One of Apple's single-filter effect units (low-pass, high-pass, band-pass, high shelf, low shelf,
/// parametric EQ), with Apple's parameter IDs, ranges and defaults (global scope), as one biquad per
/// channel (Robert Bristow-Johnson's cookbook designs, ``BiquadCoefficients``).
///
/// What each parameter means, so that a tone measurement can check it:
/// - low-pass and high-pass: the Q is 10^(resonance/20)/√2, so at 0 dB resonance the filter is a
///   Butterworth section, −3.01 dB at the cutoff; a resonance of R dB lifts the response at the
///   cutoff by R dB above that.
/// - band-pass: 0 dB at the centre, −3.01 dB at the band edges, which lie `bandwidth` cents apart
///   (geometrically around the centre).
/// - shelves: the full gain far past the corner (DC for the low shelf, Nyquist for the high shelf),
///   half of it (in dB) at the corner; shelf slope 1.
/// - parametric EQ: `gain` dB at the centre; Q is the centre over the bandwidth between the points of
///   half the gain in dB.
///
/// Frequencies above 0.49 × the sample rate act as 0.49 × the rate. Parameter changes take effect
/// at the next render slice. Thread safety: parameters from any thread; ``render(_:)`` is real-time
/// safe (filter state is allocated in ``prepare(sampleRate:maxFrames:)``).
public final class AUFilterUnitNode: RenderNode, @unchecked Sendable {
    /// Which unit this is.
    public let kind: AUFilterUnitKind
    private var state: UnsafeMutablePointer<Double>
    private var stateCount = 0
    private var coeffs = BiquadCoefficients.identity
    private var designed: (Float, Float, Float) = (.nan, .nan, .nan)

    /// Creates a unit of `kind` with `channels` channels and Apple's defaults.
    public init(_ kind: AUFilterUnitKind, channels: Int = 2, name: String? = nil) {
        self.kind = kind
        state = .allocate(capacity: 1)
        // Apple states the upper limits as the Nyquist frequency of the unit's rate; here the range
        // is fixed at 96 kHz (a 192 kHz stream's Nyquist) and the design clamps to the rate in use.
        let nyquist: Float = 96_000
        let parameters: [NodeParameter]
        switch kind {
        case .lowPass, .highPass:
            parameters = [
                NodeParameter(id: 0, name: "cutoff frequency", unit: .hertz, range: 10...nyquist, defaultValue: 6900),
                NodeParameter(id: 1, name: "resonance", unit: .decibels, range: -20...40, defaultValue: 0),
            ]
        case .bandPass:
            parameters = [
                NodeParameter(id: 0, name: "center frequency", unit: .hertz, range: 20...nyquist, defaultValue: 5000),
                NodeParameter(id: 1, name: "bandwidth", unit: .cents, range: 100...12000, defaultValue: 600),
            ]
        case .highShelf:
            parameters = [
                NodeParameter(id: 0, name: "cutoff frequency", unit: .hertz, range: 10000...nyquist, defaultValue: 10000),
                NodeParameter(id: 1, name: "gain", unit: .decibels, range: -40...40, defaultValue: 0),
            ]
        case .lowShelf:
            parameters = [
                NodeParameter(id: 0, name: "cutoff frequency", unit: .hertz, range: 10...200, defaultValue: 80),
                NodeParameter(id: 1, name: "gain", unit: .decibels, range: -40...40, defaultValue: 0),
            ]
        case .parametricEQ:
            parameters = [
                NodeParameter(id: 0, name: "center frequency", unit: .hertz, range: 20...nyquist, defaultValue: 2000),
                NodeParameter(id: 1, name: "q", unit: .generic, range: 0.1...20, defaultValue: 1),
                NodeParameter(id: 2, name: "gain", unit: .decibels, range: -20...20, defaultValue: 0),
            ]
        }
        super.init(name: name ?? "\(kind)", inputChannels: [channels], outputChannels: [channels], parameters: parameters)
    }

    deinit { state.deallocate() }

    /// The design of `kind` for parameter values `p0`, `p1`, `p2` (in ID order): the N-band EQ's
    /// band designs (``BiquadCoefficients/design(_:frequency:gain:bandwidth:sampleRate:)``), and a
    /// peaking band set by its Q for the parametric EQ.
    static func design(_ kind: AUFilterUnitKind, _ p0: Double, _ p1: Double, _ p2: Double, sampleRate: Double) -> BiquadCoefficients {
        switch kind {
        case .lowPass, .highPass:
            // The resonant types: Q = 10^(resonance/20)/√2.
            return .design(kind == .lowPass ? .resonantLowPass : .resonantHighPass, frequency: p0, gain: p1, bandwidth: 1, sampleRate: sampleRate)
        case .bandPass:
            return .design(.bandPass, frequency: p0, gain: 0, bandwidth: min(max(p1, 100), 12000) / 1200, sampleRate: sampleRate)
        case .lowShelf, .highShelf:
            return .design(kind == .lowShelf ? .lowShelf : .highShelf, frequency: p0, gain: p1, bandwidth: 1, sampleRate: sampleRate)
        case .parametricEQ:
            let w0 = 2 * Double.pi * min(max(p0, 10), 0.49 * sampleRate) / sampleRate
            let cw = cos(w0), A = pow(10, p2 / 40)
            let alpha = sin(w0) / (2 * min(max(p1, 0.1), 20))
            let a0 = 1 + alpha / A
            return BiquadCoefficients(b0: (1 + alpha * A) / a0, b1: -2 * cw / a0, b2: (1 - alpha * A) / a0, a1: -2 * cw / a0, a2: (1 - alpha / A) / a0)
        }
    }

    /// Allocates filter state and designs the coefficients.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        state.deallocate()
        stateCount = max(1, inputChannels[0]) * 2
        state = .allocate(capacity: stateCount)
        state.initialize(repeating: 0, count: stateCount)
        designed = (.nan, .nan, .nan)
    }

    /// Filters.
    public override func render(_ context: AURenderContext) {
        let input = context.input(0), out = context.output(0)
        out.copy(from: input)
        let values = (parameters[0].value, parameters[1].value, parameters.count > 2 ? parameters[2].value : 0)
        if values != designed {
            designed = values
            coeffs = Self.design(kind, Double(values.0), Double(values.1), Double(values.2), sampleRate: sampleRate)
        }
        for ch in 0..<min(out.channelCount, stateCount / 2) {
            coeffs.process(out[ch], count: context.frames, state: state + ch * 2)
        }
    }
}
