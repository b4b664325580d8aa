// AVAudioUnitDistortion: Apple's multistage distortion over the OATUnits distortion node, with
// approximations of Apple's factory presets.
import Foundation
import OpenAudioToolbox
internal import OATUnits

/// Distortion presets (Apple's `AVAudioUnitDistortionPreset`). Apple does not publish its
/// presets' settings: each here is an approximation built from the stages of the distortion
/// (see `docs/avfaudio.md`, Distortion presets, for what each one does).
public enum AVAudioUnitDistortionPreset: Int, Sendable {
    /// Bit-crushed drums: half-rate decimation and 8-bit-ish rounding.
    case drumsBitBrush = 0
    /// A short 40 ms echo with feedback over light decimation.
    case drumsBufferBeats = 1
    /// Low fidelity: coarse rounding and decimation, soft clipping.
    case drumsLoFi = 2
    /// A broken speaker: squared and cubic shaping, hard on the soft clipper.
    case multiBrokenSpeaker = 3
    /// A phone at a concert: heavy decimation and a 1.9 kHz ring modulation.
    case multiCellphoneConcert = 4
    /// Decimation 25 %, rounding 25 %.
    case multiDecimated1 = 5
    /// Decimation 50 %, rounding 50 %.
    case multiDecimated2 = 6
    /// Decimation 75 %, rounding 75 %.
    case multiDecimated3 = 7
    /// Decimation 95 %, rounding 90 %.
    case multiDecimated4 = 8
    /// Squared shaping with a 30 Hz ring modulation.
    case multiDistortedFunk = 9
    /// Cubic shaping.
    case multiDistortedCubed = 10
    /// Squared (even-harmonic) shaping.
    case multiDistortedSquared = 11
    /// A 100 ms echo.
    case multiEcho1 = 12
    /// A 250 ms echo with more feedback.
    case multiEcho2 = 13
    /// A tight 15 ms echo.
    case multiEchoTight1 = 14
    /// A tight 30 ms echo.
    case multiEchoTight2 = 15
    /// Every stage at once.
    case multiEverythingIsBroken = 16
    /// Ring modulation at 700 and 1300 Hz with a short echo.
    case speechAlienChatter = 17
    /// A 3 kHz ring modulation over decimation.
    case speechCosmicInterference = 18
    /// Ring modulation at 314.159 Hz.
    case speechGoldenPi = 19
    /// A radio: decimation, rounding, squared shaping, soft clipping.
    case speechRadioTower = 20
    /// A slow 0.5 Hz ring modulation (the voice swells and fades) with an echo.
    case speechWaves = 21

    /// The stage settings: (parameter index, value) pairs over the neutral settings.
    var settings: [(Int, Float)] {
        switch self {
        case .drumsBitBrush: [(3, 50), (4, 50), (5, 100)]
        case .drumsBufferBeats: [(0, 40), (1, 20), (2, 50), (3, 20), (5, 50)]
        case .drumsLoFi: [(3, 30), (4, 70), (5, 70), (14, -6)]
        case .multiBrokenSpeaker: [(7, 10), (8, 10), (9, 80), (14, -10)]
        case .multiCellphoneConcert: [(3, 70), (4, 30), (5, 60), (10, 1900), (11, 1900), (13, 20)]
        case .multiDecimated1: [(3, 25), (4, 25), (5, 100)]
        case .multiDecimated2: [(3, 50), (4, 50), (5, 100)]
        case .multiDecimated3: [(3, 75), (4, 75), (5, 100)]
        case .multiDecimated4: [(3, 95), (4, 90), (5, 100)]
        case .multiDistortedFunk: [(7, 4), (9, 70), (10, 30), (11, 30), (13, 30)]
        case .multiDistortedCubed: [(8, 10), (9, 100)]
        case .multiDistortedSquared: [(7, 10), (9, 100)]
        case .multiEcho1: [(0, 100), (1, 20), (2, 50)]
        case .multiEcho2: [(0, 250), (1, 30), (2, 50)]
        case .multiEchoTight1: [(0, 15), (1, 5), (2, 50)]
        case .multiEchoTight2: [(0, 30), (1, 10), (2, 50)]
        case .multiEverythingIsBroken: [(0, 40), (1, 10), (2, 30), (3, 80), (4, 60), (5, 80), (8, 15), (9, 80), (10, 50), (11, 50), (13, 50)]
        case .speechAlienChatter: [(0, 20), (1, 5), (2, 30), (10, 700), (11, 1300), (13, 80)]
        case .speechCosmicInterference: [(3, 40), (5, 60), (10, 3000), (11, 3000), (13, 60)]
        case .speechGoldenPi: [(10, 314.159), (11, 314.159), (13, 70)]
        case .speechRadioTower: [(3, 60), (4, 50), (5, 70), (7, 3), (9, 50), (14, -3)]
        case .speechWaves: [(0, 60), (1, 30), (2, 30), (10, 0.5), (11, 0.5), (13, 100)]
        }
    }

    /// The neutral settings every preset starts from: each stage off, the soft clipper at 0 dB.
    static let neutral: [(Int, Float)] = [(0, 0.1), (1, 1), (2, 0), (3, 0), (4, 0), (5, 0), (6, 1), (7, 0), (8, 0), (9, 0),
                                          (10, 100), (11, 100), (12, 50), (13, 0), (14, 0)]
}

/// A multistage distortion (Apple's `AVAudioUnitDistortion`): delay, decimation, polynomial
/// shaping, ring modulation and soft clipping (the stages and their order are described on
/// `AUDistortionNode`), a ``preGain`` before them and a ``wetDryMix`` after.
open class AVAudioUnitDistortion: AVAudioUnitEffect, @unchecked Sendable {
    private var preset = AVAudioUnitDistortionPreset.drumsBitBrush
    private weak var stagesWritten: OATUnits.RenderNode?
    private var presetChanged = false
    /// The gain before the distortion, in decibels, −80 ... 20 (default −6).
    open var preGain: Float = -6 { didSet { push() } }
    /// The share of distorted signal, 0 (dry) ... 100 (default 50).
    open var wetDryMix: Float = 50 { didSet { push() } }

    /// Creates a distortion (Apple's default preset, `drumsBitBrush`).
    public override init() { super.init(audioComponentDescription: .apple(kAudioUnitType_Effect, kAudioUnitSubType_Distortion)) }

    /// Configures the stages from a factory preset (``preGain`` and ``wetDryMix`` keep their values).
    open func loadFactoryPreset(_ preset: AVAudioUnitDistortionPreset) {
        self.preset = preset
        presetChanged = true
        push()
    }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        AUDistortionNode(channels: outputChannels)
    }

    override func push() {
        guard let node = parameterNode as? AUDistortionNode else { return }
        // The stages are the preset's: written when it is loaded and to a new node, so stages
        // set through `audioUnit` stay while other properties change.
        if stagesWritten !== node || presetChanged {
            for (i, v) in AVAudioUnitDistortionPreset.neutral { node.parameter(i).value = v }
            for (i, v) in preset.settings { node.parameter(i).value = v }
            stagesWritten = node
            presetChanged = false
        }
        node.preGain.value = min(20, max(-80, preGain))
        node.finalMix.value = bypass ? 0 : min(100, max(0, wetDryMix))
    }

    /// The presets of ``AVAudioUnitDistortionPreset`` in order, named from their cases
    /// (`multiEcho1` is "Multi Echo 1").
    override var factoryPresetNames: [String] {
        (0...21).compactMap { AVAudioUnitDistortionPreset(rawValue: $0) }.map { preset in
            var name = ""
            for ch in String(describing: preset) {
                if ch.isUppercase || (ch.isNumber && !(name.last?.isNumber ?? true)) { name.append(" ") }
                name.append(name.isEmpty ? Character(ch.uppercased()) : ch)
            }
            return name
        }
    }

    override func loadFactoryPreset(number: Int) {
        if let preset = AVAudioUnitDistortionPreset(rawValue: number) { loadFactoryPreset(preset) }
    }

    override func handleDidSetParameter(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, value: AudioUnitParameterValue) {
        switch id {
        case 16: preGain = value                   // the pre-gain (this node's parameter 16; Apple has no ID for it)
        case 15: if !bypass { wetDryMix = value }  // kDistortionParam_FinalMix
        default: break
        }
    }
}
