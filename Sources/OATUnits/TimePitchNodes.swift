import OATCore
import OATProcessing

/// Time-pitch (Apple's `kAudioUnitSubType_NewTimePitch`): changes the playback rate without
/// changing pitch and the pitch without changing the rate, through ``TimePitchProcessor``
/// (Rubber Band in real-time mode; see docs/timepitch.md). It pulls as much input per call as
/// the stretch needs (more than it outputs when the rate is above 1).
///
/// Parameters (Apple's IDs, global scope): rate 0 (`kNewTimePitchParam_Rate`, 0.5 ... 2,
/// default 1), pitch 1 (`kNewTimePitchParam_Pitch`, cents, −2400 ... 2400, default 0), bypass 2
/// (0/1). At rate 1 and pitch 0, before it is first moved, the input passes through unchanged.
public final class AUTimePitchNode: RenderNode, @unchecked Sendable {
    /// The algorithm (spectral: Rubber Band R3; timeDomain: R2; varispeed: resampling).
    public let algorithm: TimePitchAlgorithm
    private var processor: TimePitchProcessor?
    private let pullScratch: UnsafeMutablePointer<UnsafeMutablePointer<Float>>

    /// Creates a time-pitch node of `channels` channels.
    public init(channels: Int = 2, algorithm: TimePitchAlgorithm = .spectral, name: String = "time-pitch") {
        self.algorithm = algorithm
        pullScratch = .allocate(capacity: max(1, channels))
        super.init(name: name, inputChannels: [channels], outputChannels: [channels], parameters: [
            NodeParameter(id: 0, name: "rate", unit: .ratio, range: 0.5...2, defaultValue: 1),
            NodeParameter(id: 1, name: "pitch", unit: .generic, range: -2400...2400, defaultValue: 0),
            NodeParameter(id: 2, name: "bypass", unit: .boolean, range: 0...1, defaultValue: 0),
        ])
    }

    deinit { pullScratch.deallocate() }

    /// Playback rate 0.5...2.
    public var rate: NodeParameter { parameters[0] }
    /// Pitch shift in cents.
    public var pitch: NodeParameter { parameters[1] }
    /// Bypass (1: input passes unchanged).
    public var bypass: NodeParameter { parameters[2] }

    /// Input frames the stretch holds back (its latency), once prepared.
    public var latencyFrames: Int { processor?.latencyFrames ?? 0 }

    /// Creates the processor for the graph's rate and slice size.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        processor = try TimePitchProcessor(sampleRate: sampleRate, channels: inputChannels[0], algorithm: algorithm,
                                           maximumFramesPerCall: max(16, maxFrames))
    }

    /// Stretches: asks the processor for the output, feeding it input pulled from bus 0.
    public override func render(_ context: AURenderContext) {
        let out = context.output(0)
        guard let p = processor else { out.silence(); return }
        try? p.setRate(Double(rate.value))
        try? p.setPitch(cents: Double(pitch.value))
        p.bypass = bypass.value >= 0.5
        let channels = out.channelCount
        let n = p.render(into: UnsafePointer(out.channels), frames: context.frames) { dest, want in
            let input = context.pullInput(0, frames: want)
            let k = min(want, input.frames)
            for c in 0..<channels { dest[c].update(from: input[min(c, input.channelCount - 1)], count: k) }
            return k
        }
        if n < context.frames { for c in 0..<channels { (out[c] + n).update(repeating: 0, count: context.frames - n) } }
    }
}

/// Voice processing (the processing of Apple's `kAudioUnitSubType_VoiceProcessingIO`, as a
/// graph node): echo cancellation, residual echo and noise suppression through
/// ``VoiceProcessor`` (SpeexDSP). Input bus 0 is the microphone (mono), input bus 1 the far-end
/// reference (what is being played, mono); output bus 0 is the cleaned microphone signal, one
/// SpeexDSP frame (10 ms) late. Wire it as: input node -> voice processing (bus 0), the signal
/// you send to the output -> splitter -> voice processing (bus 1).
///
/// Parameters (global): bypass 0 (0/1; Apple's `kAUVoiceIOProperty_BypassVoiceProcessing`).
public final class AUVoiceProcessingNode: RenderNode, @unchecked Sendable {
    /// The settings (sample rate is taken from the graph).
    public let settings: VoiceProcessingSettings
    private var processor: VoiceProcessor?

    /// Creates a voice-processing node.
    public init(settings: VoiceProcessingSettings = VoiceProcessingSettings(), name: String = "voice processing") {
        self.settings = settings
        super.init(name: name, inputChannels: [1, 1], outputChannels: [1], parameters: [
            NodeParameter(id: 0, name: "bypass", unit: .boolean, range: 0...1, defaultValue: 0),
        ])
    }

    /// Bypass (1: the microphone passes through, still one frame late).
    public var bypass: NodeParameter { parameters[0] }

    /// The processor's latency in frames, once prepared.
    public var latencyFrames: Int { processor?.latencyFrames ?? 0 }

    /// Creates the SpeexDSP state for the graph's rate.
    public override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        var s = settings
        s.sampleRate = Int(sampleRate)
        processor = try VoiceProcessor(settings: s)
    }

    /// Cancels the echo of bus 1 in bus 0.
    public override func render(_ context: AURenderContext) {
        let out = context.output(0)
        guard let p = processor else { out.silence(); return }
        p.bypass = bypass.value >= 0.5
        let mic = context.input(0)
        let reference = context.isInputConnected(1) ? context.input(1)[0] : nil
        p.process(microphone: mic[0], reference: reference.map { UnsafePointer($0) }, output: out[0], frames: context.frames)
    }
}
