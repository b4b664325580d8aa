// 3-D mixing: AVAudio3DMixing on sources, the 3-D types of AVAudioTypes.h, and
// AVAudioEnvironmentNode over OATUnits' AUSpatialMixerNode.
import Foundation
import OpenAudioToolbox
internal import OATUnits
internal import OATCore

// MARK: - Points, vectors, orientations

/// A point in the environment's space, in metres (Apple's `AVAudio3DPoint`): x to the right, y up,
/// z toward the listener (a listener with the default orientation faces −z).
public struct AVAudio3DPoint: Sendable, Equatable {
    /// The x coordinate.
    public var x: Float
    /// The y coordinate.
    public var y: Float
    /// The z coordinate.
    public var z: Float
    /// The origin.
    public init() { x = 0; y = 0; z = 0 }
    /// A point at `x`, `y`, `z`.
    public init(x: Float, y: Float, z: Float) { self.x = x; self.y = y; self.z = z }
}

/// A direction (Apple's `AVAudio3DVector`, the same struct as ``AVAudio3DPoint``).
public typealias AVAudio3DVector = AVAudio3DPoint

/// A point at `x`, `y`, `z` (Apple's `AVAudioMake3DPoint`).
public func AVAudioMake3DPoint(_ x: Float, _ y: Float, _ z: Float) -> AVAudio3DPoint { AVAudio3DPoint(x: x, y: y, z: z) }
/// A vector of `x`, `y`, `z` (Apple's `AVAudioMake3DVector`).
public func AVAudioMake3DVector(_ x: Float, _ y: Float, _ z: Float) -> AVAudio3DVector { AVAudio3DVector(x: x, y: y, z: z) }

/// A listener's orientation as two vectors (Apple's `AVAudio3DVectorOrientation`): where the head
/// faces and where its top points.
public struct AVAudio3DVectorOrientation: Sendable, Equatable {
    /// The direction the listener faces.
    public var forward: AVAudio3DVector
    /// The direction the top of the head points.
    public var up: AVAudio3DVector
    /// Zero vectors.
    public init() { forward = AVAudio3DVector(); up = AVAudio3DVector() }
    /// The two vectors.
    public init(forward: AVAudio3DVector, up: AVAudio3DVector) { self.forward = forward; self.up = up }
}

/// An orientation of `forward` and `up` (Apple's `AVAudioMake3DVectorOrientation`).
public func AVAudioMake3DVectorOrientation(_ forward: AVAudio3DVector, _ up: AVAudio3DVector) -> AVAudio3DVectorOrientation {
    AVAudio3DVectorOrientation(forward: forward, up: up)
}

/// A listener's orientation as angles in degrees (Apple's `AVAudio3DAngularOrientation`): yaw
/// turns the head about the vertical axis (+ to the right here), pitch about the ear-to-ear axis
/// (+ up), roll about the forward axis (+ tilted to the right).
public struct AVAudio3DAngularOrientation: Sendable, Equatable {
    /// Rotation about the vertical axis, degrees.
    public var yaw: Float
    /// Rotation about the ear-to-ear axis, degrees.
    public var pitch: Float
    /// Rotation about the forward axis, degrees.
    public var roll: Float
    /// No rotation.
    public init() { yaw = 0; pitch = 0; roll = 0 }
    /// The three angles.
    public init(yaw: Float, pitch: Float, roll: Float) { self.yaw = yaw; self.pitch = pitch; self.roll = roll }
}

/// An angular orientation (Apple's `AVAudioMake3DAngularOrientation`).
public func AVAudioMake3DAngularOrientation(_ yaw: Float, _ pitch: Float, _ roll: Float) -> AVAudio3DAngularOrientation {
    AVAudio3DAngularOrientation(yaw: yaw, pitch: pitch, roll: roll)
}

// MARK: - AVAudio3DMixing

/// How an environment node renders a source (Apple's `AVAudio3DMixingRenderingAlgorithm`).
public enum AVAudio3DMixingRenderingAlgorithm: Int, Sendable {
    /// Equal-power panning by azimuth.
    case equalPowerPanning = 0
    /// A spherical head: interaural delay and head shadow.
    case sphericalHead = 1
    /// Head-related transfer functions (libmysofa, a SOFA set).
    case HRTF = 2
    /// Sound field (equal-power panning here: the output is stereo).
    case soundField = 3
    /// No spatialisation.
    case stereoPassThrough = 5
    /// Head-related transfer functions, the whole responses.
    case HRTFHQ = 6
    /// The best for the output type (HRTF HQ on headphones, equal power on speakers).
    case auto = 7
}

/// How an environment node treats a source's channels (Apple's `AVAudio3DMixingSourceMode`).
public enum AVAudio3DMixingSourceMode: Int, Sendable {
    /// A mono source is spatialised, others pass through.
    case spatializeIfMono = 0
    /// No spatialisation.
    case bypass = 1
    /// Downmixed to mono and spatialised as a point.
    case pointSource = 2
    /// An ambience bed (passes through here).
    case ambienceBed = 3
}

/// How a point source inside the listener's head is rendered (Apple's `AVAudio3DMixingPointSourceInHeadMode`).
public enum AVAudio3DMixingPointSourceInHeadMode: Int, Sendable {
    /// As mono, centred.
    case mono = 0
    /// As if at the head's surface.
    case bypass = 1
}

/// A source's 3-D mixing settings at an environment node (Apple's `AVAudio3DMixing`). Only an
/// ``AVAudioEnvironmentNode`` uses them; every ``AVAudioMixing`` source has them.
public protocol AVAudio3DMixing: NSObjectProtocol, Sendable {
    /// The algorithm (default ``AVAudio3DMixingRenderingAlgorithm/equalPowerPanning``).
    var renderingAlgorithm: AVAudio3DMixingRenderingAlgorithm { get set }
    /// What is done with the source's channels (default ``AVAudio3DMixingSourceMode/spatializeIfMono``).
    var sourceMode: AVAudio3DMixingSourceMode { get set }
    /// How the source is rendered inside the head (default ``AVAudio3DMixingPointSourceInHeadMode/mono``).
    var pointSourceInHeadMode: AVAudio3DMixingPointSourceInHeadMode { get set }
    /// Playback rate 0.5 ... 2 (kept, not applied here).
    var rate: Float { get set }
    /// Dry/wet blend 0 ... 1 (kept: the environment node has no reverb here).
    var reverbBlend: Float { get set }
    /// Attenuation of the direct path, dB −100 ... 0 (a low-pass: this much at 5 kHz).
    var obstruction: Float { get set }
    /// Attenuation of the direct and reverb paths, dB −100 ... 0 (a low-pass: this much at 5 kHz).
    var occlusion: Float { get set }
    /// Where the source is (metres).
    var position: AVAudio3DPoint { get set }
}

/// The 3-D settings a source keeps.
struct Mixing3DSettings {
    var renderingAlgorithm = AVAudio3DMixingRenderingAlgorithm.equalPowerPanning
    var sourceMode = AVAudio3DMixingSourceMode.spatializeIfMono
    var pointSourceInHeadMode = AVAudio3DMixingPointSourceInHeadMode.mono
    var rate: Float = 1
    var reverbBlend: Float = 0
    var obstruction: Float = 0
    var occlusion: Float = 0
    var position = AVAudio3DPoint()
}

extension AVAudio3DMixing where Self: AVAudioNode {
    /// The algorithm the environment node renders this source with.
    public var renderingAlgorithm: AVAudio3DMixingRenderingAlgorithm {
        get { mixing3D.renderingAlgorithm }
        set { mixing3D.renderingAlgorithm = newValue; engine?.sourceMixingChanged(self) }
    }
    /// What the environment node does with this source's channels.
    public var sourceMode: AVAudio3DMixingSourceMode {
        get { mixing3D.sourceMode }
        set { mixing3D.sourceMode = newValue; engine?.sourceMixingChanged(self) }
    }
    /// How this source is rendered inside the head.
    public var pointSourceInHeadMode: AVAudio3DMixingPointSourceInHeadMode {
        get { mixing3D.pointSourceInHeadMode }
        set { mixing3D.pointSourceInHeadMode = newValue; engine?.sourceMixingChanged(self) }
    }
    /// Playback rate (kept, not applied).
    public var rate: Float {
        get { mixing3D.rate }
        set { mixing3D.rate = min(2, max(0.5, newValue)); engine?.sourceMixingChanged(self) }
    }
    /// Reverb blend 0 ... 1 (kept).
    public var reverbBlend: Float {
        get { mixing3D.reverbBlend }
        set { mixing3D.reverbBlend = min(1, max(0, newValue)); engine?.sourceMixingChanged(self) }
    }
    /// Obstruction, dB −100 ... 0.
    public var obstruction: Float {
        get { mixing3D.obstruction }
        set { mixing3D.obstruction = min(0, max(-100, newValue)); engine?.sourceMixingChanged(self) }
    }
    /// Occlusion, dB −100 ... 0.
    public var occlusion: Float {
        get { mixing3D.occlusion }
        set { mixing3D.occlusion = min(0, max(-100, newValue)); engine?.sourceMixingChanged(self) }
    }
    /// Where the source is.
    public var position: AVAudio3DPoint {
        get { mixing3D.position }
        set { mixing3D.position = newValue; engine?.sourceMixingChanged(self) }
    }
}

extension AVAudioMixingDestination {
    /// The source's algorithm (a destination shares its source node's 3-D settings here).
    public var renderingAlgorithm: AVAudio3DMixingRenderingAlgorithm {
        get { source?.mixing3D.renderingAlgorithm ?? .equalPowerPanning }
        set { source?.mixing3D.renderingAlgorithm = newValue; push3D() }
    }
    /// The source's source mode.
    public var sourceMode: AVAudio3DMixingSourceMode {
        get { source?.mixing3D.sourceMode ?? .spatializeIfMono }
        set { source?.mixing3D.sourceMode = newValue; push3D() }
    }
    /// The source's in-head mode.
    public var pointSourceInHeadMode: AVAudio3DMixingPointSourceInHeadMode {
        get { source?.mixing3D.pointSourceInHeadMode ?? .mono }
        set { source?.mixing3D.pointSourceInHeadMode = newValue; push3D() }
    }
    /// The source's rate.
    public var rate: Float {
        get { source?.mixing3D.rate ?? 1 }
        set { source?.mixing3D.rate = min(2, max(0.5, newValue)); push3D() }
    }
    /// The source's reverb blend.
    public var reverbBlend: Float {
        get { source?.mixing3D.reverbBlend ?? 0 }
        set { source?.mixing3D.reverbBlend = min(1, max(0, newValue)); push3D() }
    }
    /// The source's obstruction.
    public var obstruction: Float {
        get { source?.mixing3D.obstruction ?? 0 }
        set { source?.mixing3D.obstruction = min(0, max(-100, newValue)); push3D() }
    }
    /// The source's occlusion.
    public var occlusion: Float {
        get { source?.mixing3D.occlusion ?? 0 }
        set { source?.mixing3D.occlusion = min(0, max(-100, newValue)); push3D() }
    }
    /// The source's position.
    public var position: AVAudio3DPoint {
        get { source?.mixing3D.position ?? AVAudio3DPoint() }
        set { source?.mixing3D.position = newValue; push3D() }
    }

    private func push3D() {
        if let source { source.engine?.sourceMixingChanged(source) }
    }
}

// MARK: - The environment node

/// What the environment node renders for (Apple's `AVAudioEnvironmentOutputType`).
public enum AVAudioEnvironmentOutputType: Int, Sendable {
    /// Chosen by the route (headphones here).
    case auto = 0
    /// Headphones.
    case headphones = 1
    /// Built-in speakers.
    case builtInSpeakers = 2
    /// External speakers.
    case externalSpeakers = 3
}

/// How gain falls with distance (Apple's `AVAudioEnvironmentDistanceAttenuationModel`).
public enum AVAudioEnvironmentDistanceAttenuationModel: Int, Sendable {
    /// gain = (distance / referenceDistance) ^ (−rolloffFactor).
    case exponential = 1
    /// gain = referenceDistance / (referenceDistance + rolloffFactor · (distance − referenceDistance)).
    case inverse = 2
    /// gain = 1 − rolloffFactor · (distance − referenceDistance) / (maximumDistance − referenceDistance).
    case linear = 3
}

/// The environment node's distance attenuation (Apple's `AVAudioEnvironmentDistanceAttenuationParameters`):
/// distances are held between ``referenceDistance`` and ``maximumDistance``; a formula that cannot
/// be evaluated leaves the source unattenuated.
open class AVAudioEnvironmentDistanceAttenuationParameters: NSObject, @unchecked Sendable {
    weak var owner: AVAudioEnvironmentNode?
    override init() { super.init() }
    /// The model (default ``AVAudioEnvironmentDistanceAttenuationModel/inverse``).
    open var distanceAttenuationModel: AVAudioEnvironmentDistanceAttenuationModel = .inverse { didSet { owner?.push() } }
    /// The distance (m) up to which there is no attenuation (default 1).
    open var referenceDistance: Float = 1 { didSet { owner?.push() } }
    /// The distance (m) beyond which there is no more attenuation (default 100 000).
    open var maximumDistance: Float = 100_000 { didSet { owner?.push() } }
    /// How fast the gain falls (default 1).
    open var rolloffFactor: Float = 1 { didSet { owner?.push() } }
}

/// The environment node's reverb (Apple's `AVAudioEnvironmentReverbParameters`). Kept and read
/// back: the environment node has no reverb here (sources' ``AVAudio3DMixing/reverbBlend`` is kept too).
open class AVAudioEnvironmentReverbParameters: NSObject, @unchecked Sendable {
    override init() { filterParameters = AVAudioUnitEQFilterParameters(index: 0); super.init() }
    /// Whether the reverb is on (default false).
    open var enable = false
    /// The reverb's level, dB −40 ... 40 (default 0).
    open var level: Float = 0
    /// The filter on the reverb's output.
    public let filterParameters: AVAudioUnitEQFilterParameters
    /// The preset last loaded.
    var preset: AVAudioUnitReverbPreset = .mediumHall
    /// Loads one of the reverb's rooms.
    open func loadFactoryReverbPreset(_ preset: AVAudioUnitReverbPreset) { self.preset = preset }
}

/// A 3-D mixer (Apple's `AVAudioEnvironmentNode`): each source connected to it is placed by its
/// ``AVAudio3DMixing`` settings relative to the listener (``listenerPosition``, orientation) and
/// rendered to a stereo output by its algorithm (OATUnits' `AUSpatialMixerNode`: equal power,
/// spherical head, HRTF through libmysofa), with the distance attenuation of
/// ``distanceAttenuationParameters``. Sources may be mono or stereo (a stereo source passes
/// through unless its ``AVAudio3DMixing/sourceMode`` is ``AVAudio3DMixingSourceMode/pointSource``).
///
/// Thread safety: the control plane (not the render thread), like every node.
open class AVAudioEnvironmentNode: AVAudioNode, AVAudioMixing, @unchecked Sendable {
    /// The channel count of each input bus (set by the engine before it builds the graph).
    var inputBusChannels: [Int] = [1]

    /// Creates an environment node to attach to an engine.
    public init() {
        distanceAttenuationParameters = AVAudioEnvironmentDistanceAttenuationParameters()
        reverbParameters = AVAudioEnvironmentReverbParameters()
        super.init(inputs: 1, outputs: 1)
        distanceAttenuationParameters.owner = self
    }

    /// Input buses: one past the highest connected (at least 1).
    open override var numberOfInputs: Int { max(1, (engine?.highestInputBus(of: self) ?? -1) + 1) }

    /// The output type (default ``AVAudioEnvironmentOutputType/auto``, headphones here).
    open var outputType: AVAudioEnvironmentOutputType = .auto { didSet { push() } }
    /// The gain of the mixed output, 0 ... 1.
    open var outputVolume: Float = 1 { didSet { push() } }
    /// The node's own volume at the mixer it feeds.
    open var volume: Float = 1 { didSet { mixingSetOnNode(volume: volume) } }
    /// The node's own pan at the mixer it feeds.
    open var pan: Float = 0 { didSet { mixingSetOnNode(pan: pan) } }
    /// The first input bus with nothing connected.
    open var nextAvailableInputBus: AVAudioNodeBus { engine?.nextFreeInput(of: self) ?? 0 }

    /// The listener's position (default the origin).
    open var listenerPosition = AVAudio3DPoint() { didSet { pushSources() } }
    /// The listener's orientation as vectors (default forward (0, 0, −1), up (0, 1, 0)); setting it
    /// sets ``listenerAngularOrientation`` to match.
    open var listenerVectorOrientation = AVAudio3DVectorOrientation(forward: AVAudio3DVector(x: 0, y: 0, z: -1), up: AVAudio3DVector(x: 0, y: 1, z: 0)) {
        didSet {
            if !syncing {
                syncing = true
                listenerAngularOrientation = Self.angles(of: listenerVectorOrientation)
                syncing = false
            }
            pushSources()
        }
    }
    /// The listener's orientation as angles (default 0, 0, 0); setting it sets
    /// ``listenerVectorOrientation`` to match.
    open var listenerAngularOrientation = AVAudio3DAngularOrientation() {
        didSet {
            if !syncing {
                syncing = true
                let o = SpatialVector.orientation(yaw: listenerAngularOrientation.yaw, pitch: listenerAngularOrientation.pitch, roll: listenerAngularOrientation.roll)
                listenerVectorOrientation = AVAudio3DVectorOrientation(forward: AVAudio3DVector(x: o.forward.x, y: o.forward.y, z: o.forward.z),
                                                                       up: AVAudio3DVector(x: o.up.x, y: o.up.y, z: o.up.z))
                syncing = false
            }
            pushSources()
        }
    }
    private var syncing = false
    /// The distance attenuation every source has.
    public let distanceAttenuationParameters: AVAudioEnvironmentDistanceAttenuationParameters
    /// The reverb (kept; no reverb here).
    public let reverbParameters: AVAudioEnvironmentReverbParameters

    /// The algorithms this node renders (``AVAudio3DMixingRenderingAlgorithm`` raw values): all but
    /// the HRTF ones when libmysofa or its SOFA set cannot be loaded.
    open var applicableRenderingAlgorithms: [NSNumber] {
        var all: [AVAudio3DMixingRenderingAlgorithm] = [.equalPowerPanning, .sphericalHead, .soundField, .stereoPassThrough, .auto]
        if (try? SpatialHRTFTable.shared(sampleRate: engine?.renderRate ?? 48000)) != nil { all += [.HRTF, .HRTFHQ] }
        return all.sorted { $0.rawValue < $1.rawValue }.map { NSNumber(value: $0.rawValue) }
    }

    static func angles(of o: AVAudio3DVectorOrientation) -> AVAudio3DAngularOrientation {
        let f = SpatialVector(x: o.forward.x, y: o.forward.y, z: o.forward.z).normalized
        let u = SpatialVector(x: o.up.x, y: o.up.y, z: o.up.z).normalized
        let yaw = atan2(Double(f.x), Double(-f.z)) * 180 / .pi
        let pitch = asin(Double(min(1, max(-1, f.y)))) * 180 / .pi
        // The roll: the up vector against the up of the same yaw and pitch without roll.
        let flat = SpatialVector.orientation(yaw: Float(yaw), pitch: Float(pitch), roll: 0)
        let right = flat.forward.cross(flat.up)
        let roll = atan2(Double(u.dot(right)), Double(u.dot(flat.up))) * 180 / .pi
        return AVAudio3DAngularOrientation(yaw: Float(yaw), pitch: Float(pitch), roll: Float(roll))
    }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        let node = AUSpatialMixerNode(inputs: max(1, inputBusChannels.count), inputChannels: 1, name: "AVAudioEnvironmentNode")
        for (b, c) in inputBusChannels.enumerated() { try? node.setInputChannels(min(2, max(1, c)), bus: b) }
        return node
    }

    /// A unit stays while it has the buses, in the same widths.
    override func canKeep(_ unit: OATUnits.RenderNode, rate: Double, inputChannels: Int, outputChannels: Int) -> Bool {
        guard let u = unit as? AUSpatialMixerNode, u.inputChannels.count >= inputBusChannels.count else { return false }
        return zip(u.inputChannels, inputBusChannels).allSatisfy { $0 == min(2, max(1, $1)) }
    }

    override func unitDidLoad() { push() }

    private var spatialUnit: AUSpatialMixerNode? { unit as? AUSpatialMixerNode }

    /// Pushes the node's own settings (output volume and type, distance model) and every source's.
    func push() {
        guard let u = spatialUnit else { return }
        u.masterGain.value = outputVolume <= 0 ? -120 : 20 * log10f(min(1, outputVolume))
        u.outputType = switch outputType {
        case .auto, .headphones: .headphones
        case .builtInSpeakers: .builtInSpeakers
        case .externalSpeakers: .externalSpeakers
        }
        let d = distanceAttenuationParameters
        for i in 0..<u.inputChannels.count {
            let s = u.settings(input: i)
            s.curve = switch d.distanceAttenuationModel {
            case .exponential: .exponential
            case .inverse: .inverse
            case .linear: .linear
            }
            s.referenceDistance = max(1e-3, d.referenceDistance)
            s.maximumDistance = max(s.referenceDistance, d.maximumDistance)
            s.rolloffFactor = max(0, d.rolloffFactor)
        }
        pushSources()
    }

    private func pushSources() {
        guard let engine else { return }
        engine.sourceMixingChanged(self)
    }

    /// Sets input `bus` from its source's volume and 3-D settings, relative to the listener.
    func setInput(_ bus: Int, volume: Float, settings: Mixing3DSettings) {
        guard let u = spatialUnit, bus >= 0, bus < u.inputChannels.count else { return }
        typealias P = AUSpatialMixerNode.ParameterID
        let offset = SpatialVector(x: settings.position.x - listenerPosition.x, y: settings.position.y - listenerPosition.y,
                                   z: settings.position.z - listenerPosition.z)
        let o = listenerVectorOrientation
        let rel = SpatialVector.relative(offset, forward: SpatialVector(x: o.forward.x, y: o.forward.y, z: o.forward.z),
                                         up: SpatialVector(x: o.up.x, y: o.up.y, z: o.up.z))
        u.parameter(P.azimuth, input: bus).value = rel.azimuth
        u.parameter(P.elevation, input: bus).value = rel.elevation
        u.parameter(P.distance, input: bus).value = rel.distance
        u.parameter(P.gain, input: bus).value = volume <= 0 ? -120 : 20 * log10f(volume)
        u.parameter(P.obstruction, input: bus).value = settings.obstruction
        u.parameter(P.occlusion, input: bus).value = settings.occlusion
        u.parameter(P.reverbBlend, input: bus).value = settings.reverbBlend * 100
        u.parameter(P.playbackRate, input: bus).value = settings.rate
        let s = u.settings(input: bus)
        s.algorithm = AUSpatialAlgorithm(rawValue: UInt32(settings.renderingAlgorithm.rawValue)) ?? .equalPowerPanning
        s.sourceMode = AUSpatialSourceMode(rawValue: UInt32(settings.sourceMode.rawValue)) ?? .spatializeIfMono
        s.inHeadBypass = settings.pointSourceInHeadMode == .bypass
    }
}
