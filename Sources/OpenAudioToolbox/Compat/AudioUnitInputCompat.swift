// The input side of the C API's I/O units: kAudioOutputUnitProperty_EnableIO on element 1,
// kAudioOutputUnitProperty_SetInputCallback, AudioUnitRender on element 1, and
// kAudioUnitSubType_VoiceProcessingIO (echo cancellation on the input against what the unit
// plays), on an AUInputNode fed by the input device OAT_INPUT names.

import OATCore
import OATDevices
import OATProcessing
import OATUnits
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `AURenderCallbackStruct` on element 1 of an I/O unit: called on the I/O thread when input is
/// available (before the output is rendered); call ``AudioUnitRender(_:_:_:_:_:_:)`` on element 1
/// from it to get the captured frames. `ioData` is nil.
public let kAudioOutputUnitProperty_SetInputCallback: AudioUnitPropertyID = 2005
/// `UInt32` (read only): 1 when the I/O unit has the element's direction (output 0, input 1).
public let kAudioOutputUnitProperty_HasIO: AudioUnitPropertyID = 2006
/// `UInt32` on a voice-processing I/O unit: 1 passes the microphone through unprocessed (the
/// echo canceller keeps adapting). Settable at any time.
public let kAUVoiceIOProperty_BypassVoiceProcessing: AudioUnitPropertyID = 2100
/// `UInt32` on a voice-processing I/O unit: 1 turns on automatic gain control of the processed
/// microphone (set before initialising).
public let kAUVoiceIOProperty_VoiceProcessingEnableAGC: AudioUnitPropertyID = 2101
/// `UInt32` on a voice-processing I/O unit: 1 mutes what the unit plays (the render callback
/// is still called). Settable at any time.
public let kAUVoiceIOProperty_MuteOutput: AudioUnitPropertyID = 2104

/// Where I/O units opened through the C API capture: `OAT_INPUT` (`auto`, `pulse`,
/// `pulse:SOURCE`, `alsa`, `alsa:DEVICE`), by default PulseAudio's default source, else ALSA's.
enum CompatInput {
    static func spec() -> AudioInputSpec {
        guard let raw = getenv("OAT_INPUT") else { return .auto }
        return AudioInputSpec(parsing: String(cString: raw)) ?? .auto
    }
}

/// The input side of one I/O unit: the input node (its ring filled by the device's thread),
/// the client format the app asked for on (output scope, element 1), the voice processor of a
/// voice-processing unit, and preallocated render-thread buffers.
///
/// Thread safety: built and torn down on the control plane; ``render(into:frames:)`` and
/// ``noteOutput(_:)`` run on the render thread only; the flags are atomics.
final class CompatInputIO: @unchecked Sendable {
    let node: AUInputNode
    let clientFormat: AudioStreamBasicDescription
    let voice: VoiceProcessor?
    let callback: AURenderCallbackStruct?
    let muteOutput = Atomic<Bool>(false)
    let maxFrames: Int
    private let channelPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private let floats: UnsafeMutablePointer<Float>
    private let mono: UnsafeMutablePointer<Float>
    private let reference: UnsafeMutablePointer<Float>
    private var referenceFrames = 0
    private let clientBuffers: [UnsafeMutableRawPointer]
    private let clientBufferBytes: Int
    let dummyRefCon = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    /// Checks the client format: linear PCM Float32, Int16 or Int32, at 8 ... 192 kHz (the
    /// capture is opened at that rate; `rate`, the graph's, when voice processing, whose echo
    /// reference is what the unit plays).
    static func check(_ f: AudioStreamBasicDescription, rate: Double?) -> OSStatus {
        guard f.mFormatID == kAudioFormatLinearPCM, f.mChannelsPerFrame >= 1, f.mChannelsPerFrame <= 64,
              f.mSampleRate >= 8000, f.mSampleRate <= 192_000, rate == nil || f.mSampleRate == rate else {
            return kAudioUnitErr_FormatNotSupported
        }
        let bits = Int(f.mBitsPerChannel)
        guard (f.isFloat && bits == 32) || (!f.isFloat && (bits == 16 || bits == 32)) else { return kAudioUnitErr_FormatNotSupported }
        return noErr
    }

    init(node: AUInputNode, clientFormat: AudioStreamBasicDescription, voice: VoiceProcessor?, callback: AURenderCallbackStruct?, maxFrames: Int) {
        self.node = node
        self.clientFormat = clientFormat
        self.voice = voice
        self.callback = callback
        self.maxFrames = maxFrames
        let ch = node.channels
        floats = .allocate(capacity: ch * maxFrames)
        floats.initialize(repeating: 0, count: ch * maxFrames)
        channelPointers = .allocate(capacity: ch)
        for c in 0..<ch { (channelPointers + c).initialize(to: floats + c * maxFrames) }
        mono = .allocate(capacity: maxFrames)
        mono.initialize(repeating: 0, count: maxFrames)
        reference = .allocate(capacity: maxFrames)
        reference.initialize(repeating: 0, count: maxFrames)
        clientBufferBytes = max(1, maxFrames * Int(clientFormat.mBytesPerFrame))
        clientBuffers = (0..<max(1, clientFormat.bufferCount)).map { _ in
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(1, maxFrames * Int(clientFormat.mBytesPerFrame)), alignment: 16)
            p.initializeMemory(as: UInt8.self, repeating: 0, count: max(1, maxFrames * Int(clientFormat.mBytesPerFrame)))
            return p
        }
    }

    deinit {
        node.stop()
        floats.deallocate()
        channelPointers.deallocate()
        mono.deallocate()
        reference.deallocate()
        for b in clientBuffers { b.deallocate() }
        dummyRefCon.deallocate()
    }

    /// Render thread: keeps what the unit played (mono) as the echo canceller's reference for
    /// the next input.
    func noteOutput(_ out: AUBufferList) {
        let n = min(out.frames, maxFrames)
        let ch = out.channelCount
        for f in 0..<n {
            var s: Float = 0
            for c in 0..<ch { s += out[c][f] }
            reference[f] = s / Float(max(1, ch))
        }
        referenceFrames = n
    }

    /// Render thread: `frames` captured frames into `ioData` in the client format (buffers
    /// with nil `mData` get the unit's own memory, as on Apple's I/O units).
    func render(into ioData: UnsafeMutablePointer<AudioBufferList>, frames: Int) -> OSStatus {
        guard frames <= maxFrames else { return kAudioUnitErr_TooManyFramesToProcess }
        let list = UnsafeMutableAudioBufferListPointer(ioData)
        let f = clientFormat
        let buffers = f.bufferCount
        let bpf = Int(f.mBytesPerFrame)
        guard list.count >= buffers, bpf > 0 else { return kAudio_ParamError }
        let ch = node.channels
        node.pull(into: channelPointers, channelCount: ch, frames: frames)
        if let voice {
            for i in 0..<frames {
                var s: Float = 0
                for c in 0..<ch { s += channelPointers[c][i] }
                mono[i] = s / Float(ch)
            }
            if referenceFrames < frames { (reference + referenceFrames).update(repeating: 0, count: frames - referenceFrames) }
            voice.process(microphone: mono, reference: reference, output: mono, frames: frames)
            for c in 0..<ch { channelPointers[c].update(from: mono, count: frames) }
        }
        let clientChannels = Int(f.mChannelsPerFrame)
        let interleaved = f.isInterleaved
        let bits = Int(f.mBitsPerChannel)
        for b in 0..<buffers {
            if list[b].mData == nil {
                list[b].mData = clientBuffers[b]
                list[b].mDataByteSize = UInt32(clientBufferBytes)
            }
            guard let data = list[b].mData, Int(list[b].mDataByteSize) >= frames * bpf else { return kAudio_ParamError }
            let channelsHere = interleaved ? clientChannels : 1
            for k in 0..<channelsHere {
                let c = interleaved ? k : b
                let src = channelPointers[c % ch]
                let stride = channelsHere
                if f.isFloat {
                    let p = data.assumingMemoryBound(to: Float.self)
                    for i in 0..<frames { p[i * stride + k] = src[i] }
                } else if bits == 16 {
                    let p = data.assumingMemoryBound(to: Int16.self)
                    for i in 0..<frames { p[i * stride + k] = Int16(max(-32768, min(32767, (src[i] * 32768).rounded()))) }
                } else {
                    let p = data.assumingMemoryBound(to: Int32.self)
                    for i in 0..<frames { p[i * stride + k] = Int32(max(-2_147_483_648, min(2_147_483_647, (Double(src[i]) * 2_147_483_648).rounded()))) }
                }
            }
            list[b].mNumberChannels = UInt32(channelsHere)
            list[b].mDataByteSize = UInt32(frames * bpf)
        }
        return noErr
    }
}

/// Sits between an I/O unit's render callback (or silence) and its output: on every slice it
/// first calls the input callback (input is available), then passes the output through,
/// muted if asked, and notes it as the voice processor's reference. When the client input
/// rate differs from the output's, the input callback is offered the slice's duration at the
/// client rate (`inNumberFrames` alternating, e.g. 341/342 at 16 kHz under 1024 at 48 kHz).
final class CompatIONode: OATUnits.RenderNode, @unchecked Sendable {
    let io: CompatInputIO
    let unit: AudioUnit
    private var outputFrames: Int64 = 0     // render thread
    private var inputFrames: Int64 = 0      // render thread

    init(io: CompatInputIO, unit: AudioUnit, channels: Int) {
        self.io = io
        self.unit = unit
        super.init(name: "I/O", inputChannels: [channels], outputChannels: [channels])
    }

    override func render(_ context: AURenderContext) {
        if let cb = io.callback, let proc = cb.inputProc {
            let inRate = io.node.inputSampleRate
            var frames = context.frames
            if inRate != sampleRate {
                outputFrames += Int64(context.frames)
                let due = Int64((Double(outputFrames) * inRate / sampleRate).rounded(.down))
                frames = Int(min(Int64(io.maxFrames), due - inputFrames))
            }
            var flags = AudioUnitRenderActionFlags()
            var time = AudioTimeStamp(sampleTime: Double(inRate != sampleRate ? inputFrames : context.sampleTime), hostTime: context.hostTime, rateScalar: 1,
                                      flags: context.hostTime != 0 ? .sampleHostTimeValid : .sampleTimeValid)
            inputFrames += Int64(frames)
            if frames > 0 {
                _ = withUnsafeMutablePointer(to: &flags) { f in
                    withUnsafePointer(to: &time) { t in proc(cb.inputProcRefCon ?? io.dummyRefCon, f, t, 1, UInt32(frames), nil) }
                }
            }
        }
        let out = context.output(0)
        if io.muteOutput.load(ordering: .relaxed) { out.silence() } else { out.copy(from: context.input(0)) }
        io.noteOutput(out)
    }
}

extension CompatUnit {
    /// True for the voice-processing I/O unit.
    var isVoiceIO: Bool { component.description.componentSubType == kAudioUnitSubType_VoiceProcessingIO }

    /// Initialising an I/O unit with input enabled (standalone, or the output unit of an
    /// AUGraph): the input node (in the graph; pulled by AudioUnitRender on element 1, or
    /// connected from element 1 inside an AUGraph) and the I/O node before the output. Returns
    /// the node the bus-0 render callback (or the graph's connection into the unit) should feed.
    func setUpInput(graph g: AudioGraph) throws(AudioError) -> OATUnits.RenderNode? {
        guard enableIO[1] == 1 else { return nil }
        // Unset: mono Float32 at the output's rate.
        let client = formats[Key(scope: kAudioUnitScope_Output, element: 1)] ?? .canonicalFloat(sampleRate: g.sampleRate, channels: 1)
        let status = CompatInputIO.check(client, rate: isVoiceIO ? g.sampleRate : nil)
        guard status == noErr else {
            throw AudioError(.unsupportedFormat, component: "AudioUnit", "the input format (output scope, element 1) must be linear PCM Float32/Int16/Int32 at 8 to 192 kHz (at the output's rate \(g.sampleRate) Hz for voice processing)", osStatus: status)
        }
        let node = AUInputNode(channels: Int(client.mChannelsPerFrame), capacityFrames: max(8192, Int(client.mSampleRate)),
                               inputSampleRate: client.mSampleRate, name: "input")
        try g.add(node)
        var voice: VoiceProcessor?
        if isVoiceIO {
            var s = VoiceProcessingSettings()
            s.sampleRate = Int(g.sampleRate)
            s.automaticGainControl = voiceAGC
            let v = try VoiceProcessor(settings: s)
            v.bypass = voiceBypass
            voice = v
        }
        let cb = inputCallback.flatMap { $0.inputProc == nil ? nil : $0 }
        let io = CompatInputIO(node: node, clientFormat: client, voice: voice, callback: cb, maxFrames: node.maxInputFrames)
        io.muteOutput.store(voiceMuteOutput, ordering: .relaxed)
        let ioNode = CompatIONode(io: io, unit: handle, channels: g.output.inputChannels[0])
        try g.add(ioNode)
        try g.connect(ioNode, to: g.output)
        self.io = io
        self.ioNode = ioNode
        return ioNode
    }

    /// Undoes ``setUpInput(graph:)``'s state (the graph itself is dropped by the caller).
    func tearDownInput() {
        io?.node.stop()
        io = nil
        ioNode = nil
    }

    /// Starts capturing (before the output starts), with small PulseAudio fragments (5 ms).
    func startInput() throws(AudioError) {
        guard let io else { return }
        var options = AudioInput.Options()
        options.pulseFragment = 0.005
        options.alsaPeriodFrames = 256
        if io.node.device == nil { try io.node.start(CompatInput.spec(), options: options) }
    }

    /// How the output of an I/O unit is opened. The PulseAudio target latency is the device's
    /// `kAudioDevicePropertyBufferFrameSize` plus a safety offset of half of it (Apple's devices
    /// have one too) at the unit's rate, at least 5 ms, when the host set that property; else
    /// 35 ms. (Apple's default I/O buffer, 512 frames, made 17.4 ms here, and that dropped 13-30
    /// ms in 3 of 5 plays with both cores busy; 35 ms dropped nothing: docs/PERFORMANCE.md,
    /// "Output units".) A stop loses none of it: ``builtinAudioOutputUnitStop(_:)`` plays out
    /// what the server holds. With capture as well, 20 ms (and 256-frame ALSA periods), so the
    /// round trip stays short and within the echo canceller's tail.
    var outputOptions: AudioOutput.Options {
        var options = AudioOutput.Options()
        if io != nil {
            options.pulseLatency = 0.02
            options.alsaPeriodFrames = 256
        } else if let frames = ioBufferFrames {
            let rate = format(kAudioUnitScope_Input, 0).mSampleRate
            options.pulseLatency = max(0.005, Double(frames) * 1.5 / (rate >= 1000 ? rate : 44100))
        } else {
            options.pulseLatency = 0.035
        }
        return options
    }
}
