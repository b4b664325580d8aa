import OATCore
import Synchronization

/// One bus's audio for one render call: `channelCount` non-interleaved Float32 channels of
/// `frames` frames. A view onto buffers the render plan preallocated; valid only during the
/// render call that produced it.
public struct AUBufferList {
    /// The channel pointers.
    public let channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// Channels in the bus.
    public let channelCount: Int
    /// Frames valid in each channel.
    public let frames: Int

    /// Wraps channel pointers.
    public init(channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, channelCount: Int, frames: Int) {
        self.channels = channels
        self.channelCount = channelCount
        self.frames = frames
    }

    /// Channel `index`'s samples.
    @inline(__always)
    public subscript(index: Int) -> UnsafeMutablePointer<Float> { channels[index] }

    /// Channel `index` as a buffer pointer of ``frames`` samples.
    public func channel(_ index: Int) -> UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(start: channels[index], count: frames)
    }

    /// Writes zeros to every channel.
    public func silence() {
        for c in 0..<channelCount { channels[c].update(repeating: 0, count: frames) }
    }

    /// Copies `source` (frames and channels limited to both sizes; a mono source fills every
    /// channel, extra channels of a larger source are dropped, missing ones are zeroed).
    public func copy(from source: AUBufferList) {
        let n = min(frames, source.frames)
        for c in 0..<channelCount {
            if c < source.channelCount {
                channels[c].update(from: source.channels[c], count: n)
            } else if source.channelCount == 1 {
                channels[c].update(from: source.channels[0], count: n)
            } else {
                channels[c].update(repeating: 0, count: n)
            }
            if n < frames { (channels[c] + n).update(repeating: 0, count: frames - n) }
        }
    }
}

/// A node of an ``AudioGraph``: a processor with input buses and output buses.
///
/// Every bus carries non-interleaved Float32 at the graph's sample rate; a bus's format is its
/// channel count (``inputChannels`` / ``outputChannels``). Subclasses override
/// ``prepare(sampleRate:maxFrames:)`` (control plane: allocate state here) and
/// ``render(_:)`` (render thread: pull inputs through the context, write every output bus).
///
/// Thread safety: configure a node (bus counts and formats) before it is added to a graph;
/// parameters (``parameters``) may be set from any thread at any time. ``render(_:)`` runs
/// on the render thread and must not allocate, lock, log or block. ``prepare(sampleRate:maxFrames:)``
/// runs on the control plane when the node joins a graph, before its first render.
open class RenderNode: @unchecked Sendable, CustomStringConvertible {
    /// A name for messages, e.g. `mixer`, `eq 1`.
    public let name: String
    /// Channel count of each input bus.
    public internal(set) var inputChannels: [Int]
    /// Channel count of each output bus.
    public internal(set) var outputChannels: [Int]
    /// The node's parameters (global and per-bus ones).
    public let parameters: [NodeParameter]
    /// The graph sample rate, set by ``prepare(sampleRate:maxFrames:)``.
    public private(set) var sampleRate: Double = 48000
    /// The most frames one render call asks for, set by ``prepare(sampleRate:maxFrames:)``.
    public private(set) var maxFrames: Int = 1024
    /// Frames this node has rendered on its output (render thread only).
    public internal(set) var renderedFrames: Int64 = 0

    /// Sets the node's render clock (``renderedFrames``, and a node's own sample-time count) to
    /// `sampleTime`, so a node added to a graph that has been rendering counts from the graph's
    /// time instead of 0 (Apple's units take the graph's sample time). Control plane, before
    /// the node joins a committed plan: the render thread must not be rendering it.
    open func setRenderClock(_ sampleTime: Int64) {
        renderedFrames = sampleTime
    }
    /// The graph the node belongs to (at most one at a time).
    weak var graph: AudioGraph?
    var prepared = false
    /// True once the node was prepared for a graph (its ``sampleRate`` is the graph's).
    public var isPrepared: Bool { prepared }
    /// True while the node belongs to a graph.
    public var isInGraph: Bool { graph != nil }
    private let bypassed = Atomic<Bool>(false)
    /// When true the graph passes input bus 0 straight to output bus 0 instead of rendering the
    /// node (other output buses are silent): Apple's `kAudioUnitProperty_BypassEffect`. Set from
    /// any thread; the render thread reads it once per render. Nodes without an input ignore it.
    public var isBypassed: Bool {
        get { bypassed.load(ordering: .relaxed) }
        set { bypassed.store(newValue, ordering: .relaxed) }
    }

    /// Creates a node with the given bus formats (channel counts) and parameters.
    public init(name: String, inputChannels: [Int], outputChannels: [Int], parameters: [NodeParameter] = []) {
        self.name = name
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
        self.parameters = parameters
    }

    /// `name (inputs -> outputs)`.
    public var description: String { "\(name) (in \(inputChannels) -> out \(outputChannels))" }

    /// Changes the channel count of input bus `bus`; only while the node is not in a graph
    /// (subclasses with fixed layouts override to refuse or to follow with their outputs).
    open func setInputChannels(_ channels: Int, bus: Int) throws(AudioError) {
        try checkConfigurable(bus: bus, count: inputChannels.count, channels: channels, what: "input")
        inputChannels[bus] = channels
    }

    /// Changes the channel count of output bus `bus`; only while the node is not in a graph.
    open func setOutputChannels(_ channels: Int, bus: Int) throws(AudioError) {
        try checkConfigurable(bus: bus, count: outputChannels.count, channels: channels, what: "output")
        outputChannels[bus] = channels
    }

    func checkConfigurable(bus: Int, count: Int, channels: Int, what: String) throws(AudioError) {
        guard graph == nil else {
            throw AudioError(.invalidState, component: "RenderNode", "\(name): bus formats can only change before the node is added to a graph", osStatus: -10875)
        }
        guard bus >= 0, bus < count else {
            throw AudioError(.invalidArgument, component: "RenderNode", "\(name) has no \(what) bus \(bus) (it has \(count))", osStatus: -10877)
        }
        guard channels >= 1, channels <= 64 else {
            throw AudioError(.invalidArgument, component: "RenderNode", "\(name): \(channels) channels on \(what) bus \(bus) is outside 1...64", osStatus: -10868)
        }
    }

    /// Looks up a parameter by Apple-style ID, scope and element (bus).
    open func parameter(id: UInt32, scope: AUScope = .global, element: Int = 0) -> NodeParameter? {
        parameters.first { $0.id == id && $0.scope == scope && $0.element == element }
            ?? (scope == .global ? nil : parameters.first { $0.id == id && $0.scope == .global && element == 0 })
    }

    /// Looks up a parameter by ``NodeParameter/name``.
    public func parameter(named name: String) -> NodeParameter? { parameters.first { $0.name == name } }

    /// Control plane: allocate render state for `sampleRate` and at most `maxFrames` frames per
    /// render call. Called once when the node joins a graph (again if the graph's rate
    /// changes), never while the node renders. Subclasses call `super`.
    open func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
    }

    /// Render thread, on a device that is not real time (files, `null:fast`): false while the
    /// node waits for audio that is on its way (a player whose feeder is behind), so that the
    /// graph renders nothing and the device asks again instead of rendering a gap of silence.
    /// Real-time safe. The default is true.
    open func isReadyToRender(frames: Int) -> Bool { true }

    /// Seconds of output the node can still give once its input has fallen silent (Apple's
    /// `kAudioUnitProperty_TailTime`): a reverb's or a delay's decay, a look-ahead's delay.
    /// A graph rendering to a device no clock paces renders at most the sum of its nodes'
    /// tails once its sources have ended (``AudioGraph/start(device:isReady:)``). 0 by default.
    open var tailSeconds: Double { 0 }

    /// Source nodes (no inputs), render thread: whether a render would still bring anything out
    /// of the node. A graph on a device no clock paces writes nothing while no source is active
    /// and the tails are out (``AudioGraph/start(device:isReady:)``). Real-time safe. True by
    /// default: a source is taken as live (a render callback, an input).
    open var isActiveSource: Bool { true }

    /// Source nodes, render thread: the frames at the end of the last render that came after
    /// the node's last frame of content (0 when it played to the end of the render): where a
    /// source that just ended stopped within the slice. Real-time safe. 0 by default.
    open var framesAfterContent: Int { 0 }

    /// Render thread: produce `context.frames` frames on every output bus. The default
    /// passes input bus 0 to output bus 0 (or silence without inputs).
    open func render(_ context: AURenderContext) {
        for bus in 0..<context.outputCount {
            let out = context.output(bus)
            if bus < context.inputCount { out.copy(from: context.input(bus)) } else { out.silence() }
        }
    }
}

/// What ``RenderNode/render(_:)`` gets: the frame count, the node's output buffers and a way to
/// pull its inputs (which renders the upstream nodes on demand: the pull model).
public struct AURenderContext {
    /// Frames to produce on each output bus (<= ``RenderNode/maxFrames``).
    public let frames: Int
    /// The sample time of the first output frame on this node's own timeline.
    public let sampleTime: Int64
    /// Host time (nanoseconds, `HostTime`) at which the device expects to play the slice, 0 offline.
    public let hostTime: UInt64
    unowned(unsafe) let plan: RenderPlan
    let index: Int

    /// Number of input buses.
    public var inputCount: Int { plan.entries[index].inputs.count }
    /// Number of output buses.
    public var outputCount: Int { plan.entries[index].outputs.count }

    /// True when something is connected to input bus `bus`.
    public func isInputConnected(_ bus: Int) -> Bool { plan.entries[index].inputs[bus] != nil }

    /// Output bus `bus`'s buffers, ``frames`` long.
    public func output(_ bus: Int) -> AUBufferList { plan.outputBuffer(entry: index, bus: bus, frames: frames) }

    /// Pulls ``frames`` frames from input bus `bus` (silence when unconnected). Do not write
    /// to the returned buffers; pull each input once per render call.
    public func input(_ bus: Int) -> AUBufferList { plan.pull(entry: index, bus: bus, frames: frames, fresh: false) }

    /// Pulls `frames` frames (at most ``RenderNode/maxFrames``) from input bus `bus`, for nodes
    /// that consume input at another rate than they produce output (varispeed): every call
    /// renders the upstream nodes anew.
    public func pullInput(_ bus: Int, frames: Int) -> AUBufferList {
        plan.pull(entry: index, bus: bus, frames: min(max(0, frames), plan.maxFrames), fresh: true)
    }
}
