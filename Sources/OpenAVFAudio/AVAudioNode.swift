// AVAudioNode and the nodes that wrap OATUnits nodes one to one: mixer, output, effects.
import Foundation
import OpenAudioToolbox
internal import OATUnits
internal import OATCore

/// A tap's block (Apple's `AVAudioNodeTapBlock`): a buffer of the bus's audio and its time,
/// called on a non-real-time thread of the engine's.
public typealias AVAudioNodeTapBlock = (AVAudioPCMBuffer, AVAudioTime) -> Void

/// A node of an ``AVAudioEngine`` (Apple's `AVAudioNode`): a source, effect, mixer or I/O
/// node. The engine builds its render graph from the nodes attached and connected to it.
open class AVAudioNode: NSObject, @unchecked Sendable {
    /// The engine the node is attached to.
    public internal(set) weak var engine: AVAudioEngine?
    /// The render node standing for this one once the engine has built its graph.
    var unit: OATUnits.RenderNode?
    let inputs: Int
    let outputs: Int
    var taps: [Int: Tap] = [:]
    /// The AudioUnit handle over the node's unit, once asked for (AVAudioUnit+AudioUnit.swift).
    let handles = NodeAudioUnitHandle()
    /// The per-mixer settings asked for through `destination(forMixer:bus:)` (sources only).
    var mixingDestinations: [AVAudioMixingDestination] = []
    /// The source's ``AVAudio3DMixing`` settings (AVAudioEnvironmentNode.swift).
    var mixing3D = Mixing3DSettings()

    init(inputs: Int, outputs: Int) {
        self.inputs = inputs
        self.outputs = outputs
        super.init()
    }

    /// Input buses.
    open var numberOfInputs: Int { inputs }
    /// Output buses.
    open var numberOfOutputs: Int { outputs }

    /// The format of the audio coming into `bus` (the connection's, or the engine's default).
    open func inputFormat(forBus bus: AVAudioNodeBus) -> AVAudioFormat {
        engine?.formatInto(self, bus: bus) ?? AVAudioEngine.defaultFormat
    }

    /// The format of the audio leaving `bus`.
    open func outputFormat(forBus bus: AVAudioNodeBus) -> AVAudioFormat {
        engine?.formatOutOf(self, bus: bus) ?? AVAudioEngine.defaultFormat
    }

    /// A name for an input bus (nil: none).
    open func name(forInputBus bus: AVAudioNodeBus) -> String? { nil }
    /// A name for an output bus (nil: none).
    open func name(forOutputBus bus: AVAudioNodeBus) -> String? { nil }

    /// The render time of the last render: nil when the engine is not running (not started, or
    /// paused or stopped, in manual rendering too), or when the node is not in the graph it
    /// renders (attached but not connected on a path to the output), as on Apple.
    open var lastRenderTime: AVAudioTime? {
        guard let engine, engine.isRunning, let unit, engine.isInRenderChain(self) else { return nil }
        return AVAudioTime(sampleTime: unit.renderedFrames, atRate: engine.renderRate)
    }

    /// The node's processing latency in seconds: how far its output lags its input (0 for most
    /// nodes; a time-pitch unit holds audio back).
    open var latency: TimeInterval { 0 }

    /// The largest processing latency on the way from this node's output to the device, plus
    /// the device's presentation latency, in seconds (0 when the engine is not running on a
    /// device). A player's `.dataPlayedBack` waits this long after its last frame is rendered.
    open var outputPresentationLatency: TimeInterval { engine?.latencyDownstream(of: self) ?? 0 }

    /// Clears the node's state (a player's schedule, an effect's tails).
    open func reset() {}

    /// Installs a tap on an output bus: `block` receives buffers of about `bufferSize` frames
    /// of what the node renders, in `format` (nil: the bus's format; the channel count must be
    /// the bus's), on a thread of the engine's (not the render thread). One tap per bus.
    open func installTap(onBus bus: AVAudioNodeBus, bufferSize: AVAudioFrameCount, format: AVAudioFormat?,
                         block tapBlock: @escaping AVAudioNodeTapBlock) {
        guard bus >= 0, bus < max(1, outputs), taps[bus] == nil else {
            NSLog("AVAudioNode.installTap: bus \(bus) already has a tap or does not exist")
            return
        }
        taps[bus] = Tap(bufferSize: max(64, bufferSize), format: format, block: tapBlock)
        engine?.graphNeedsRebuild()
    }

    /// Removes the tap on `bus`.
    open func removeTap(onBus bus: AVAudioNodeBus) {
        guard let tap = taps.removeValue(forKey: bus) else { return }
        tap.stop()
        engine?.graphNeedsRebuild()
    }

    /// Builds the render node (engine rate `rate`, `channels` on its output): each kind of node
    /// makes its own.
    func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        AUFormatConverterNode(inputChannels: max(1, inputChannels), outputChannels: max(1, outputChannels))
    }

    /// Whether `unit`, made for an earlier wiring, still fits what ``makeUnit(rate:inputChannels:outputChannels:)``
    /// would make now (the same kind with the same buses), so a graph rewired while running keeps
    /// it and its state. The default compares with a unit made for the purpose.
    func canKeep(_ unit: OATUnits.RenderNode, rate: Double, inputChannels: Int, outputChannels: Int) -> Bool {
        let fresh = makeUnit(rate: rate, inputChannels: inputChannels, outputChannels: outputChannels)
        return type(of: fresh) == type(of: unit) && fresh.inputChannels == unit.inputChannels && fresh.outputChannels == unit.outputChannels
    }

    /// Called once the graph with this node's unit is built (parameters pushed to the unit).
    func unitDidLoad() {}

    /// Called after each build of the engine's graph: `rebuilt` when the graph is a new one (its
    /// clock at 0), else it was rewired in place; `unitMade` when this node's unit is new.
    func graphDidChange(rebuilt: Bool, unitMade: Bool) {
        unitDidLoad()
        handles.follow(unit)
    }

    /// Adds render nodes this node needs besides its unit (the input node's capture and echo
    /// reference under voice processing), those not in the graph yet, and connects them to it;
    /// called right after the unit joined (or stayed in) the graph. Returns them.
    func addSupportUnits(to graph: AudioGraph) throws -> [OATUnits.RenderNode] { [] }

    /// A tap: the render-side tap node and the thread that reads it into buffers for the block.
    final class Tap: @unchecked Sendable {
        let bufferSize: AVAudioFrameCount
        let format: AVAudioFormat?
        let block: AVAudioNodeTapBlock
        var node: AUTapNode?
        private var thread: Thread?
        /// Manual rendering: the node drained and the frames drained from it.
        private var drainedNode: AUTapNode?
        private var drained: AVAudioFramePosition = 0
        /// The node the reading thread reads (nil: not reading).
        private(set) var reading: AUTapNode?
        /// The running thread's stop flag: each start has its own, so a thread told to stop
        /// never runs on because a new one started before it looked.
        private var stopFlag: StopFlag?

        final class StopFlag: @unchecked Sendable {
            private let lock = NSLock()
            private var stopped = false
            var isStopped: Bool { lock.lock(); defer { lock.unlock() }; return stopped }
            func stop() { lock.lock(); stopped = true; lock.unlock() }
        }

        init(bufferSize: AVAudioFrameCount, format: AVAudioFormat?, block: @escaping AVAudioNodeTapBlock) {
            self.bufferSize = bufferSize
            self.format = format
            self.block = block
        }

        /// Starts reading `node` (interleaved frames of `format`'s channel count).
        func start(node: AUTapNode, format: AVAudioFormat, engine: AVAudioEngine) {
            stop()
            self.node = node
            reading = node
            let flag = StopFlag()
            stopFlag = flag
            let size = Int(bufferSize), channels = Int(format.channelCount)
            let rate = format.sampleRate
            let t = Thread { [self, weak engine] in
                var interleaved = [Float](repeating: 0, count: size * channels)
                var filled = 0
                // The frames read so far: with the time of the tap's first frame, the node time
                // of each buffer (Apple's `when`: the node's render time, not 0 at the tap's start).
                var read: AVAudioFramePosition = 0
                while true {
                    if flag.isStopped { break }
                    let n = interleaved.withUnsafeMutableBufferPointer { p in
                        node.read(into: UnsafeMutableBufferPointer(rebasing: p[(filled * channels)...]))
                    }
                    filled += n
                    if filled < size {
                        let flushing = engine?.isManualRendering ?? false
                        if !(flushing && n == 0 && filled > 0) {
                            usleep(n == 0 ? 5000 : 0)
                            continue
                        }
                    }
                    guard let buffer = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: AVAudioFrameCount(size)) else { break }
                    let data = buffer.floatChannelData!
                    for f in 0..<filled {
                        for c in 0..<channels {
                            if format.isInterleaved { data[0][f * channels + c] = interleaved[f * channels + c] } else { data[c][f] = interleaved[f * channels + c] }
                        }
                    }
                    buffer.frameLength = AVAudioFrameCount(filled)
                    let when = AVAudioTime(sampleTime: (node.firstSampleTime ?? 0) + read, atRate: rate)
                    read += AVAudioFramePosition(filled)
                    filled = 0
                    block(buffer, when)
                }
            }
            t.name = "oat-avf-tap"
            thread = t
            t.start()
        }

        /// Stops the reading thread (it ends within a few milliseconds).
        func stop() {
            stopFlag?.stop()
            stopFlag = nil
            reading = nil
            thread = nil
        }

        /// Delivers what the tap holds now (manual rendering: the frames just rendered), on the
        /// caller's thread.
        func drain(format: AVAudioFormat) {
            guard let node else { return }
            if drainedNode !== node { drainedNode = node; drained = 0 }
            let channels = Int(format.channelCount)
            while node.availableFrames > 0 {
                let size = min(Int(bufferSize), node.availableFrames)
                var interleaved = [Float](repeating: 0, count: size * channels)
                let n = interleaved.withUnsafeMutableBufferPointer { node.read(into: $0) }
                guard n > 0, let buffer = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: AVAudioFrameCount(n)) else { return }
                for f in 0..<n { for c in 0..<channels { buffer.floatChannelData![c][f] = interleaved[f * channels + c] } }
                buffer.frameLength = AVAudioFrameCount(n)
                block(buffer, AVAudioTime(sampleTime: (node.firstSampleTime ?? 0) + drained, atRate: format.sampleRate))
                drained += AVAudioFramePosition(n)
            }
        }
    }
}

/// The stereo position of a source at the mixer it feeds (Apple's `AVAudioStereoMixing`).
public protocol AVAudioStereoMixing: NSObjectProtocol {
    /// Stereo position at the mixer input, -1 (left) ... 1 (right).
    var pan: Float { get set }
}

/// The volume and pan of a source at the mixer it feeds (Apple's `AVAudioMixing`, which
/// refines ``AVAudio3DMixing`` and ``AVAudioStereoMixing``; the 3-D settings are used by an
/// ``AVAudioEnvironmentNode``).
public protocol AVAudioMixing: AVAudio3DMixing, AVAudioStereoMixing {
    /// Linear gain at the mixer input, 0 ... 1.
    var volume: Float { get set }
    /// The settings of this source at input `bus` of `mixer` (nil when it does not feed it):
    /// see ``AVAudioMixingDestination``.
    func destination(forMixer mixer: AVAudioNode, bus: AVAudioNodeBus) -> AVAudioMixingDestination?
}

/// A mixer (Apple's `AVAudioMixerNode`): any number of inputs (each with its source's volume
/// and pan), at any sample rate (an input at another rate than the engine's is resampled on the
/// way in), one output with ``outputVolume``.
open class AVAudioMixerNode: AVAudioNode, AVAudioMixing, @unchecked Sendable {
    /// Input buses the render node is built with: one past the highest bus connected (set by
    /// the engine before it builds the graph).
    var inputBusCount = 1

    /// Creates a mixer to attach to an engine.
    public init() { super.init(inputs: 1, outputs: 1) }

    /// Input buses: one past the highest connected (at least 1); a mixer takes as many as are
    /// connected, as Apple's does.
    open override var numberOfInputs: Int { max(1, (engine?.highestInputBus(of: self) ?? -1) + 1) }

    /// The gain of the mixed output, 0 ... 1.
    open var outputVolume: Float = 1 { didSet { push() } }
    /// The mixer's own volume at the mixer it feeds.
    open var volume: Float = 1 { didSet { mixingSetOnNode(volume: volume) } }
    /// The mixer's own pan at the mixer it feeds.
    open var pan: Float = 0 { didSet { mixingSetOnNode(pan: pan) } }

    /// The first input bus with nothing connected.
    open var nextAvailableInputBus: AVAudioNodeBus { engine?.nextFreeInput(of: self) ?? 0 }

    override func makeUnit(rate: Double, inputChannels: Int, outputChannels: Int) -> OATUnits.RenderNode {
        AUMixerNode(inputs: max(1, inputBusCount), inputChannels: outputChannels, outputChannels: outputChannels)
    }

    override func unitDidLoad() { push() }

    /// A mixer unit stays while it has the buses the connections need, in the same width.
    override func canKeep(_ unit: OATUnits.RenderNode, rate: Double, inputChannels: Int, outputChannels: Int) -> Bool {
        unit is AUMixerNode && unit.outputChannels == [outputChannels] && unit.inputChannels.count >= max(1, inputBusCount)
            && unit.inputChannels.allSatisfy { $0 == outputChannels }
    }

    func push() {
        (unit as? AUMixerNode)?.masterVolume.value = max(0, outputVolume)
    }

    /// Sets input `bus`'s volume and pan: its source's ``AVAudioMixingDestination`` for this
    /// input when it has one, else the source's own ``AVAudioMixing`` values given.
    func setInput(_ bus: Int, volume: Float, pan: Float) {
        guard let mixer = unit as? AUMixerNode, bus >= 0, bus < mixer.inputChannels.count else { return }
        var volume = volume, pan = pan
        if let source = engine?.inputConnectionPoint(for: self, inputBus: bus)?.node, let d = source.mixingDestination(at: self, bus: bus) {
            volume = d.storedVolume
            pan = d.storedPan
        }
        mixer.volume(input: bus).value = max(0, volume)
        mixer.pan(input: bus).value = min(1, max(-1, pan))
    }
}

/// The engine's output to the device (Apple's `AVAudioOutputNode`).
open class AVAudioOutputNode: AVAudioIONode, @unchecked Sendable {
    init() { super.init(inputs: 1, outputs: 0) }

    /// Seconds between a frame rendered and the same frame heard (the device's buffering;
    /// 0 when not running on a device).
    open override var presentationLatency: TimeInterval { engine?.deviceLatency ?? 0 }
}
