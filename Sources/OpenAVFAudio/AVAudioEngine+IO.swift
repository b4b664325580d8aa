// The engine's device side beyond the output: the input node (capture through the graph, voice
// processing), the configuration-change notification when the output device goes away or the
// default changes, real-time manual rendering (manualRenderingBlock), and the player's prompt
// pause/stop.
import Foundation
import OpenAudioToolbox
internal import OATUnits
internal import OATDevices
internal import OATCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - I/O nodes

/// The base of the engine's input and output nodes (Apple's `AVAudioIONode`).
open class AVAudioIONode: AVAudioNode, @unchecked Sendable {
    private let voiceLock = NSLock()
    private var voice = false

    /// Seconds between the audio at the device and the audio in the graph (0 when not running
    /// on a device).
    open var presentationLatency: TimeInterval { 0 }

    /// True when voice processing is on (see ``setVoiceProcessingEnabled(_:)``).
    open var isVoiceProcessingEnabled: Bool { voiceLock.lock(); defer { voiceLock.unlock() }; return voice }

    /// Turns voice processing on or off for the engine's input and output together (as on
    /// Apple, enabling it on one enables it on both). The engine must be stopped. What it
    /// does here: the input node's audio goes through SpeexDSP's echo canceller, with what the
    /// engine plays to its output as the echo reference, then its noise suppressor and residual
    /// echo suppressor (and automatic gain control when ``AVAudioInputNode/isVoiceProcessingAGCEnabled``),
    /// in mono: the input node's format becomes one channel.
    open func setVoiceProcessingEnabled(_ enabled: Bool) throws {
        if let engine, engine.isRunning {
            throw avError(kAudioUnitErr_CannotDoInCurrentContext, "AVAudioIONode.setVoiceProcessingEnabled: stop the engine first")
        }
        if let engine {
            for node in [engine.outputNode as AVAudioIONode, engine.inputNodeStorage] { node?.storeVoice(enabled) }
            engine.graphNeedsRebuild()
        } else {
            storeVoice(enabled)
        }
    }

    func storeVoice(_ enabled: Bool) { voiceLock.lock(); voice = enabled; voiceLock.unlock() }
}

/// The engine's input from the device (Apple's `AVAudioInputNode`): the PulseAudio source (or
/// ALSA capture device) `OAT_INPUT` names (`pulse:SOURCE`, `alsa:DEVICE`), else the session's
/// preferred input, else the default source, captured at the engine's rate while the engine
/// runs and the node is connected. Its output format is the device's channel count at the
/// engine's rate (mono under voice processing).
open class AVAudioInputNode: AVAudioIONode, AVAudioMixing, @unchecked Sendable {
    /// The node's volume at the mixer it feeds.
    open var volume: Float = 1 { didSet { mixingSetOnNode(volume: volume) } }
    /// The node's pan at the mixer it feeds.
    open var pan: Float = 0 { didSet { mixingSetOnNode(pan: pan) } }
    /// Voice processing passes the microphone through unprocessed when true.
    open var isVoiceProcessingBypassed = false { didSet { (unit as? AUVoiceProcessingNode)?.bypass.value = isVoiceProcessingBypassed ? 1 : 0 } }
    /// Automatic gain control under voice processing (applies when the engine next starts).
    open var isVoiceProcessingAGCEnabled = true
    /// Silences the input under voice processing.
    open var isVoiceProcessingInputMuted: Bool {
        get { muted.load(ordering: .relaxed) }
        set { muted.store(newValue, ordering: .relaxed); gate?.muted = newValue }
    }

    private let muted = Atomic<Bool>(false)
    var gate: MuteGate?
    /// The node capturing from the device (the unit itself, or the voice processor's source).
    var capture: AUInputNode?
    var reference: EchoReferenceNode?
    let deviceChannels: Int
    /// The block the node pulls in manual rendering mode (nil: it captures from the device).
    var manualInput: ManualInputSource?

    init(deviceChannels: Int) {
        self.deviceChannels = max(1, min(8, deviceChannels))
        super.init(inputs: 0, outputs: 1)
    }

    /// The device's format: its channels (one under voice processing) at the engine's rate,
    /// or the format of the node's connection.
    open override func outputFormat(forBus bus: AVAudioNodeBus) -> AVAudioFormat {
        if let engine, let c = engine.connectionFormat(from: self) { return c }
        if let m = pulledManualInput { return m.format }
        let rate = engine?.renderRate ?? AVAudioEngine.defaultFormat.sampleRate
        return AVAudioFormat(standardFormatWithSampleRate: rate, channels: AVAudioChannelCount(isVoiceProcessingEnabled ? 1 : deviceChannels))!
    }

    /// The device's format (as ``outputFormat(forBus:)``); in manual rendering mode with an
    /// input block, the block's format.
    open override func inputFormat(forBus bus: AVAudioNodeBus) -> AVAudioFormat { pulledManualInput?.format ?? outputFormat(forBus: bus) }

    /// In manual rendering mode, takes the node's audio from `block` (Apple's
    /// `setManualRenderingInputPCMFormat(_:inputBlock:)`) instead of a capture device: each render
    /// calls it for the frames it needs, in `format` (Float32 or Int16 PCM, interleaved or not,
    /// at any rate: the engine converts its rate and channel count to the node's connection).
    /// A nil return renders silence for the input and the render reports
    /// `.insufficientDataFromInputNode`. The block runs on the thread that renders (the caller
    /// of `renderOffline`, or the real-time thread of `manualRenderingBlock`). Returns false
    /// (and keeps the previous block) for a format it cannot read. Leaving manual rendering mode
    /// drops the block, as on Apple.
    @discardableResult
    open func setManualRenderingInputPCMFormat(_ format: AVAudioFormat, inputBlock block: @escaping AVAudioIONodeInputBlock) -> Bool {
        guard ManualInputSource.supports(format), format.channelCount > 0, format.sampleRate > 0 else { return false }
        engine?.lock.lock()
        manualInput = ManualInputSource(format: format, block: block)
        engine?.lock.unlock()
        engine?.graphNeedsRebuild()
        return true
    }

    /// The input block while the engine is in manual rendering mode.
    var pulledManualInput: ManualInputSource? {
        guard let engine, engine.isManualRendering else { return nil }
        return manualInput
    }

    /// Seconds from the device to the graph (capture latency plus the ring's reserve).
    open override var presentationLatency: TimeInterval { capture?.inputLatency ?? 0 }

    /// Installs a tap on the input (the iOS recorder's idiom): when the input is connected to
    /// nothing, the engine pulls it through a hidden mixer whose output volume is 0, so the
    /// tap receives the microphone while nothing of it is played; connecting the input
    /// elsewhere later replaces that path.
    open override func installTap(onBus bus: AVAudioNodeBus, bufferSize: AVAudioFrameCount, format: AVAudioFormat?,
                                  block tapBlock: @escaping AVAudioNodeTapBlock) {
        super.installTap(onBus: bus, bufferSize: bufferSize, format: format, block: tapBlock)
        guard let engine, engine.connectionFormat(from: self) == nil, !engine.hasOutput(from: self) else { return }
        let hidden = AVAudioMixerNode()
        hidden.outputVolume = 0
        engine.attach(hidden)
        engine.connect(self, to: hidden, format: format ?? outputFormat(forBus: bus))
        engine.connect(hidden, to: engine.mainMixerNode, format: nil)
    }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        if let source = pulledManualInput, let engine {
            capture = nil
            reference = nil
            gate = nil
            return ManualInputUnit(source: source, starvation: engine.manualInputStarvation)
        }
        if isVoiceProcessingEnabled {
            var settings = VoiceProcessingSettings()
            settings.automaticGainControl = isVoiceProcessingAGCEnabled
            let v = AUVoiceProcessingNode(settings: settings, name: "AVAudioInputNode voice processing")
            v.bypass.value = isVoiceProcessingBypassed ? 1 : 0
            let g = MuteGate()
            g.muted = isVoiceProcessingInputMuted
            gate = g
            capture = AUInputNode(channels: 1, capacityFrames: max(8192, Int(rate)), name: "AVAudioInputNode capture")
            reference = EchoReferenceNode(name: "AVAudioInputNode echo reference")
            return v
        }
        let input = AUInputNode(channels: max(1, outputChannels), capacityFrames: max(8192, Int(rate)), name: "AVAudioInputNode")
        capture = input
        reference = nil
        gate = nil
        return input
    }

    /// The unit stays while voice processing is as it was built and the width is the same.
    override func canKeep(_ unit: OATUnits.RenderNode, rate: Double, inputChannels: Int, outputChannels: Int) -> Bool {
        if let source = pulledManualInput { return (unit as? ManualInputUnit)?.source === source }
        if unit is ManualInputUnit { return false }
        if isVoiceProcessingEnabled { return unit is AUVoiceProcessingNode && capture != nil && reference != nil && gate != nil }
        return unit is AUInputNode && unit.outputChannels == [max(1, outputChannels)]
    }

    override func addSupportUnits(to graph: AudioGraph) throws -> [OATUnits.RenderNode] {
        guard let v = unit as? AUVoiceProcessingNode, let capture, let reference, let gate else { return [] }
        let present = graph.nodes
        try wrap { () throws(AudioError) in
            for u in [capture, gate, reference] as [OATUnits.RenderNode] where !present.contains(where: { $0 === u }) { try graph.add(u) }
            try graph.connect(capture, to: gate)
            try graph.connect(gate, to: v, input: 0)
            try graph.connect(reference, to: v, input: 1)
        }
        return [capture, gate, reference]
    }

    /// The device spec: `OAT_INPUT`, else the session's preferred input, else auto.
    var inputSpec: AudioInputSpec {
        if let text = getenv("OAT_INPUT").map({ String(cString: $0) }), let spec = AudioInputSpec(parsing: text) { return spec }
        if let preferred = AVAudioSession.sharedInstance().preferredInput {
            return PulseAudioOutputDevice.serverAnswers() ? .pulse(source: preferred.uid) : .alsa(device: preferred.uid)
        }
        return .auto
    }
}

/// The microphone's mute before the voice processor (render thread reads the flag).
final class MuteGate: OATUnits.RenderNode, @unchecked Sendable {
    private let mutedFlag = Atomic<Bool>(false)
    var muted: Bool {
        get { mutedFlag.load(ordering: .relaxed) }
        set { mutedFlag.store(newValue, ordering: .relaxed) }
    }
    init() { super.init(name: "AVAudioInputNode mute", inputChannels: [1], outputChannels: [1]) }
    override func render(_ context: AURenderContext) {
        let out = context.output(0)
        if mutedFlag.load(ordering: .relaxed) { out.silence() } else { out.copy(from: context.input(0)) }
    }
}

/// The echo reference for voice processing: what the engine sent to its output in the previous
/// slice, mono (written by the graph's render observer after each render, read by the voice
/// processor in the next; both on the render thread). The live monitor's reference node.
typealias EchoReferenceNode = MonitorReferenceReturn

// MARK: - Engine: input, session options, device watching

extension AVAudioEngine {
    /// The engine's input node (created and attached on first use; its format is the input
    /// device's). Connect it to capture: `engine.connect(engine.inputNode, to: effect, format: engine.inputNode.outputFormat(forBus: 0))`.
    public var inputNode: AVAudioInputNode {
        lock.lock(); defer { lock.unlock() }
        if let n = inputNodeStorage { return n }
        let route = SessionDevices.list().route(preferredInput: AVAudioSession.sharedInstance().preferredInput?.uid)
        let preferred = AVAudioSession.sharedInstance().preferredInputNumberOfChannels
        let n = AVAudioInputNode(deviceChannels: preferred > 0 ? preferred : route.inputs.first?.channels?.count ?? 2)
        n.storeVoice(outputNode.isVoiceProcessingEnabled)
        inputNodeStorage = n
        attach(n)
        return n
    }

    /// The format engines render to a device at: two channels (or the session's preferred
    /// output channel count) at the output's real rate, as Apple's output node takes the
    /// hardware's.
    /// - `OAT_OUTPUT` ending in `,rate=HZ` (`wav:PATH,rate=44100`, `null:rate=22050`): that rate,
    ///   for any output.
    /// - PulseAudio (`pulse:SINK`, or `auto` with a server): the session's preferred sample
    ///   rate when one is set (the stream opens at it, PulseAudio converts), else the sink's.
    /// - ALSA (`alsa:PCM`, or `auto` without a server: `default`): the PCM's own rate nearest
    ///   the preferred one (48 kHz when none is set), asked with ALSA's resampling off
    ///   (``ALSAOutputDevice/nativeSampleRate(device:near:configText:)``), so a `plughw:` or
    ///   `default` PCM over a 44.1 kHz-only card gives 44.1 kHz and nothing converts.
    /// - A WAV file or the null output: the preferred rate, else 48 kHz.
    static func deviceOutputFormat() -> AVAudioFormat {
        let text = getenv("OAT_OUTPUT").map { String(cString: $0) }
        let spec = text.flatMap { AudioOutputSpec(parsing: $0) } ?? .auto
        let preferred = AVAudioSession.sharedInstance().preferredSampleRate
        var rate = text.flatMap { AudioOutputSpec.sampleRate(parsing: $0) } ?? 0
        if rate <= 0 {
            func alsaRate(_ device: String) -> Double {
                ALSAOutputDevice.nativeSampleRate(device: device, near: preferred > 0 ? preferred : defaultFormat.sampleRate) ?? preferred
            }
            switch spec {
            case .pulse(let sink): rate = preferred > 0 ? preferred : pulseSinkRate(sink) ?? 0
            case .alsa(let device): rate = alsaRate(device)
            case .auto:
                if let sinkRate = pulseSinkRate(nil) { rate = preferred > 0 ? preferred : sinkRate }
                else { rate = alsaRate(AudioOutput.Options().alsaDevice) }
            case .wav, .null: rate = preferred
            }
        }
        if rate <= 0 { rate = defaultFormat.sampleRate }
        // Two channels, or the session's preferred output channel count.
        let channels = AVAudioSession.sharedInstance().preferredOutputNumberOfChannels
        return AVAudioFormat(standardFormatWithSampleRate: rate, channels: AVAudioChannelCount(channels > 0 ? channels : 2))!
    }

    /// The sample rate of PulseAudio sink `name` (nil: the default sink); nil without a server.
    static func pulseSinkRate(_ name: String?) -> Double? {
        guard let sinks = try? PulseAudioOutputDevice.listSinks(timeout: 0.5) else { return nil }
        let sink = name.map { n in sinks.first { $0.name == n } } ?? sinks.first { $0.isDefault }
        return sink.flatMap { $0.sampleRate > 0 ? Double($0.sampleRate) : nil }
    }

    /// True when `node` feeds something.
    func hasOutput(from node: AVAudioNode) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return connections.contains { $0.source === node }
    }

    /// The format of `node`'s first output connection, if it names one.
    func connectionFormat(from node: AVAudioNode) -> AVAudioFormat? {
        lock.lock(); defer { lock.unlock() }
        return connections.first { $0.source === node }?.format
    }

    /// The device output options the session asks for (its preferred I/O buffer duration as
    /// the PulseAudio target latency).
    var sessionOutputOptions: AudioOutput.Options {
        var o = AudioOutput.Options()
        // An ALSA PCM no sound card paces (`null`, a `file` PCM over it) stands for a device:
        // the engine's time tracks the wall clock on it, as on a device.
        o.paceClocklessALSA = true
        let session = AVAudioSession.sharedInstance()
        if session.preferredIOBufferDuration > 0 { o.pulseLatency = session.ioBufferDuration }
        return o
    }

    /// Starts capturing when the input node exists and feeds something (control thread, lock held).
    func startInputIfConnected() throws {
        guard let input = inputNodeStorage, connections.contains(where: { $0.source === input }), let capture = input.capture else { return }
        guard capture.device == nil else { return }
        var options = AudioInput.Options()
        options.pulseFragment = 0.01
        let spec = input.inputSpec
        try wrap { () throws(AudioError) in _ = try capture.start(spec, options: options) }
    }

    /// Stops capturing (lock held).
    func stopInput() {
        inputNodeStorage?.capture?.stop()
    }

    /// Called once a graph is built: wires the voice processor's echo reference.
    func graphBuilt(_ g: AudioGraph) {
        updateRenderGate()
        if let reference = inputNodeStorage?.reference, inputNodeStorage?.unit is AUVoiceProcessingNode {
            g.setRenderObserver(RenderObserver(before: { _, _, _ in }, after: { buffers, frames, _ in reference.keep(buffers, frames: frames) }))
        } else {
            g.setRenderObserver(nil)
        }
    }

    /// Watches the output device (PulseAudio) while running (lock held).
    func startWatchingDevice() {
        guard ioWatcher == nil, let device = graph?.device as? PulseAudioOutputDevice else { return }
        ioWatcher = EngineDeviceWatcher(engine: self, device: device)
    }

    /// Stops watching (lock held).
    func stopWatchingDevice() {
        let w = ioWatcher
        ioWatcher = nil
        w?.stop()
    }

    /// The output device went away or the default it follows changed: the engine stops (its
    /// nodes keep their state) and posts ``Foundation/NSNotification/Name/AVAudioEngineConfigurationChange``,
    /// as Apple's engine does. Called on a thread of its own.
    func deviceConfigurationChanged(_ watcher: EngineDeviceWatcher) {
        lock.lock()
        guard running, ioWatcher === watcher else { lock.unlock(); return }
        pause()
        lock.unlock()
        NotificationCenter.default.post(name: .AVAudioEngineConfigurationChange, object: self)
    }

    // MARK: Real-time manual rendering

    /// The block that renders a manual-rendering engine (Apple's `manualRenderingBlock`): call
    /// it from your real-time thread with a frame count (at most
    /// ``manualRenderingMaximumFrameCount``) and an `AudioBufferList` in
    /// ``manualRenderingFormat`` (buffers with `mData` nil get memory the engine owns until the
    /// next call). It neither allocates nor locks. Statuses: `.success`; `.error` with
    /// `outError` -80802 (not running) before ``start()``, -80800 (invalid mode) outside manual
    /// rendering, `kAudioUnitErr_TooManyFramesToProcess` for too many frames, or
    /// `kAudioUnitErr_FormatNotSupported` for a buffer list that does not match the format;
    /// `.insufficientDataFromInputNode` when the input node's block gave no data (the other
    /// sources are rendered).
    /// Players feed themselves from their own threads, as on a device.
    public var manualRenderingBlock: AVAudioEngineManualRenderingBlock {
        lock.lock(); defer { lock.unlock() }
        let renderer = realtimeRenderer ?? ManualRealtimeRenderer(inputStarvation: manualInputStarvation)
        realtimeRenderer = renderer
        renderer.configure(format: manualFormat, maximum: Int(manualMaximum), graph: graph)
        return { frames, list, error in renderer.render(frames: frames, into: list, error: error) }
    }

    /// Starts the real-time manual renderer (lock held): players start feeding.
    func startRealtimeManual() {
        let renderer = realtimeRenderer ?? ManualRealtimeRenderer(inputStarvation: manualInputStarvation)
        realtimeRenderer = renderer
        renderer.configure(format: manualFormat, maximum: Int(manualMaximum), graph: graph)
        renderer.isRunning.store(true, ordering: .releasing)
        for node in attached { (node as? AVAudioPlayerNode).map { if $0.isPlaying { $0.startFeeding(rate: renderRate) } } }
    }

    /// Stops the real-time manual renderer (lock held).
    func stopRealtimeManual() {
        realtimeRenderer?.isRunning.store(false, ordering: .releasing)
    }

    /// True while a real-time manual engine is started.
    var isRealtimeManualRunning: Bool { realtimeRenderer?.isRunning.load(ordering: .acquiring) ?? false }
}

/// The block Apple's real-time manual rendering hands out (`AVAudioEngineManualRenderingBlock`):
/// frames to render, the buffer list to fill, an optional error out-parameter.
public typealias AVAudioEngineManualRenderingBlock = (_ numberOfFrames: AVAudioFrameCount, _ outBuffer: UnsafeMutablePointer<AudioBufferList>,
                                                      _ outError: UnsafeMutablePointer<OSStatus>?) -> AVAudioEngineManualRenderingStatus

/// The real-time manual renderer's state: preallocated planar scratch and channel pointers; the
/// render path neither allocates nor locks.
final class ManualRealtimeRenderer: @unchecked Sendable {
    let isRunning = Atomic<Bool>(false)
    /// Set when the input node's block gave no data during a render.
    private let inputStarvation: ManualInputStarvation

    init(inputStarvation: ManualInputStarvation) {
        self.inputStarvation = inputStarvation
    }
    private struct Setup {
        var graph: Unmanaged<AudioGraph>?
        var channels = 0
        var maximum = 0
        var interleaved = false
        var int16 = false
        var scratch: UnsafeMutablePointer<Float>?
        var pointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>?
        var owned: UnsafeMutableRawPointer?
    }
    private var setup = Setup()
    private let slot = Atomic<Int>(0)   // generation, bumped by configure
    private var retired: [Setup] = []
    /// Keeps the graphs the setups name alive (the render path holds them unretained).
    private var graphs: [AudioGraph] = []

    deinit {
        free(setup)
        for s in retired { free(s) }
    }

    private func free(_ s: Setup) {
        s.scratch?.deallocate()
        s.pointers?.deallocate()
        s.owned?.deallocate()
    }

    /// Control thread: sizes the buffers for the format (called before the block is used).
    func configure(format: AVAudioFormat?, maximum: Int, graph: AudioGraph?) {
        guard let format else { return }
        let channels = Int(format.channelCount)
        if setup.graph?.takeUnretainedValue() === graph && setup.channels == channels && setup.maximum == maximum
            && setup.interleaved == format.isInterleaved && setup.int16 == (format.commonFormat == .pcmFormatInt16) { return }
        var s = Setup()
        if let graph {
            graphs.append(graph)
            s.graph = Unmanaged.passUnretained(graph)
        }
        s.channels = channels
        s.maximum = max(1, maximum)
        s.interleaved = format.isInterleaved
        s.int16 = format.commonFormat == .pcmFormatInt16
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: s.maximum * max(1, channels))
        scratch.initialize(repeating: 0, count: s.maximum * max(1, channels))
        let pointers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, channels))
        for c in 0..<channels { pointers[c] = scratch + c * s.maximum }
        s.scratch = scratch
        s.pointers = pointers
        s.owned = UnsafeMutableRawPointer.allocate(byteCount: s.maximum * max(1, channels) * 4, alignment: 16)
        // The old buffers may be in use by a render: keep them until the renderer goes.
        retired.append(setup)
        setup = s
        slot.add(1, ordering: .releasing)
    }

    /// Render thread.
    func render(frames: AVAudioFrameCount, into list: UnsafeMutablePointer<AudioBufferList>, error: UnsafeMutablePointer<OSStatus>?) -> AVAudioEngineManualRenderingStatus {
        _ = slot.load(ordering: .acquiring)
        guard isRunning.load(ordering: .acquiring) else { error?.pointee = -80802; return .error }
        let s = setup
        guard let graph = s.graph, let pointers = s.pointers, let owned = s.owned else {
            error?.pointee = -80800
            return .error
        }
        let n = Int(frames)
        guard n <= s.maximum else { error?.pointee = kAudioUnitErr_TooManyFramesToProcess; return .error }
        let abl = UnsafeMutableAudioBufferListPointer(list)
        let bytesPerSample = s.int16 ? 2 : 4
        let expected = s.interleaved ? 1 : s.channels
        guard abl.count == expected else { error?.pointee = kAudioUnitErr_FormatNotSupported; return .error }
        inputStarvation.flag.store(false, ordering: .relaxed)
        graph._withUnsafeGuaranteedRef { $0.render(into: pointers, frames: n) }
        for i in 0..<abl.count {
            let samples = s.interleaved ? n * s.channels : n
            if abl[i].mData == nil { abl[i].mData = owned + i * s.maximum * bytesPerSample }
            abl[i].mDataByteSize = UInt32(samples * bytesPerSample)
            guard let data = abl[i].mData else { continue }
            if s.int16 {
                let d = data.assumingMemoryBound(to: Int16.self)
                for f in 0..<n {
                    if s.interleaved {
                        for c in 0..<s.channels { d[f * s.channels + c] = Int16(max(-32768, min(32767, (pointers[c][f] * 32768).rounded()))) }
                    } else {
                        d[f] = Int16(max(-32768, min(32767, (pointers[i][f] * 32768).rounded())))
                    }
                }
            } else {
                let d = data.assumingMemoryBound(to: Float.self)
                if s.interleaved {
                    for f in 0..<n { for c in 0..<s.channels { d[f * s.channels + c] = pointers[c][f] } }
                } else {
                    d.update(from: pointers[i], count: n)
                }
            }
        }
        error?.pointee = noErr
        return inputStarvation.flag.load(ordering: .relaxed) ? .insufficientDataFromInputNode : .success
    }
}

/// Watches the engine's PulseAudio output: when its sink goes away (or, following the default
/// sink, the default changes, or the stream was lost), the engine is told on a thread of its own.
final class EngineDeviceWatcher: @unchecked Sendable {
    private weak var engine: AVAudioEngine?
    private let device: PulseAudioOutputDevice
    private let followsDefault: Bool
    private let sinkAtStart: String?
    private var watcher: PulseAudioDeviceWatcher?
    private let fired = Atomic<Bool>(false)

    init(engine: AVAudioEngine, device: PulseAudioOutputDevice) {
        self.engine = engine
        self.device = device
        followsDefault = device.sink == nil
        sinkAtStart = device.sink ?? (try? PulseAudioOutputDevice.listSinks())?.first { $0.isDefault }?.name
        watcher = try? PulseAudioDeviceWatcher(onChange: { [weak self] in self?.changed() })
    }

    func stop() {
        let w = watcher
        watcher = nil
        w?.stop()
    }

    private func changed() {
        guard !fired.load(ordering: .acquiring) else { return }
        let sinks = (try? PulseAudioOutputDevice.listSinks()) ?? []
        let now = followsDefault ? sinks.first { $0.isDefault }?.name : sinks.first { $0.name == sinkAtStart }?.name
        guard device.isLost || now == nil || now != sinkAtStart else { return }
        fired.store(true, ordering: .releasing)
        // Not on the watcher's thread: stopping the engine stops this watcher (joins its thread).
        Thread.detachNewThread { [weak self] in
            guard let self, let engine = self.engine else { return }
            engine.deviceConfigurationChanged(self)
        }
    }
}

// MARK: - Player: prompt pause and stop

extension AVAudioPlayerNode {
    /// Pause: the player's unit renders silence and keeps what it buffered.
    func holdForPause() {
        (unit as? AUPlayerNode)?.holdPlayback(untilBuffered: 0)
    }

    /// Play after a pause: the held unit plays on from the next render.
    func releasePauseHold() {
        guard let player = unit as? AUPlayerNode, player.isHeld else { return }
        player.scheduleStart(atSampleTime: nil)
    }

    /// Stop: what the unit buffered is dropped at its next render, and a pause hold released.
    func flushForStop() {
        guard let player = unit as? AUPlayerNode else { return }
        player.flush()
        releasePauseHold()
    }
}
