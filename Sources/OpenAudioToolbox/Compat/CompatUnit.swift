// The object behind an AudioUnit handle (CompatUnit) and its per-unit extras.

import OATCore
import OATDevices
import OATFiles
import OATUnits
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The unit `u` names; nil once it has been disposed of.
func compatUnit(_ u: AudioUnit) -> CompatUnit? { CompatHandles.object(u, as: CompatUnit.self) }

func osStatus(_ e: AudioError, default status: OSStatus) -> OSStatus { e.osStatus ?? status }

// MARK: - The unit object

/// One AudioUnit instance: its properties (formats, callbacks, parameters) and, once
/// initialised, its OATUnits node; a standalone unit also owns a small AudioGraph.
final class CompatUnit: @unchecked Sendable {
    struct Key: Hashable { let scope: UInt32; let element: UInt32 }
    struct ParamKey: Hashable { let id: UInt32; let scope: UInt32; let element: UInt32 }

    let component: CompatComponent
    /// The handle naming this unit (set when it is created).
    var handle: AudioUnit { handleSlot! }
    var handleSlot: AudioUnit?
    var formats: [Key: AudioStreamBasicDescription] = [:]
    var callbacks: [UInt32: AURenderCallbackStruct] = [:]
    var parameterValues: [ParamKey: Float] = [:]
    var maxFrames: UInt32 = 4096
    var inputCount: Int
    var outputCount: Int
    var bandCount = 16
    var enableIO: [UInt32: UInt32] = [0: 1, 1: 0]
    var node: OATUnits.RenderNode?
    var initialized = false
    var graph: AudioGraph?           // standalone
    weak var owner: CompatGraph?
    var renderPointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>?
    var running = false
    /// State of the listener, render-notification and player calls (AUComponent.swift, AudioUnitPlayers.swift).
    var extras = CompatUnitExtras()
    /// The input side (I/O units with input enabled, once initialised; AudioUnitInputCompat.swift).
    var inputCallback: AURenderCallbackStruct?
    var io: CompatInputIO?
    var ioNode: CompatIONode?
    var voiceBypass = false
    /// The inputs AudioUnitProcess/AudioUnitProcessMultiple hand over, one per input bus (made
    /// on their first call, which re-initialises the unit with them; AUComponentProcess.swift).
    var processSources: [UInt32: CompatProcessSource] = [:]
    /// `kAudioOutputUnitProperty_CurrentDevice` as set (nil: the default; AudioOutputUnitDevice.swift).
    var currentDevice: AudioObjectID?
    /// `kAudioUnitProperty_BypassEffect`, kept across node rebuilds.
    var bypassEffect = false
    var voiceAGC = false
    var voiceMuteOutput = false
    /// Set on a unit whose node another layer renders (HostedAudioUnit.swift).
    var hostLink: CompatHostLink?
    /// The name `kAudioUnitProperty_ClassInfo` gives the unit's state (AudioUnitClassInfo.swift).
    var presetName = "Untitled"

    init(component: CompatComponent) {
        self.component = component
        switch component.kind {
        case .mixer: inputCount = 8; outputCount = 1
        case .splitter: inputCount = 1; outputCount = 2
        default: inputCount = 1; outputCount = 1
        }
        node = makeNode()
    }

    deinit { renderPointers?.deallocate() }

    var isOutput: Bool { if case .output = component.kind { return true } else { return false } }

    func format(_ scope: UInt32, _ element: UInt32) -> AudioStreamBasicDescription {
        formats[Key(scope: scope, element: element)] ?? .canonicalFloat(sampleRate: 44100, channels: 2)
    }

    func channels(_ scope: UInt32, _ element: UInt32) -> Int { max(1, Int(format(scope, element).mChannelsPerFrame)) }

    func makeNode() -> OATUnits.RenderNode? {
        let inCh = channels(kAudioUnitScope_Input, 0), outCh = channels(kAudioUnitScope_Output, 0)
        let n: OATUnits.RenderNode?
        switch component.kind {
        case .output: n = nil
        case .mixer:
            let m = AUMixerNode(inputs: inputCount, inputChannels: inCh, outputChannels: outCh)
            for b in 0..<inputCount { try? m.setInputChannels(channels(kAudioUnitScope_Input, UInt32(b)), bus: b) }
            n = m
        case .eq:
            n = AUNBandEQNode(channels: inCh, bands: (0..<bandCount).map { b in
                AUEQBand(.parametric, frequency: Float(AUNBandEQNode.graphicFrequencies[b % 10]), gain: 0, bandwidth: 1)
            })
        case .reverb: n = AUReverbNode(channels: inCh)
        case .delay: n = AUDelayNode(channels: inCh)
        case .varispeed: n = AUVarispeedNode(channels: inCh)
        case .converter: n = AUFormatConverterNode(inputChannels: inCh, outputChannels: outCh)
        case .dynamics: n = AUDynamicsNode(channels: inCh)
        case .limiter: n = AUPeakLimiterNode(channels: inCh)
        case .splitter: n = AUSplitterNode(channels: inCh, outputs: outputCount)
        case .custom(let make): n = make(self)
        case .plugIn: n = nil  // never made: AudioComponentInstanceNew and AUGraphAddNode refuse plug-ins for CompatUnit
        }
        if let n {
            for (k, v) in parameterValues { n.parameter(id: k.id, scope: AUScope(rawValue: k.scope) ?? .global, element: Int(k.element))?.value = v }
            n.isBypassed = bypassEffect
        }
        return n
    }

    /// A node for the unit's render callback on input `bus`, in the format set on that bus.
    func bridge(bus: UInt32) -> CompatCallbackNode? {
        let source = processSources[bus]
        guard source != nil || callbacks[bus]?.inputProc != nil else { return nil }
        return CompatCallbackNode(callback: callbacks[bus] ?? AURenderCallbackStruct(), format: format(kAudioUnitScope_Input, bus), bus: bus,
                                  process: source)
    }

    func initialize() -> OSStatus {
        if initialized { return noErr }
        if owner != nil {
            // Inside an AUGraph the graph builds the nodes (AUGraphInitialize).
            node = makeNode()
            initialized = true
            return noErr
        }
        let outFormat = isOutput ? format(kAudioUnitScope_Input, 0) : format(kAudioUnitScope_Output, 0)
        for (k, f) in formats where k.scope != kAudioUnitScope_Global {
            if f.mFormatID != kAudioFormatLinearPCM { return kAudioUnitErr_FormatNotSupported }
            if !isOutput && f.mSampleRate != outFormat.mSampleRate { return kAudioUnitErr_FormatNotSupported }
        }
        do throws(AudioError) {
            let g = try AudioGraph(sampleRate: outFormat.mSampleRate, channels: Int(max(1, outFormat.mChannelsPerFrame)), maxFramesPerSlice: Int(maxFrames))
            if isOutput {
                let target = try setUpInput(graph: g) ?? g.output
                if let b = bridge(bus: 0) {
                    try g.add(b)
                    try g.connect(b, to: target)
                }
            } else {
                guard let n = makeNode() else { return kAudioUnitErr_FailedInitialization }
                node = n
                try g.add(n)
                for bus in 0..<n.inputChannels.count {
                    if let b = bridge(bus: UInt32(bus)) {
                        try g.add(b)
                        try g.connect(b, to: n, input: bus)
                    }
                }
                if !n.outputChannels.isEmpty { try g.connect(n, to: g.output) }
            }
            try g.commit()
            graph = g
            let ch = Int(max(1, outFormat.mChannelsPerFrame))
            renderPointers = .allocate(capacity: ch)
            initialized = true
            return noErr
        } catch {
            return osStatus(error, default: kAudioUnitErr_FailedInitialization)
        }
    }

    func uninitialize() {
        graph?.stop()
        tearDownInput()
        graph = nil
        running = false
        initialized = false
        renderPointers?.deallocate()
        renderPointers = nil
    }
}

/// Calls a unit's render callback on the render thread and turns what it delivers (any linear
/// PCM layout the bus's stream format names: Int16/Int32/Float32, interleaved or not) into
/// the graph's Float32 channels.
final class CompatCallbackNode: OATUnits.RenderNode, @unchecked Sendable {
    let callback: AURenderCallbackStruct
    let clientFormat: AudioStreamBasicDescription
    let bus: UInt32
    private var list: UnsafeMutableAudioBufferListPointer?
    private var storage: [UnsafeMutableRawPointer] = []
    private let dummyRefCon = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
    /// While AudioUnitProcess runs, the input it was given (read instead of calling the callback).
    let process: CompatProcessSource?

    init(callback: AURenderCallbackStruct, format: AudioStreamBasicDescription, bus: UInt32, process: CompatProcessSource? = nil) {
        self.callback = callback
        self.process = process
        clientFormat = format
        self.bus = bus
        super.init(name: "render callback \(bus)", inputChannels: [], outputChannels: [Int(max(1, format.mChannelsPerFrame))])
    }

    deinit {
        if let list { free(list.unsafeMutablePointer) }
        for s in storage { s.deallocate() }
        dummyRefCon.deallocate()
    }

    override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        let count = clientFormat.bufferCount
        if let list { free(list.unsafeMutablePointer) }
        for s in storage { s.deallocate() }
        list = AudioBufferList.allocate(maximumBuffers: count)
        storage = (0..<count).map { _ in
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(1, maxFrames * Int(clientFormat.mBytesPerFrame)), alignment: 16)
            p.initializeMemory(as: UInt8.self, repeating: 0, count: max(1, maxFrames * Int(clientFormat.mBytesPerFrame)))
            return p
        }
    }

    override func render(_ context: AURenderContext) {
        let out = context.output(0)
        let frames = context.frames
        let bpf = Int(clientFormat.mBytesPerFrame)
        if let given = process?.list {
            copy(from: UnsafeMutableAudioBufferListPointer(given), to: out, frames: frames, bpf: bpf)
            return
        }
        guard let list, let proc = callback.inputProc else { out.silence(); return }
        let interleaved = clientFormat.isInterleaved
        let ch = out.channelCount
        list.count = storage.count
        for i in 0..<storage.count {
            list[i] = AudioBuffer(mNumberChannels: interleaved ? UInt32(ch) : 1, mDataByteSize: UInt32(frames * bpf), mData: storage[i])
        }
        var flags = AudioUnitRenderActionFlags()
        var time = AudioTimeStamp(sampleTime: Double(context.sampleTime), hostTime: context.hostTime, rateScalar: 1,
                                  flags: context.hostTime != 0 ? .sampleHostTimeValid : .sampleTimeValid)
        let status = withUnsafeMutablePointer(to: &flags) { f in
            withUnsafePointer(to: &time) { t in proc(callback.inputProcRefCon ?? dummyRefCon, f, t, bus, UInt32(frames), list.unsafeMutablePointer) }
        }
        guard status == noErr, list.count > 0 else { out.silence(); return }
        copy(from: list, to: out, frames: frames, bpf: bpf)
    }

    /// Converts the client-format buffers to the graph's Float32 channels.
    private func copy(from list: UnsafeMutableAudioBufferListPointer, to out: AUBufferList, frames: Int, bpf: Int) {
        let interleaved = clientFormat.isInterleaved
        let ch = out.channelCount
        let bits = Int(clientFormat.mBitsPerChannel)
        let isFloat = clientFormat.isFloat
        for c in 0..<ch {
            let o = out[c]
            let bufferIndex = interleaved ? 0 : c
            guard bufferIndex < list.count, let data = list[bufferIndex].mData, bpf > 0 else {
                o.update(repeating: 0, count: frames)
                continue
            }
            let available = min(frames, Int(list[bufferIndex].mDataByteSize) / bpf)
            let stride = interleaved ? ch : 1
            let offset = interleaved ? c : 0
            if isFloat && bits == 32 {
                let p = data.assumingMemoryBound(to: Float.self)
                for f in 0..<available { o[f] = p[f * stride + offset] }
            } else if !isFloat && bits == 16 {
                let p = data.assumingMemoryBound(to: Int16.self)
                for f in 0..<available { o[f] = Float(p[f * stride + offset]) / 32768 }
            } else if !isFloat && bits == 32 {
                let p = data.assumingMemoryBound(to: Int32.self)
                for f in 0..<available { o[f] = Float(Double(p[f * stride + offset]) / 2_147_483_648) }
            } else {
                o.update(repeating: 0, count: available)
            }
            if available < frames { (o + available).update(repeating: 0, count: frames - available) }
        }
    }
}

// MARK: - Per-unit state

/// Listeners, render notifications and player state of a ``CompatUnit``.
final class CompatUnitExtras {
    struct Listener { var id: AudioUnitPropertyID; var proc: AudioUnitPropertyListenerProc; var userData: UnsafeMutableRawPointer? }
    var listeners: [Listener] = []
    var renderNotifies: [AURenderCallbackStruct] = []
    /// The graph and notification generation the installed render observer is for.
    var installedNotifies: (ObjectIdentifier, Int)?
    /// `kAudioUnitProperty_OfflineRender`: renders of this unit (or of a graph holding it) may
    /// block until its sources have read ahead, instead of rendering silence for what is late.
    var offlineRender = false
    /// The spatial mixer's per-input properties, kept across node rebuilds (SpatialMixerCompat.swift).
    var spatial: SpatialMixerCompatState?
    // File player.
    var fileIDs: [AudioFileID] = []
    /// The region set last (what `kAudioUnitProperty_ScheduledFileRegion` reads back).
    var region: ScheduledAudioFileRegion?
    /// Every region set, until the feeder takes it (AudioUnitPlayers.swift).
    let regions = FileRegionSchedule()
    var primeFrames: UInt32 = 0
    var bufferFrames: UInt32 = 65536
    var started = false
    var startTime = AudioTimeStamp()
    /// The region's reader runs and has read ahead (ScheduledFilePrime); the start time stamp uses it.
    var primed = false
    /// Scheduled slices waiting to be played (ScheduleAudioSlice; AudioUnitPlayers.swift).
    var slices: SliceTracker?
    /// The sampler or MIDI synth node, kept across node rebuilds (MusicDevice.swift).
    var musicDevice: AUSamplerNode?
}
