// Apple's effect units (AVAudioUnitEQ, AVAudioUnitReverb, AVAudioUnitDelay,
// AVAudioUnitTimePitch, AVAudioUnitVarispeed) over the OATUnits nodes.
import Foundation
import OpenAudioToolbox
internal import OATUnits

/// An EQ band's filter (Apple's `AVAudioUnitEQFilterType`).
public enum AVAudioUnitEQFilterType: Int, Sendable {
    /// A peak/notch with gain and bandwidth.
    case parametric = 0
    /// A 12 dB/octave low-pass.
    case lowPass = 1
    /// A 12 dB/octave high-pass.
    case highPass = 2
    /// A low-pass with a resonant peak (bandwidth sets the resonance).
    case resonantLowPass = 3
    /// A high-pass with a resonant peak.
    case resonantHighPass = 4
    /// A band-pass.
    case bandPass = 5
    /// A band-stop.
    case bandStop = 6
    /// A low shelf with gain.
    case lowShelf = 7
    /// A high shelf with gain.
    case highShelf = 8
    /// A low shelf with a resonant peak.
    case resonantLowShelf = 9
    /// A high shelf with a resonant peak.
    case resonantHighShelf = 10
}

/// One band of an ``AVAudioUnitEQ`` (Apple's `AVAudioUnitEQFilterParameters`); changes apply
/// while playing.
open class AVAudioUnitEQFilterParameters: NSObject, @unchecked Sendable {
    weak var owner: AVAudioUnitEQ?
    let index: Int
    init(index: Int) { self.index = index }
    /// The filter type (default parametric).
    open var filterType: AVAudioUnitEQFilterType = .parametric { didSet { owner?.push() } }
    /// The centre or cut-off frequency in hertz (default 1000).
    open var frequency: Float = 1000 { didSet { owner?.push() } }
    /// The bandwidth in octaves, 0.05 ... 5 (default 0.5).
    open var bandwidth: Float = 0.5 { didSet { owner?.push() } }
    /// The gain in decibels, -96 ... 24 (default 0).
    open var gain: Float = 0 { didSet { owner?.push() } }
    /// True (the default, as on Apple) leaves the band out until you set it to false.
    open var bypass = true { didSet { owner?.push() } }
}

/// A multi-band equaliser (Apple's `AVAudioUnitEQ`).
open class AVAudioUnitEQ: AVAudioUnitEffect, @unchecked Sendable {
    /// The bands, in order.
    public let bands: [AVAudioUnitEQFilterParameters]
    /// A gain applied to the whole signal, in decibels (-96 ... 24).
    open var globalGain: Float = 0 { didSet { push() } }

    /// An EQ of `numberOfBands` bands (each bypassed until set up).
    public init(numberOfBands: Int) {
        bands = (0..<max(1, numberOfBands)).map { AVAudioUnitEQFilterParameters(index: $0) }
        super.init(audioComponentDescription: .apple(kAudioUnitType_Effect, kAudioUnitSubType_NBandEQ))
        for b in bands { b.owner = self }
    }

    /// One band, as ``AVAudioUnitEQ(numberOfBands:)`` with 1.
    public convenience override init() { self.init(numberOfBands: 1) }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        AUNBandEQNode(channels: outputChannels, bands: bands.map { _ in AUEQBand(.parametric, frequency: 1000, bypass: true) })
    }

    override func push() {
        guard let eq = parameterNode as? AUNBandEQNode else { return }
        eq.globalGainParameter.value = globalGain
        for (i, b) in bands.enumerated() {
            eq.filterType(i).value = Float(b.filterType.rawValue)
            eq.frequency(i).value = b.frequency
            eq.bandwidth(i).value = b.bandwidth
            eq.gain(i).value = b.gain
            eq.bypass(i).value = (b.bypass || bypass) ? 1 : 0
        }
    }

    override func handleDidSetParameter(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, value: AudioUnitParameterValue) {
        if id == AUNBandEQNode.globalGainID { globalGain = value; return }
        let kind = id / 1000 * 1000, index = Int(id % 1000)
        guard index < bands.count else { return }
        let band = bands[index]
        switch kind {
        case AUNBandEQNode.bypassID: band.bypass = value != 0
        case AUNBandEQNode.filterTypeID: band.filterType = AVAudioUnitEQFilterType(rawValue: Int(value)) ?? band.filterType
        case AUNBandEQNode.frequencyID: band.frequency = value
        case AUNBandEQNode.gainID: band.gain = value
        case AUNBandEQNode.bandwidthID: band.bandwidth = value
        default: break
        }
    }
}

/// Reverb rooms (Apple's `AVAudioUnitReverbPreset`).
public enum AVAudioUnitReverbPreset: Int, Sendable {
    /// A small room.
    case smallRoom = 0
    /// A medium room.
    case mediumRoom = 1
    /// A large room.
    case largeRoom = 2
    /// A medium hall.
    case mediumHall = 3
    /// A large hall.
    case largeHall = 4
    /// A plate.
    case plate = 5
    /// A medium chamber.
    case mediumChamber = 6
    /// A large chamber.
    case largeChamber = 7
    /// A cathedral.
    case cathedral = 8
    /// Another large room.
    case largeRoom2 = 9
    /// Another medium hall.
    case mediumHall2 = 10
    /// A third medium hall.
    case mediumHall3 = 11
    /// Another large hall.
    case largeHall2 = 12

    /// Decay time at low frequencies and at Nyquist, in seconds.
    var decay: (low: Float, nyquist: Float) {
        switch self {
        case .smallRoom: (0.5, 0.2)
        case .mediumRoom: (0.9, 0.35)
        case .largeRoom, .largeRoom2: (1.4, 0.5)
        case .mediumHall, .mediumHall2, .mediumHall3: (2.0, 0.8)
        case .largeHall, .largeHall2: (3.0, 1.1)
        case .plate: (1.8, 1.6)
        case .mediumChamber: (1.2, 0.6)
        case .largeChamber: (1.8, 0.8)
        case .cathedral: (6.0, 2.0)
        }
    }
}

/// A reverb (Apple's `AVAudioUnitReverb`).
open class AVAudioUnitReverb: AVAudioUnitEffect, @unchecked Sendable {
    private var preset = AVAudioUnitReverbPreset.mediumHall
    /// The decay times the preset sets (or `kReverb2Param_DecayTimeAt0Hz`/`AtNyquist` through ``audioUnit``).
    private var decay = AVAudioUnitReverbPreset.mediumHall.decay
    /// The share of reverberated signal, 0 (dry) ... 100 (wet).
    open var wetDryMix: Float = 100 { didSet { push() } }

    /// Creates a reverb (a medium hall, fully wet as Apple's default).
    public override init() { super.init(audioComponentDescription: .apple(kAudioUnitType_Effect, kAudioUnitSubType_Reverb2)) }

    /// Selects a room.
    open func loadFactoryPreset(_ preset: AVAudioUnitReverbPreset) {
        self.preset = preset
        decay = preset.decay
        push()
    }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        AUReverbNode(channels: outputChannels)
    }

    /// The rooms of ``AVAudioUnitReverbPreset``, named as AUReverb2's factory presets.
    override var factoryPresetNames: [String] {
        ["Small Room", "Medium Room", "Large Room", "Medium Hall", "Large Hall", "Plate", "Medium Chamber", "Large Chamber",
         "Cathedral", "Large Room 2", "Medium Hall 2", "Medium Hall 3", "Large Hall 2"]
    }

    override func loadFactoryPreset(number: Int) {
        if let preset = AVAudioUnitReverbPreset(rawValue: number) { loadFactoryPreset(preset) }
    }

    override func handleDidSetParameter(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, value: AudioUnitParameterValue) {
        switch id {
        case 0: if !bypass { wetDryMix = value }   // kReverb2Param_DryWetMix
        case 4: decay.low = value                   // kReverb2Param_DecayTimeAt0Hz
        case 5: decay.nyquist = value               // kReverb2Param_DecayTimeAtNyquist
        default: break
        }
    }

    override func push() {
        guard let reverb = parameterNode as? AUReverbNode else { return }
        reverb.decayTime.value = decay.low
        reverb.decayAtNyquist.value = decay.nyquist
        reverb.wetDryMix.value = bypass ? 0 : min(100, max(0, wetDryMix))
    }
}

/// A delay line with feedback (Apple's `AVAudioUnitDelay`).
open class AVAudioUnitDelay: AVAudioUnitEffect, @unchecked Sendable {
    /// Seconds of delay, 0 ... 2 (default 1).
    open var delayTime: TimeInterval = 1 { didSet { push() } }
    /// Feedback in percent, -100 ... 100 (default 50).
    open var feedback: Float = 50 { didSet { push() } }
    /// The cut-off of the low-pass in the loop, in hertz (default 15000).
    open var lowPassCutoff: Float = 15000 { didSet { push() } }
    /// The share of delayed signal, 0 ... 100 (default 100).
    open var wetDryMix: Float = 100 { didSet { push() } }

    /// Creates a delay.
    public override init() { super.init(audioComponentDescription: .apple(kAudioUnitType_Effect, kAudioUnitSubType_Delay)) }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        AUDelayNode(channels: outputChannels)
    }

    override func push() {
        guard let delay = parameterNode as? AUDelayNode else { return }
        delay.delayTime.value = Float(min(2, max(0, delayTime)))
        delay.feedback.value = min(100, max(-100, feedback))
        delay.lowPassCutoff.value = max(10, lowPassCutoff)
        delay.wetDryMix.value = bypass ? 0 : min(100, max(0, wetDryMix))
    }

    override func handleDidSetParameter(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, value: AudioUnitParameterValue) {
        switch id {
        case 0: if !bypass { wetDryMix = value }   // kDelayParam_WetDryMix
        case 1: delayTime = TimeInterval(value)     // kDelayParam_DelayTime
        case 2: feedback = value                    // kDelayParam_Feedback
        case 3: lowPassCutoff = value               // kDelayParam_LopassCutoff
        default: break
        }
    }
}

/// Playback rate and pitch changed independently (Apple's `AVAudioUnitTimePitch`; Rubber
/// Band underneath, see docs/timepitch.md).
open class AVAudioUnitTimePitch: AVAudioUnitTimeEffect, @unchecked Sendable {
    /// The playback rate, 1/32 ... 32 (default 1).
    open var rate: Float = 1 { didSet { push() } }
    /// The pitch shift in cents, -2400 ... 2400 (default 0).
    open var pitch: Float = 0 { didSet { push() } }
    /// The analysis overlap, 3 ... 32 (default 8; kept for source compatibility).
    open var overlap: Float = 8

    /// Creates a time-pitch unit.
    public init() { super.init(audioComponentDescription: .apple(kAudioUnitType_FormatConverter, kAudioUnitSubType_NewTimePitch)) }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        AUTimePitchNode(channels: outputChannels)
    }

    /// The audio the stretcher holds back, in seconds of output. The stretcher reports its
    /// latency in frames at normal speed and pitch; slowed down or pitched down, what it holds
    /// lasts longer when played (measured at a sink: 0.5x and -1200 cents each hold about twice
    /// as long).
    open override var latency: TimeInterval {
        guard let node = parameterNode as? AUTimePitchNode, let engine else { return 0 }
        let stretch = max(1, 1 / Double(min(32, max(1.0 / 32, rate))))
        let lowered = max(1, 1 / pow(2, Double(min(2400, max(-2400, pitch))) / 1200))
        return Double(node.latencyFrames) / engine.renderRate * stretch * lowered
    }

    override func push() {
        guard let node = parameterNode as? AUTimePitchNode else { return }
        node.rate.value = min(32, max(1.0 / 32, rate))
        node.pitch.value = min(2400, max(-2400, pitch))
        node.bypass.value = bypass ? 1 : 0
    }

    override func handleDidSetParameter(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, value: AudioUnitParameterValue) {
        switch id {
        case 0: rate = value    // kNewTimePitchParam_Rate
        case 1: pitch = value   // kNewTimePitchParam_Pitch
        default: break
        }
    }
}

/// Playback rate with pitch following it, like a tape (Apple's `AVAudioUnitVarispeed`).
open class AVAudioUnitVarispeed: AVAudioUnitTimeEffect, @unchecked Sendable {
    /// The playback rate, 0.25 ... 4 (default 1).
    open var rate: Float = 1 { didSet { push() } }

    /// Creates a varispeed unit.
    public init() { super.init(audioComponentDescription: .apple(kAudioUnitType_FormatConverter, kAudioUnitSubType_Varispeed)) }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        AUVarispeedNode(channels: outputChannels)
    }

    override func push() {
        guard let node = parameterNode as? AUVarispeedNode else { return }
        node.playbackRate.value = bypass ? 1 : min(4, max(0.25, rate))
    }

    override func handleDidSetParameter(_ id: AudioUnitParameterID, scope: AudioUnitScope, element: AudioUnitElement, value: AudioUnitParameterValue) {
        if id == 0, !bypass { rate = value }   // kVarispeedParam_PlaybackRate
    }
}
