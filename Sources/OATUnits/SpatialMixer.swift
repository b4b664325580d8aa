import COATDSPLazy
import COATMySofa
import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How a ``AUSpatialMixerNode`` input is rendered (the raw values are Apple's
/// `AUSpatializationAlgorithm`).
public enum AUSpatialAlgorithm: UInt32, Sendable, CaseIterable {
    /// Constant-power panning by azimuth (no time or spectral cues).
    case equalPowerPanning = 0
    /// A spherical head: an interaural delay by Woodworth's formula and head-shadow filtering
    /// (Brown and Duda's one-pole model) on each ear.
    case sphericalHead = 1
    /// Head-related impulse responses from a SOFA set (libmysofa), first 256 taps.
    case hrtf = 2
    /// Apple's sound field; rendered here as equal-power panning (stereo output only).
    case soundField = 3
    /// Apple's vector-based panning; rendered here as equal-power panning (stereo output only).
    case vectorBasedPanning = 4
    /// No spatialisation: mono goes to both channels, stereo to left and right.
    case stereoPassThrough = 5
    /// Head-related impulse responses from a SOFA set, the whole response.
    case hrtfHQ = 6
    /// The algorithm the output type calls for: HRTF HQ for headphones, equal power for speakers.
    case useOutputType = 7
}

/// What a ``AUSpatialMixerNode`` does with an input's channels (Apple's `AUSpatialMixerSourceMode`).
public enum AUSpatialSourceMode: UInt32, Sendable {
    /// A mono input is spatialised; a stereo input passes through.
    case spatializeIfMono = 0
    /// No spatialisation.
    case bypass = 1
    /// Every input is downmixed to mono and spatialised as one point.
    case pointSource = 2
    /// An ambience bed: passes through here (the output is stereo).
    case ambienceBed = 3
}

/// How gain falls with distance (Apple's `AU3DMixerAttenuationCurve` raw values; the last three
/// are AVAudioEnvironmentDistanceAttenuationModel's formulas).
public enum AUSpatialAttenuationCurve: UInt32, Sendable {
    /// (reference / distance)², then the rolloff factor as an exponent: ``exponential`` with
    /// twice the rolloff.
    case power = 0
    /// (distance / reference) ^ (−rolloff).
    case exponential = 1
    /// reference / (reference + rolloff · (distance − reference)).
    case inverse = 2
    /// 1 − rolloff · (distance − reference) / (maximum − reference), not below 0.
    case linear = 3
}

/// What the output is heard on (Apple's `AUSpatialMixerOutputType` raw values).
public enum AUSpatialOutputType: UInt32, Sendable {
    /// Headphones (``AUSpatialAlgorithm/useOutputType`` renders HRTF HQ).
    case headphones = 1
    /// Built-in speakers (``AUSpatialAlgorithm/useOutputType`` renders equal-power panning).
    case builtInSpeakers = 2
    /// External speakers (as built-in speakers).
    case externalSpeakers = 3
}

/// The settings of one ``AUSpatialMixerNode`` input that are not parameters (Apple's per-input
/// properties): algorithm, source mode, in-head mode and distance model.
///
/// Thread safety: every field is an atomic word; set from any thread, read by the render thread
/// once per slice.
public final class AUSpatialInputSettings: Sendable {
    private let algorithmBits = Atomic<UInt32>(AUSpatialAlgorithm.equalPowerPanning.rawValue)
    private let sourceModeBits = Atomic<UInt32>(AUSpatialSourceMode.spatializeIfMono.rawValue)
    private let inHeadBits = Atomic<UInt32>(0)
    private let curveBits = Atomic<UInt32>(AUSpatialAttenuationCurve.inverse.rawValue)
    private let referenceBits = Atomic<UInt32>(Float(1).bitPattern)
    private let maximumBits = Atomic<UInt32>(Float(100_000).bitPattern)
    private let rolloffBits = Atomic<UInt32>(Float(1).bitPattern)
    private let maxAttenuationBits = Atomic<UInt32>(Float(0).bitPattern)
    private let flagBits = Atomic<UInt32>(0b101)

    /// Default settings: equal power, spatialise if mono, in-head mono, inverse distance with
    /// reference 1 m, maximum 100 000 m, rolloff 1, no attenuation floor.
    public init() {}

    /// The rendering algorithm.
    public var algorithm: AUSpatialAlgorithm {
        get { AUSpatialAlgorithm(rawValue: algorithmBits.load(ordering: .relaxed)) ?? .equalPowerPanning }
        set { algorithmBits.store(newValue.rawValue, ordering: .relaxed) }
    }
    /// The source mode.
    public var sourceMode: AUSpatialSourceMode {
        get { AUSpatialSourceMode(rawValue: sourceModeBits.load(ordering: .relaxed)) ?? .spatializeIfMono }
        set { sourceModeBits.store(newValue.rawValue, ordering: .relaxed) }
    }
    /// A point source closer than the head's radius: false renders it as mono (centred, Apple's
    /// `kSpatialMixerPointSourceInHeadMode_Mono`), true renders it as if at the head's surface
    /// (`_Bypass`: no in-head fold-down).
    public var inHeadBypass: Bool {
        get { inHeadBits.load(ordering: .relaxed) != 0 }
        set { inHeadBits.store(newValue ? 1 : 0, ordering: .relaxed) }
    }
    /// The distance attenuation curve.
    public var curve: AUSpatialAttenuationCurve {
        get { AUSpatialAttenuationCurve(rawValue: curveBits.load(ordering: .relaxed)) ?? .inverse }
        set { curveBits.store(newValue.rawValue, ordering: .relaxed) }
    }
    /// Distance (m) up to which there is no attenuation (> 0).
    public var referenceDistance: Float {
        get { Float(bitPattern: referenceBits.load(ordering: .relaxed)) }
        set { if newValue.isFinite, newValue > 0 { referenceBits.store(newValue.bitPattern, ordering: .relaxed) } }
    }
    /// Distance (m) beyond which attenuation stops growing.
    public var maximumDistance: Float {
        get { Float(bitPattern: maximumBits.load(ordering: .relaxed)) }
        set { if newValue.isFinite, newValue > 0 { maximumBits.store(newValue.bitPattern, ordering: .relaxed) } }
    }
    /// How fast gain falls with distance (≥ 0).
    public var rolloffFactor: Float {
        get { Float(bitPattern: rolloffBits.load(ordering: .relaxed)) }
        set { if newValue.isFinite, newValue >= 0 { rolloffBits.store(newValue.bitPattern, ordering: .relaxed) } }
    }
    /// Apple's rendering flags (`kSpatialMixerRenderingFlags_*`): bit 0 interaural delay (the
    /// spherical head's ITD), bit 2 distance attenuation; both set by default. Without bit 2 the
    /// distance does not attenuate; without bit 0 the spherical head has no interaural delay.
    public var renderingFlags: UInt32 {
        get { flagBits.load(ordering: .relaxed) }
        set { flagBits.store(newValue, ordering: .relaxed) }
    }
    /// The most attenuation distance may bring, in dB (Apple's `MixerDistanceParams.mMaxAttenuation`);
    /// 0: no limit.
    public var maximumAttenuation: Float {
        get { Float(bitPattern: maxAttenuationBits.load(ordering: .relaxed)) }
        set { if newValue.isFinite, newValue >= 0 { maxAttenuationBits.store(newValue.bitPattern, ordering: .relaxed) } }
    }
}

/// A set of head-related impulse responses read from a SOFA file by libmysofa at one sample rate,
/// sampled on a grid of directions (every 5° of azimuth, every 10° of elevation from −40° to 90°)
/// once, on the control plane, so that rendering only reads it.
///
/// Thread safety: immutable after creation.
public final class SpatialHRTFTable: @unchecked Sendable {
    /// Taps of each response (the set's filter length, its onset delay included).
    public let taps: Int
    /// The sample rate the responses are for.
    public let sampleRate: Double
    /// The SOFA file read.
    public let path: String
    static let azimuthStep = 5, elevationStep = 10, elevationMin = -40, elevationMax = 90
    static let azimuths = 360 / azimuthStep
    static let elevations = (elevationMax - elevationMin) / elevationStep + 1
    /// left and right responses, `taps` floats each, per grid direction.
    let left: UnsafeMutablePointer<Float>
    let right: UnsafeMutablePointer<Float>

    /// The SOFA set used when none is named: `OAT_SOFA_FILE` when set, else Debian's
    /// `/usr/share/libmysofa/default.sofa` (libmysofa1's MIT KEMAR set).
    public static var defaultPath: String {
        if let p = getenv("OAT_SOFA_FILE"), p.pointee != 0 { return String(cString: p) }
        return "/usr/share/libmysofa/default.sofa"
    }

    private static let cache = Locked<[String: SpatialHRTFTable]>([:])

    /// The table of `path` at `sampleRate`, read once per process and rate (control plane).
    /// Throws when libmysofa is not installed or the file cannot be read.
    public static func shared(path: String = defaultPath, sampleRate: Double) throws(AudioError) -> SpatialHRTFTable {
        let key = "\(Int(sampleRate.rounded())) \(path)"
        if let t = cache.withLock({ $0[key] }) { return t }
        let t = try SpatialHRTFTable(path: path, sampleRate: sampleRate)
        cache.withLock { $0[key] = t }
        return t
    }

    /// Throws, with a message naming libmysofa and its package, when it cannot be loaded.
    public static func checkLibrary() throws(AudioError) {
        if let why = oat_mysofa_load() {
            throw AudioError(.unsupportedFormat, component: "AUSpatialMixerNode", String(cString: why))
        }
    }

    /// Reads `path` with libmysofa (`mysofa_open` at `sampleRate`) and samples the grid.
    public init(path: String, sampleRate: Double) throws(AudioError) {
        try Self.checkLibrary()
        var length: Int32 = 0, err: Int32 = 0
        guard let easy = mysofa_open(path, Float(sampleRate), &length, &err) else {
            throw AudioError(.invalidData, component: "AUSpatialMixerNode", "libmysofa cannot open the SOFA file \(path) (error \(err))")
        }
        defer { mysofa_close(easy) }
        let n = Int(length)
        guard n > 0, n <= 16384 else {
            throw AudioError(.invalidData, component: "AUSpatialMixerNode", "the SOFA file \(path) has filters of \(n) taps")
        }
        let maxDelay = 64
        taps = n + maxDelay
        self.sampleRate = sampleRate
        self.path = path
        let count = Self.azimuths * Self.elevations
        left = .allocate(capacity: count * taps)
        right = .allocate(capacity: count * taps)
        left.initialize(repeating: 0, count: count * taps)
        right.initialize(repeating: 0, count: count * taps)
        let l = UnsafeMutablePointer<Float>.allocate(capacity: n), r = UnsafeMutablePointer<Float>.allocate(capacity: n)
        defer { l.deallocate(); r.deallocate() }
        for e in 0..<Self.elevations {
            for a in 0..<Self.azimuths {
                let az = Double(a * Self.azimuthStep) * .pi / 180
                let el = Double(Self.elevationMin + e * Self.elevationStep) * .pi / 180
                // SOFA's coordinates: x to the front, y to the left, z up (azimuth counter-clockwise).
                var dl: Float = 0, dr: Float = 0
                mysofa_getfilter_float(easy, Float(cos(el) * cos(az)), Float(-cos(el) * sin(az)), Float(sin(el)), l, r, &dl, &dr)
                let i = (e * Self.azimuths + a) * taps
                let sl = min(maxDelay, max(0, Int((Double(dl) * sampleRate).rounded())))
                let sr = min(maxDelay, max(0, Int((Double(dr) * sampleRate).rounded())))
                (left + i + sl).update(from: l, count: n)
                (right + i + sr).update(from: r, count: n)
            }
        }
    }

    deinit { left.deallocate(); right.deallocate() }

    /// The grid index nearest to azimuth `azimuth` (degrees, + to the right) and elevation `elevation`.
    @inline(__always)
    static func index(azimuth: Float, elevation: Float) -> Int {
        var a = Int((azimuth / Float(azimuthStep)).rounded()) % azimuths
        if a < 0 { a += azimuths }
        let e = min(elevations - 1, max(0, Int(((elevation - Float(elevationMin)) / Float(elevationStep)).rounded())))
        return e * azimuths + a
    }
}

/// Apple's 3-D mixer (`kAudioUnitSubType_SpatialMixer`): N input buses (mono or stereo), one stereo
/// output. Each input has an azimuth, elevation and distance relative to the listener's head,
/// a gain, distance attenuation, obstruction and occlusion, and its own rendering algorithm
/// (``AUSpatialInputSettings``).
///
/// Parameters (Apple's `kSpatialMixerParam_*` / `k3DMixerParam_*` IDs), input scope, element = bus:
/// azimuth 0 (degrees, −180 ... 180, + to the right), elevation 1 (−90 ... 90), distance 2 (m,
/// 0 ... 10 000), gain 3 (dB, −120 ... 20), playback rate 4 (0.5 ... 4, kept, not applied), enable 5,
/// minimum gain 6 and maximum gain 7 (dB, −100 ... 12: the range distance attenuation is held in),
/// reverb blend 8 (percent, kept: no reverb here), occlusion 10 and obstruction 11 (dB, −100 ... 0).
/// Output scope: gain 3 (dB, the master gain). Global: reverb gain 9 (dB, kept), head yaw 19,
/// pitch 20 and roll 21 (degrees: the listener's head turned right, up, tilted right).
///
/// How each input is rendered: its gain (gain parameter × distance gain, the latter held between
/// the minimum and maximum gain) and its obstruction and occlusion filters (each a one-pole
/// low-pass whose response at 5 kHz is the parameter's dB, as Apple documents them) apply first;
/// then the algorithm places the mono signal: equal-power panning (left cos θ, right sin θ with
/// θ = (sin(azimuth)·cos(elevation) + 1)·π/4), a spherical head (the far ear delayed by Woodworth's
/// (a/c)(φ + sin φ), a = 8.75 cm, c = 343 m/s, φ the lateral angle: 0.66 ms at 90°; each ear
/// through Brown and Duda's head-shadow filter; 1/√2 on each ear), or HRTF (the nearest response of
/// a ``SpatialHRTFTable``, changes crossfaded over 256 frames). A point source nearer than the head's
/// radius (8.75 cm: the default distance 0 too) is rendered centred, as mono, unless its in-head mode
/// is bypass. Every gain, delay and filter glides over 10 ms when it changes, so moving sources do
/// not click.
///
/// Thread safety: parameters and ``settings(input:)`` from any thread; ``render(_:)`` is real-time
/// safe (state and the HRTF table are made in ``prepare(sampleRate:maxFrames:)``).
public final class AUSpatialMixerNode: RenderNode, @unchecked Sendable {
    /// Apple's parameter IDs (`kSpatialMixerParam_*`, the same numbers as `k3DMixerParam_*`).
    public enum ParameterID {
        /// Azimuth (degrees).
        public static let azimuth: UInt32 = 0
        /// Elevation (degrees).
        public static let elevation: UInt32 = 1
        /// Distance (m).
        public static let distance: UInt32 = 2
        /// Gain (dB).
        public static let gain: UInt32 = 3
        /// Playback rate.
        public static let playbackRate: UInt32 = 4
        /// Enable.
        public static let enable: UInt32 = 5
        /// Minimum gain (dB).
        public static let minGain: UInt32 = 6
        /// Maximum gain (dB).
        public static let maxGain: UInt32 = 7
        /// Reverb blend (percent).
        public static let reverbBlend: UInt32 = 8
        /// Global reverb gain (dB).
        public static let globalReverbGain: UInt32 = 9
        /// Occlusion (dB at 5 kHz).
        public static let occlusion: UInt32 = 10
        /// Obstruction (dB at 5 kHz).
        public static let obstruction: UInt32 = 11
        /// Head yaw (degrees).
        public static let headYaw: UInt32 = 19
        /// Head pitch (degrees).
        public static let headPitch: UInt32 = 20
        /// Head roll (degrees).
        public static let headRoll: UInt32 = 21
    }

    /// The head radius of the spherical head (m).
    public static let headRadius: Double = 0.0875
    /// The speed of sound (m/s).
    public static let speedOfSound: Double = 343
    static let perInput = 11
    static let crossfadeFrames = 256
    static let delayLength = 512

    private let inputSettings: [AUSpatialInputSettings]
    private let outputTypeBits = Atomic<UInt32>(AUSpatialOutputType.headphones.rawValue)
    /// The SOFA file HRTF inputs use (control plane, before the node is prepared).
    public var sofaPath: String = SpatialHRTFTable.defaultPath
    /// The table HRTF inputs render with (nil until prepared, or when libmysofa or the file is
    /// missing: HRTF inputs then render as a spherical head, see ``hrtfError``).
    public private(set) var hrtf: SpatialHRTFTable?
    /// Why ``hrtf`` is nil after preparing (libmysofa missing, the SOFA file unreadable).
    public private(set) var hrtfError: AudioError?

    private var states: UnsafeMutablePointer<InputState>
    private var stateCount = 0
    private var scratch: UnsafeMutablePointer<Float>
    private var master = AUSmoothedValue(1)

    struct InputState {
        var gain = AUSmoothedValue(0)
        var left = AUSmoothedValue(0.70710677)
        var right = AUSmoothedValue(0.70710677)
        var delayL = AUSmoothedValue(0)
        var delayR = AUSmoothedValue(0)
        var alphaL = AUSmoothedValue(1)
        var alphaR = AUSmoothedValue(1)
        var obstruction = AUSmoothedValue(1)
        var occlusion = AUSmoothedValue(1)
        var obsY: Float = 0
        var occY: Float = 0
        var shadowL = (x1: Float(0), y1: Float(0))
        var shadowR = (x1: Float(0), y1: Float(0))
        var delayLine: UnsafeMutablePointer<Float>
        var writeIndex = 0
        /// HRTF: the input's history (taps − 1 frames before the slice, then the slice).
        var history: UnsafeMutablePointer<Float>
        var hrtfIndex = -1
        var lastAlgorithm: AUSpatialAlgorithm? = nil
    }

    /// Creates a mixer of `inputs` buses of `inputChannels` channels each (1 or 2) into a stereo output.
    public init(inputs: Int = 1, inputChannels: Int = 1, name: String = "spatial mixer") {
        let n = max(1, inputs)
        var params: [NodeParameter] = []
        for i in 0..<n {
            params += [
                NodeParameter(id: ParameterID.azimuth, name: "input \(i) azimuth", unit: .generic, range: -180...180, defaultValue: 0, scope: .input, element: i),
                NodeParameter(id: ParameterID.elevation, name: "input \(i) elevation", unit: .generic, range: -90...90, defaultValue: 0, scope: .input, element: i),
                NodeParameter(id: ParameterID.distance, name: "input \(i) distance", unit: .generic, range: 0...10_000, defaultValue: 0, scope: .input, element: i),
                NodeParameter(id: ParameterID.gain, name: "input \(i) gain", unit: .decibels, range: -120...20, defaultValue: 0, scope: .input, element: i),
                NodeParameter(id: ParameterID.playbackRate, name: "input \(i) playback rate", unit: .ratio, range: 0.5...4, defaultValue: 1, scope: .input, element: i),
                NodeParameter(id: ParameterID.enable, name: "input \(i) enable", unit: .boolean, range: 0...1, defaultValue: 1, scope: .input, element: i),
                NodeParameter(id: ParameterID.minGain, name: "input \(i) minimum gain", unit: .decibels, range: -100...12, defaultValue: -100, scope: .input, element: i),
                NodeParameter(id: ParameterID.maxGain, name: "input \(i) maximum gain", unit: .decibels, range: -100...12, defaultValue: 0, scope: .input, element: i),
                NodeParameter(id: ParameterID.reverbBlend, name: "input \(i) reverb blend", unit: .percent, range: 0...100, defaultValue: 0, scope: .input, element: i),
                NodeParameter(id: ParameterID.occlusion, name: "input \(i) occlusion", unit: .decibels, range: -100...0, defaultValue: 0, scope: .input, element: i),
                NodeParameter(id: ParameterID.obstruction, name: "input \(i) obstruction", unit: .decibels, range: -100...0, defaultValue: 0, scope: .input, element: i),
            ]
        }
        params += [
            NodeParameter(id: ParameterID.gain, name: "master gain", unit: .decibels, range: -120...20, defaultValue: 0, scope: .output, element: 0),
            NodeParameter(id: ParameterID.globalReverbGain, name: "reverb gain", unit: .decibels, range: -40...40, defaultValue: 0),
            NodeParameter(id: ParameterID.headYaw, name: "head yaw", unit: .generic, range: -360...360, defaultValue: 0),
            NodeParameter(id: ParameterID.headPitch, name: "head pitch", unit: .generic, range: -360...360, defaultValue: 0),
            NodeParameter(id: ParameterID.headRoll, name: "head roll", unit: .generic, range: -360...360, defaultValue: 0),
        ]
        inputSettings = (0..<n).map { _ in AUSpatialInputSettings() }
        states = .allocate(capacity: 1)
        scratch = .allocate(capacity: 1)
        super.init(name: name, inputChannels: Array(repeating: min(2, max(1, inputChannels)), count: n), outputChannels: [2], parameters: params)
    }

    deinit {
        freeStates()
        states.deallocate()
        scratch.deallocate()
    }

    private func freeStates() {
        for i in 0..<stateCount {
            states[i].delayLine.deallocate()
            states[i].history.deallocate()
        }
        states.deinitialize(count: stateCount)
        stateCount = 0
    }

    /// Inputs 1 or 2 channels; the output stays stereo.
    public override func setInputChannels(_ channels: Int, bus: Int) throws(AudioError) {
        guard channels == 1 || channels == 2 else {
            throw AudioError(.invalidArgument, component: "AUSpatialMixerNode", "\(name): inputs are mono or stereo, not \(channels) channels", osStatus: -10868)
        }
        try super.setInputChannels(channels, bus: bus)
    }

    /// The output is stereo.
    public override func setOutputChannels(_ channels: Int, bus: Int) throws(AudioError) {
        guard channels == 2 else {
            throw AudioError(.invalidArgument, component: "AUSpatialMixerNode", "\(name): the output is stereo, not \(channels) channels", osStatus: -10868)
        }
        try super.setOutputChannels(channels, bus: bus)
    }

    /// Input `i`'s algorithm, source mode and distance model.
    public func settings(input i: Int) -> AUSpatialInputSettings { inputSettings[min(max(0, i), inputSettings.count - 1)] }

    /// What the output is heard on (picks the algorithm of ``AUSpatialAlgorithm/useOutputType``).
    public var outputType: AUSpatialOutputType {
        get { AUSpatialOutputType(rawValue: outputTypeBits.load(ordering: .relaxed)) ?? .headphones }
        set { outputTypeBits.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// Input `i`'s parameter `id` (see the type's documentation).
    public func parameter(_ id: UInt32, input i: Int) -> NodeParameter {
        let order: [UInt32] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11]
        return parameters[i * Self.perInput + (order.firstIndex(of: id) ?? 0)]
    }
    /// The master gain (dB).
    public var masterGain: NodeParameter { parameters[inputSettings.count * Self.perInput] }
    private var globalBase: Int { inputSettings.count * Self.perInput }

    // MARK: The formulas (also what the tests check)

    /// The distance gain of `distance` metres under `curve` (Apple's AVAudioEnvironmentDistanceAttenuationModel
    /// formulas; `distance` is held in reference ... maximum; a formula that cannot be evaluated gives 1).
    public static func distanceGain(_ distance: Float, curve: AUSpatialAttenuationCurve, reference: Float, maximum: Float, rolloff: Float) -> Float {
        let ref = max(reference, 1e-6)
        let d = min(max(distance, ref), max(maximum, ref))
        let g: Float
        switch curve {
        case .exponential: g = powf(d / ref, -rolloff)
        case .power: g = powf(d / ref, -2 * rolloff)
        case .inverse: g = ref / (ref + rolloff * (d - ref))
        case .linear: g = maximum > ref ? 1 - rolloff * (d - ref) / (maximum - ref) : 1
        }
        return g.isFinite ? min(1, max(0, g)) : 1
    }

    /// The equal-power (left, right) gains for a source at `azimuth` and `elevation` (degrees).
    public static func equalPowerGains(azimuth: Float, elevation: Float = 0) -> (left: Float, right: Float) {
        let lateral = sin(Double(azimuth) * .pi / 180) * cos(Double(elevation) * .pi / 180)
        let theta = (lateral + 1) * Double.pi / 4
        return (Float(cos(theta)), Float(sin(theta)))
    }

    /// The spherical head's interaural time difference (seconds, + when the right ear leads) for a
    /// source at `azimuth` and `elevation` (degrees): Woodworth's (a/c)(φ + sin φ), φ the lateral angle.
    public static func interauralDelay(azimuth: Float, elevation: Float = 0) -> Double {
        let lateral = asin(min(1, max(-1, sin(Double(azimuth) * .pi / 180) * cos(Double(elevation) * .pi / 180))))
        return headRadius / speedOfSound * (lateral + sin(lateral))
    }

    /// The one-pole low-pass coefficient (y += a·(x − y)) whose gain at 5 kHz is `dB` at `sampleRate`
    /// (obstruction and occlusion); 1 for 0 dB.
    public static func attenuationFilterCoefficient(dB: Float, sampleRate: Double) -> Float {
        guard dB < -0.01 else { return 1 }
        let g = pow(10, Double(max(dB, -100)) / 20)
        let w = 2 * Double.pi * min(5000, 0.45 * sampleRate) / sampleRate
        // |a / (1 − b e^{−jw})|² = g², b = 1 − a: (g² − 1) b² + (2 − 2g² cos w) b + (g² − 1) = 0.
        let A = g * g - 1, B = 2 - 2 * g * g * cos(w)
        let disc = max(0, B * B - 4 * A * A)
        let b1 = (-B + disc.squareRoot()) / (2 * A), b2 = (-B - disc.squareRoot()) / (2 * A)
        let b = (0..<1.0).contains(b1) ? b1 : b2
        return Float(min(1, max(1e-6, 1 - b)))
    }

    /// Brown and Duda's head-shadow α for an ear at `angle` degrees from the source (0: facing it).
    static func shadowAlpha(_ angle: Double) -> Float {
        let alphaMin = 0.1, thetaMin = 150.0
        return Float((1 + alphaMin / 2) + (1 - alphaMin / 2) * cos(min(angle, 180) / thetaMin * .pi))
    }

    /// The head's rotation applied to a direction: azimuth and elevation relative to a head turned by
    /// `yaw` (right), `pitch` (up) and `roll` (tilted right), degrees.
    public static func rotate(azimuth: Float, elevation: Float, yaw: Float, pitch: Float, roll: Float) -> (azimuth: Float, elevation: Float) {
        let az = Double(azimuth) * .pi / 180, el = Double(elevation) * .pi / 180
        let d = SpatialVector(x: Float(cos(el) * sin(az)), y: Float(sin(el)), z: Float(-cos(el) * cos(az)))
        let o = SpatialVector.orientation(yaw: yaw, pitch: pitch, roll: roll)
        let rel = SpatialVector.relative(d, forward: o.forward, up: o.up)
        return (rel.azimuth, rel.elevation)
    }

    // MARK: Rendering

    /// Allocates the per-input state and reads the HRTF table (libmysofa) for the graph's rate.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        do {
            hrtf = try SpatialHRTFTable.shared(path: sofaPath, sampleRate: sampleRate)
            hrtfError = nil
        } catch {
            hrtf = nil
            hrtfError = error
        }
        freeStates()
        states.deallocate()
        scratch.deallocate()
        let n = inputSettings.count
        states = .allocate(capacity: n)
        scratch = .allocate(capacity: maxFrames)
        let taps = hrtf?.taps ?? 1
        let ramp = max(1, Int(sampleRate * 0.01))
        for i in 0..<n {
            let line = UnsafeMutablePointer<Float>.allocate(capacity: Self.delayLength)
            line.initialize(repeating: 0, count: Self.delayLength)
            let history = UnsafeMutablePointer<Float>.allocate(capacity: taps + maxFrames)
            history.initialize(repeating: 0, count: taps + maxFrames)
            var s = InputState(delayLine: line, history: history)
            for p in [\InputState.gain, \.left, \.right, \.delayL, \.delayR, \.alphaL, \.alphaR, \.obstruction, \.occlusion] {
                s[keyPath: p].rampFrames = ramp
            }
            (states + i).initialize(to: s)
            stateCount += 1
            let t = targets(i, yaw: 0, pitch: 0, roll: 0)
            states[i].gain.reset(t.gain)
        }
        master = AUSmoothedValue(Self.dbToGain(masterGain.value), rampFrames: ramp)
    }

    @inline(__always)
    static func dbToGain(_ dB: Float) -> Float { dB <= -120 ? 0 : powf(10, dB / 20) }

    struct Targets {
        var gain: Float
        var azimuth: Float
        var elevation: Float
        var itd: Bool
        var inHead: Bool
        var obstruction: Float
        var occlusion: Float
    }

    private func targets(_ i: Int, yaw: Float, pitch: Float, roll: Float) -> Targets {
        let base = i * Self.perInput
        let s = inputSettings[i]
        let distance = parameters[base + 2].value
        let flags = s.renderingFlags
        var dg = flags & 0b100 == 0 ? 1
            : Self.distanceGain(distance, curve: s.curve, reference: s.referenceDistance, maximum: s.maximumDistance, rolloff: s.rolloffFactor)
        if s.maximumAttenuation > 0 { dg = max(dg, Self.dbToGain(-s.maximumAttenuation)) }
        let lo = Self.dbToGain(parameters[base + 6].value), hi = Self.dbToGain(parameters[base + 7].value)
        dg = min(max(dg, lo), max(lo, hi))
        let enabled = parameters[base + 5].value >= 0.5
        var az = parameters[base].value, el = parameters[base + 1].value
        if yaw != 0 || pitch != 0 || roll != 0 {
            (az, el) = Self.rotate(azimuth: az, elevation: el, yaw: yaw, pitch: pitch, roll: roll)
        }
        return Targets(gain: enabled ? Self.dbToGain(parameters[base + 3].value) * dg : 0, azimuth: az, elevation: el, itd: flags & 1 != 0,
                       inHead: Double(distance) < Self.headRadius && !s.inHeadBypass,
                       obstruction: Self.attenuationFilterCoefficient(dB: parameters[base + 10].value, sampleRate: sampleRate),
                       occlusion: Self.attenuationFilterCoefficient(dB: parameters[base + 9].value, sampleRate: sampleRate))
    }

    /// Mixes every enabled input into the stereo output.
    public override func render(_ context: AURenderContext) {
        let out = context.output(0)
        out.silence()
        let frames = context.frames
        guard out.channelCount >= 2 else { return }
        let ol = out[0], or = out[1]
        let g = globalBase
        let yaw = parameters[g + 2].value, pitch = parameters[g + 3].value, roll = parameters[g + 4].value
        for i in 0..<min(context.inputCount, stateCount) {
            guard context.isInputConnected(i), parameters[i * Self.perInput + 5].value >= 0.5 else { continue }
            let input = context.input(i)
            let s = inputSettings[i]
            let t = targets(i, yaw: yaw, pitch: pitch, roll: roll)
            var st = states[i]
            st.gain.setTarget(t.gain)
            let stereo = input.channelCount > 1
            var algorithm = s.algorithm
            if algorithm == .useOutputType { algorithm = outputType == .headphones ? .hrtfHQ : .equalPowerPanning }
            let pass = algorithm == .stereoPassThrough || s.sourceMode == .bypass || s.sourceMode == .ambienceBed
                || (stereo && s.sourceMode == .spatializeIfMono)
            if pass {
                let l = input[0], r = stereo ? input[1] : input[0]
                for f in 0..<frames {
                    let v = st.gain.next()
                    ol[f] += l[f] * v
                    or[f] += r[f] * v
                }
                states[i] = st
                continue
            }
            // The mono signal, with gain, obstruction and occlusion.
            let m = scratch
            st.obstruction.setTarget(t.obstruction)
            st.occlusion.setTarget(t.occlusion)
            let l0 = input[0], r0 = stereo ? input[1] : input[0]
            for f in 0..<frames {
                var x = stereo ? 0.5 * (l0[f] + r0[f]) : l0[f]
                x *= st.gain.next()
                let a = st.obstruction.next(), b = st.occlusion.next()
                st.obsY += a * (x - st.obsY)
                st.occY += b * (st.obsY - st.occY)
                m[f] = st.occY
            }
            if algorithm == .hrtf || algorithm == .hrtfHQ, hrtf == nil { algorithm = .sphericalHead }
            if st.lastAlgorithm != algorithm {
                st.lastAlgorithm = algorithm
                st.hrtfIndex = -1
            }
            if t.inHead {
                renderPanned(&st, m, ol, or, frames, azimuth: 0, elevation: 0)
                feedHistory(&st, m, frames)
            } else {
                switch algorithm {
                case .sphericalHead:
                    renderSphericalHead(&st, m, ol, or, frames, t)
                    feedHistory(&st, m, frames)
                case .hrtf, .hrtfHQ:
                    renderHRTF(&st, m, ol, or, frames, t, full: algorithm == .hrtfHQ)
                default:
                    renderPanned(&st, m, ol, or, frames, azimuth: t.azimuth, elevation: t.elevation)
                    feedHistory(&st, m, frames)
                }
            }
            states[i] = st
        }
        master.setTarget(Self.dbToGain(masterGain.value))
        if master.isRamping || master.current != 1 {
            var mg = master
            let start = mg
            for c in 0..<2 {
                mg = start
                let o = out[c]
                for f in 0..<frames { o[f] *= mg.next() }
            }
            master = mg
        }
    }

    private func renderPanned(_ st: inout InputState, _ m: UnsafeMutablePointer<Float>, _ ol: UnsafeMutablePointer<Float>,
                              _ or: UnsafeMutablePointer<Float>, _ frames: Int, azimuth: Float, elevation: Float) {
        let p = Self.equalPowerGains(azimuth: azimuth, elevation: elevation)
        st.left.setTarget(p.left)
        st.right.setTarget(p.right)
        for f in 0..<frames {
            ol[f] += m[f] * st.left.next()
            or[f] += m[f] * st.right.next()
        }
        // Keep the delay line current, so that a switch to the spherical head starts from the signal.
        for f in 0..<frames {
            st.delayLine[st.writeIndex] = m[f]
            st.writeIndex = (st.writeIndex + 1) & (Self.delayLength - 1)
        }
    }

    private func renderSphericalHead(_ st: inout InputState, _ m: UnsafeMutablePointer<Float>, _ ol: UnsafeMutablePointer<Float>,
                                     _ or: UnsafeMutablePointer<Float>, _ frames: Int, _ t: Targets) {
        let itd = t.itd ? Self.interauralDelay(azimuth: t.azimuth, elevation: t.elevation) * sampleRate : 0
        // The near ear at the delay line's minimum (1 frame), the far ear later by the ITD.
        st.delayL.setTarget(Float(1 + max(0, itd)))
        st.delayR.setTarget(Float(1 + max(0, -itd)))
        let az = Double(t.azimuth) * .pi / 180, el = Double(t.elevation) * .pi / 180
        let lateral = sin(az) * cos(el)
        let angleR = acos(min(1, max(-1, lateral))) * 180 / .pi
        let angleL = acos(min(1, max(-1, -lateral))) * 180 / .pi
        st.alphaL.setTarget(Self.shadowAlpha(angleL))
        st.alphaR.setTarget(Self.shadowAlpha(angleR))
        // Head shadow: H(s) = (1 + α s τ) / (1 + s τ), τ = a / (2c), by the bilinear transform.
        let tk = Float(2 * sampleRate * Self.headRadius / (2 * Self.speedOfSound))
        let mask = Self.delayLength - 1
        let norm: Float = 0.70710677
        for f in 0..<frames {
            st.delayLine[st.writeIndex] = m[f]
            let dl = st.delayL.next(), dr = st.delayR.next()
            func tap(_ d: Float) -> Float {
                let pos = Float(st.writeIndex) - d
                let fl = floorf(pos)
                let frac = pos - fl
                let i0 = Int(fl) & mask, i1 = (Int(fl) + 1) & mask
                return st.delayLine[i0] * (1 - frac) + st.delayLine[i1] * frac
            }
            let xl = tap(dl), xr = tap(dr)
            st.writeIndex = (st.writeIndex + 1) & mask
            let al = st.alphaL.next(), ar = st.alphaR.next()
            let inv = 1 / (1 + tk)
            let a1 = (1 - tk) * inv
            let yl = (1 + al * tk) * inv * xl + (1 - al * tk) * inv * st.shadowL.x1 - a1 * st.shadowL.y1
            st.shadowL = (xl, yl)
            let yr = (1 + ar * tk) * inv * xr + (1 - ar * tk) * inv * st.shadowR.x1 - a1 * st.shadowR.y1
            st.shadowR = (xr, yr)
            ol[f] += yl * norm
            or[f] += yr * norm
        }
    }

    /// Appends the slice to the HRTF history (kept for every algorithm, so a switch to HRTF has it).
    private func feedHistory(_ st: inout InputState, _ m: UnsafeMutablePointer<Float>, _ frames: Int) {
        guard let table = hrtf else { return }
        let keep = table.taps - 1
        (st.history + keep).update(from: m, count: frames)
        st.history.update(from: st.history + frames, count: keep)
    }

    private func renderHRTF(_ st: inout InputState, _ m: UnsafeMutablePointer<Float>, _ ol: UnsafeMutablePointer<Float>,
                            _ or: UnsafeMutablePointer<Float>, _ frames: Int, _ t: Targets, full: Bool) {
        guard let table = hrtf else { return }
        let keep = table.taps - 1
        let h = st.history
        (h + keep).update(from: m, count: frames)
        let taps = full ? table.taps : min(table.taps, 256)
        let target = SpatialHRTFTable.index(azimuth: t.azimuth, elevation: t.elevation)
        let old = st.hrtfIndex
        let fade = old >= 0 && old != target ? min(frames, Self.crossfadeFrames) : 0
        let nl = table.left + target * table.taps, nr = table.right + target * table.taps
        let pl = table.left + max(0, old) * table.taps, pr = table.right + max(0, old) * table.taps
        for f in 0..<frames {
            // y[f] = Σ h[k] x[f − k]; x[f] is h[keep + f].
            let x = h + keep + f
            var yl: Float = 0, yr: Float = 0
            for k in 0..<taps {
                let v = x[-k]
                yl += nl[k] * v
                yr += nr[k] * v
            }
            if f < fade {
                var zl: Float = 0, zr: Float = 0
                for k in 0..<taps {
                    let v = x[-k]
                    zl += pl[k] * v
                    zr += pr[k] * v
                }
                let w = Float(f + 1) / Float(fade)
                yl = zl + (yl - zl) * w
                yr = zr + (yr - zr) * w
            }
            ol[f] += yl
            or[f] += yr
        }
        st.hrtfIndex = target
        h.update(from: h + frames, count: keep)
        // Keep the spherical head's delay line current too.
        for f in 0..<frames {
            st.delayLine[st.writeIndex] = m[f]
            st.writeIndex = (st.writeIndex + 1) & (Self.delayLength - 1)
        }
    }
}

/// A direction or point in the listener's space (x right, y up, −z ahead: Apple's right-handed
/// coordinates), with the conversions the spatial mixer and the environment node use.
public struct SpatialVector: Sendable, Equatable {
    /// Right.
    public var x: Float
    /// Up.
    public var y: Float
    /// Back (−z is ahead).
    public var z: Float

    /// Creates a vector.
    public init(x: Float, y: Float, z: Float) { self.x = x; self.y = y; self.z = z }

    /// The length.
    public var length: Float { (x * x + y * y + z * z).squareRoot() }
    /// The dot product.
    public func dot(_ o: SpatialVector) -> Float { x * o.x + y * o.y + z * o.z }
    /// The cross product.
    public func cross(_ o: SpatialVector) -> SpatialVector { SpatialVector(x: y * o.z - z * o.y, y: z * o.x - x * o.z, z: x * o.y - y * o.x) }
    /// This minus `o`.
    public func minus(_ o: SpatialVector) -> SpatialVector { SpatialVector(x: x - o.x, y: y - o.y, z: z - o.z) }
    /// Of length 1 (unchanged when 0).
    public var normalized: SpatialVector {
        let l = length
        return l > 0 ? SpatialVector(x: x / l, y: y / l, z: z / l) : self
    }

    /// The forward and up vectors of a head turned by `yaw` (degrees to the right), `pitch` (up) and
    /// `roll` (tilted to the right), from forward (0, 0, −1) and up (0, 1, 0): roll about the forward
    /// axis, then pitch about the right axis, then yaw about the vertical axis.
    public static func orientation(yaw: Float, pitch: Float, roll: Float) -> (forward: SpatialVector, up: SpatialVector) {
        let y = Double(yaw) * .pi / 180, p = Double(pitch) * .pi / 180, r = Double(roll) * .pi / 180
        func apply(_ v: SpatialVector) -> SpatialVector {
            // Roll: about z by −roll.
            let cr = cos(-r), sr = sin(-r)
            let v1 = (x: Double(v.x) * cr - Double(v.y) * sr, y: Double(v.x) * sr + Double(v.y) * cr, z: Double(v.z))
            // Pitch: about x by +pitch.
            let cp = cos(p), sp = sin(p)
            let v2 = (x: v1.x, y: v1.y * cp - v1.z * sp, z: v1.y * sp + v1.z * cp)
            // Yaw: about y by −yaw.
            let cy = cos(-y), sy = sin(-y)
            let v3 = (x: v2.x * cy + v2.z * sy, y: v2.y, z: -v2.x * sy + v2.z * cy)
            return SpatialVector(x: Float(v3.x), y: Float(v3.y), z: Float(v3.z))
        }
        return (apply(SpatialVector(x: 0, y: 0, z: -1)), apply(SpatialVector(x: 0, y: 1, z: 0)))
    }

    /// Azimuth (degrees, + to the right of forward), elevation (degrees, + above) and distance of
    /// `offset` (a source's position minus the listener's) for a listener facing `forward` with `up`.
    public static func relative(_ offset: SpatialVector, forward: SpatialVector, up: SpatialVector) -> (azimuth: Float, elevation: Float, distance: Float) {
        let f = forward.normalized
        var r = f.cross(up).normalized
        if r.length == 0 { r = SpatialVector(x: 1, y: 0, z: 0) }
        let u = r.cross(f)
        let xr = offset.dot(r), yu = offset.dot(u), zf = offset.dot(f)
        let d = offset.length
        guard d > 0 else { return (0, 0, 0) }
        let az = atan2(Double(xr), Double(zf)) * 180 / .pi
        let el = atan2(Double(yu), (Double(xr * xr + zf * zf)).squareRoot()) * 180 / .pi
        return (Float(az), Float(el), d)
    }
}
