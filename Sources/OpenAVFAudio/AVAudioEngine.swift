// AVAudioEngine: Apple's engine object over the OATUnits render graph: nodes attached and
// connected with formats, a main mixer, the device output or manual (offline) rendering.
import Foundation
import OpenAudioToolbox
internal import OATUnits
internal import OATDevices
internal import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// How a manual-rendering engine renders (Apple's `AVAudioEngineManualRenderingMode`).
public enum AVAudioEngineManualRenderingMode: Int, Sendable {
    /// Off the clock, as fast as asked, players reading their files synchronously.
    case offline = 0
    /// On the caller's real-time thread (players must be fed ahead).
    case realtime = 1
}

/// What a manual render returned (Apple's `AVAudioEngineManualRenderingStatus`).
public enum AVAudioEngineManualRenderingStatus: Int, Sendable {
    /// The render failed.
    case error = -1
    /// All the frames asked for were rendered.
    case success = 0
    /// Not enough input was available (real-time mode).
    case insufficientDataFromInputNode = 1
    /// The render could not take place now; try again.
    case cannotDoInCurrentContext = 2
}

extension Notification.Name {
    /// Posted when the engine's I/O configuration changed (its device went away or came back;
    /// Apple's `AVAudioEngineConfigurationChange`).
    public static let AVAudioEngineConfigurationChange = Notification.Name("AVAudioEngineConfigurationChangeNotification")
}

/// An audio engine (Apple's `AVAudioEngine`): attach nodes, connect them with formats, start.
/// The graph is built from the connections at ``prepare()``/``start()`` (and again after a
/// change while running); every node renders at the output's sample rate, player nodes convert
/// what they are given.
open class AVAudioEngine: NSObject, @unchecked Sendable {
    struct Connection {
        let source: AVAudioNode
        let sourceBus: Int
        let destination: AVAudioNode
        let destinationBus: Int
        let format: AVAudioFormat?
    }

    static let defaultFormat = AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!

    let lock = NSRecursiveLock()
    var attached: [AVAudioNode] = []
    var connections: [Connection] = []
    private var mixer: AVAudioMixerNode?
    var graph: AudioGraph?
    var dirty = true
    var running = false
    /// Started in manual rendering mode (no device): ``isRunning`` reports it, as Apple does.
    var manualStarted = false
    var manualMode: AVAudioEngineManualRenderingMode?
    var manualFormat: AVAudioFormat?
    var manualMaximum: AVAudioFrameCount = 0
    // The input node, the device watcher and the real-time manual renderer
    // (AVAudioEngine+IO.swift).
    var inputNodeStorage: AVAudioInputNode?
    var ioWatcher: EngineDeviceWatcher?
    var realtimeRenderer: ManualRealtimeRenderer?
    var manualTime: AVAudioFramePosition = 0
    /// What a device no clock paces waits for (AVAudioEngine+Render.swift), kept current on each build.
    let gateSources = RenderGateSources()
    let manualInputStarvation = ManualInputStarvation()
    // Auto shutdown (AVAudioEngine+AutoShutdown.swift).
    var autoShutdownEnabled = false
    var autoShutdown: AutoShutdownMonitor?
    /// True while the running engine has released its idle device.
    var deviceReleased = false
    /// The output the running engine opened (opened again after an auto shutdown).
    var deviceSpec = AudioOutputSpec.auto

    /// The node that plays to the device (or to ``renderOffline(_:to:)``).
    public let outputNode: AVAudioOutputNode

    /// Creates an engine with an output node; the main mixer is made on first use.
    public override init() {
        outputNode = AVAudioOutputNode()
        super.init()
        attach(outputNode)
    }

    deinit { stop() }

    /// The mixer connected to the output (created and connected on first use).
    open var mainMixerNode: AVAudioMixerNode {
        lock.lock(); defer { lock.unlock() }
        if let mixer { return mixer }
        let m = AVAudioMixerNode()
        attach(m)
        connect(m, to: outputNode, format: nil)
        mixer = m
        return m
    }

    /// The nodes attached.
    open var attachedNodes: Set<AVAudioNode> { lock.lock(); defer { lock.unlock() }; return Set(attached) }
    /// The attached nodes in the order they were attached (AVAudioSequencer's default instrument is the first).
    var attachedNodesInOrder: [AVAudioNode] { lock.lock(); defer { lock.unlock() }; return attached }

    /// True between ``start()`` and ``pause()``/``stop()``: rendering to the device, or started in
    /// manual rendering mode (as Apple reports).
    open var isRunning: Bool { lock.lock(); defer { lock.unlock() }; return running || manualStarted }

    /// When true, the running engine releases its output device while it has nothing to play
    /// (no player with anything scheduled, no source node, input or tap) for a second, and opens
    /// it again as soon as a player has audio: the engine stays running meanwhile. Off by
    /// default, as on Apple's platforms other than watchOS.
    open var isAutoShutdownEnabled: Bool {
        get { lock.lock(); defer { lock.unlock() }; return autoShutdownEnabled }
        set { lock.lock(); autoShutdownEnabled = newValue; updateAutoShutdown(); lock.unlock() }
    }

    // MARK: Nodes and connections

    /// Takes a node into the engine.
    open func attach(_ node: AVAudioNode) {
        lock.lock(); defer { lock.unlock() }
        guard !attached.contains(where: { $0 === node }) else { return }
        attached.append(node)
        node.engine = self
        dirty = true
    }

    /// Removes a node and its connections (disconnected first, as Apple's engine does). A
    /// detached node is no longer rendered: a player stops (as ``AVAudioPlayerNode/stop()``:
    /// the handlers of what it had scheduled are called, its feeder ends, the audio it had
    /// buffered is dropped), a player's or a source node's unit is released (attached again,
    /// it gets a new one) and the node's taps stop reading. The running graph is rewired
    /// without it; the rest of the engine plays on.
    open func detach(_ node: AVAudioNode) {
        lock.lock()
        guard attached.contains(where: { $0 === node }) else { lock.unlock(); return }
        attached.removeAll { $0 === node }
        connections.removeAll { $0.source === node || $0.destination === node }
        dirty = true
        lock.unlock()
        // Not under the engine's lock (as in stop()): the player's stop joins its feeder, which
        // may be asking the engine for its latency.
        (node as? AVAudioPlayerNode)?.stop()
        for (_, tap) in node.taps { tap.stop() }
        rebuildIfRunning()
        lock.lock()
        node.engine = nil
        if node is AVAudioPlayerNode || node is AVAudioSourceNode || node is AVAudioSinkNode { node.unit = nil }
        lock.unlock()
    }

    /// Connects `node1`'s output 0 to `node2`'s input 0 (a mixer: its next free input) in `format`.
    open func connect(_ node1: AVAudioNode, to node2: AVAudioNode, format: AVAudioFormat?) {
        let bus = (node2 as? AVAudioMixerNode).map { nextFreeInput(of: $0) } ?? 0
        connect(node1, to: node2, fromBus: 0, toBus: bus, format: format)
    }

    /// Connects an output bus to an input bus in `format` (nil: the source's output format).
    open func connect(_ node1: AVAudioNode, to node2: AVAudioNode, fromBus bus1: AVAudioNodeBus, toBus bus2: AVAudioNodeBus, format: AVAudioFormat?) {
        lock.lock()
        attach(node1)
        attach(node2)
        connections.removeAll { ($0.destination === node2 && $0.destinationBus == bus2) || ($0.source === node1 && $0.sourceBus == bus1) }
        connections.append(Connection(source: node1, sourceBus: bus1, destination: node2, destinationBus: bus2, format: format))
        dirty = true
        lock.unlock()
        rebuildIfRunning()
    }

    /// Disconnects every input of `node`.
    open func disconnectNodeInput(_ node: AVAudioNode) {
        lock.lock(); connections.removeAll { $0.destination === node }; dirty = true; lock.unlock()
        rebuildIfRunning()
    }

    /// Disconnects input `bus` of `node`.
    open func disconnectNodeInput(_ node: AVAudioNode, bus: AVAudioNodeBus) {
        lock.lock(); connections.removeAll { $0.destination === node && $0.destinationBus == bus }; dirty = true; lock.unlock()
        rebuildIfRunning()
    }

    /// Disconnects every output of `node`.
    open func disconnectNodeOutput(_ node: AVAudioNode) {
        lock.lock(); connections.removeAll { $0.source === node }; dirty = true; lock.unlock()
        rebuildIfRunning()
    }

    /// Disconnects output `bus` of `node`.
    open func disconnectNodeOutput(_ node: AVAudioNode, bus: AVAudioNodeBus) {
        lock.lock(); connections.removeAll { $0.source === node && $0.sourceBus == bus }; dirty = true; lock.unlock()
        rebuildIfRunning()
    }

    func nextFreeInput(of node: AVAudioNode) -> Int {
        lock.lock(); defer { lock.unlock() }
        var bus = 0
        while connections.contains(where: { $0.destination === node && $0.destinationBus == bus }) { bus += 1 }
        return bus
    }

    /// The output device's format, found on first use and again at each ``start()``
    /// (``deviceOutputFormat()``).
    var deviceFormat: AVAudioFormat?

    /// The format of the audio the output plays: the manual-rendering format, else the device's
    /// (its rate: the session's preferred rate, else the PulseAudio sink's; two channels).
    var outputFormat: AVAudioFormat {
        lock.lock(); defer { lock.unlock() }
        if let manualFormat { return manualFormat }
        if let deviceFormat { return deviceFormat }
        let f = AVAudioEngine.deviceOutputFormat()
        deviceFormat = f
        return f
    }

    func formatOutOf(_ node: AVAudioNode, bus: Int) -> AVAudioFormat {
        lock.lock(); defer { lock.unlock() }
        if let c = connections.first(where: { $0.source === node && $0.sourceBus == bus }), let f = c.format { return f }
        if node === outputNode { return outputFormat }
        if let f = (node as? AVAudioSourceNode)?.blockFormat { return f }
        if node === mixer { return AVAudioFormat(standardFormatWithSampleRate: outputFormat.sampleRate, channels: outputFormat.channelCount)! }
        return AVAudioFormat(standardFormatWithSampleRate: outputFormat.sampleRate, channels: 2)!
    }

    func formatInto(_ node: AVAudioNode, bus: Int) -> AVAudioFormat {
        lock.lock(); defer { lock.unlock() }
        if node === outputNode { return outputFormat }
        if let c = connections.first(where: { $0.destination === node && $0.destinationBus == bus }) {
            return c.format ?? formatOutOf(c.source, bus: c.sourceBus)
        }
        return AVAudioFormat(standardFormatWithSampleRate: outputFormat.sampleRate, channels: 2)!
    }

    func graphNeedsRebuild() {
        lock.lock(); dirty = true; lock.unlock()
        rebuildIfRunning()
    }

    func sourceMixingChanged(_ node: AVAudioNode) {
        lock.lock(); defer { lock.unlock() }
        applyMixing()
    }

    // MARK: Building the graph

    var renderRate: Double { outputFormat.sampleRate }
    /// The largest sum of node latencies on a path from `node` to the output node, plus the
    /// device's latency (the device's alone when no connected path is found).
    func latencyDownstream(of node: AVAudioNode) -> TimeInterval {
        lock.lock()
        let edges = connections
        lock.unlock()
        func walk(_ n: AVAudioNode, depth: Int) -> TimeInterval? {
            if n === outputNode { return 0 }
            guard depth < 64 else { return nil }
            var best: TimeInterval?
            for c in edges where c.source === n {
                if let rest = walk(c.destination, depth: depth + 1) { best = max(best ?? 0, c.destination.latency + rest) }
            }
            return best
        }
        return (walk(node, depth: 0) ?? 0) + outputNode.presentationLatency
    }

    /// The running device's latency in seconds (0 without one).
    var deviceLatency: Double { lock.lock(); defer { lock.unlock() }; return running ? (graph?.device?.latency ?? 0) : 0 }
    /// False when the engine renders to a device no clock paces (a WAV file): it renders as fast
    /// as its sources give audio. True otherwise (and without a device).
    var deviceIsRealTime: Bool { lock.lock(); defer { lock.unlock() }; return graph?.device?.isRealTime ?? true }
    /// True while a device no clock paces has written all the graph's sources gave and their
    /// tails (``AudioGraph/isClocklessOutputIdle``); true without a device.
    var clocklessOutputIdle: Bool {
        lock.lock(); defer { lock.unlock() }
        guard let graph, let device = graph.device, !device.isRealTime else { return true }
        return graph.isClocklessOutputIdle
    }
    var isRendering: Bool { lock.lock(); defer { lock.unlock() }; return running || manualMode != nil }
    var isManualRendering: Bool { lock.lock(); defer { lock.unlock() }; return manualMode != nil }

    /// The channel count a node renders: its output connection's format, the output's for the
    /// main mixer, else 2.
    private func channels(of node: AVAudioNode) -> Int {
        if node === outputNode { return Int(outputFormat.channelCount) }
        if let c = connections.first(where: { $0.source === node }) {
            if c.destination === outputNode { return Int(outputFormat.channelCount) }
            if let f = c.format { return Int(f.channelCount) }
        }
        return node === mixer ? Int(outputFormat.channelCount) : 2
    }

    /// The manual rendering mode the graph was built for (a player's ring size follows it).
    private var builtManualMode: AVAudioEngineManualRenderingMode?

    /// True when the graph can be rewired in place: the engine renders (a device, or started
    /// in manual rendering mode) a graph of the output's format that was built for the same
    /// mode. Apple's engine changes its graph while running: its clock, its players' timelines
    /// and the state of the nodes that stay go on.
    private func canRewireLive(rate: Double, maxFrames: Int) -> Bool {
        guard running || manualStarted, let g = graph else { return false }
        return g.sampleRate == rate && g.output.inputChannels[0] == Int(outputFormat.channelCount)
            && g.maxFramesPerSlice == maxFrames && builtManualMode == manualMode
    }

    /// Builds the render graph from the nodes and connections (control thread). While the
    /// engine renders, the running graph is rewired in place (one atomic commit): the nodes
    /// whose units still fit keep them, with their state and their clock; a unit made now starts
    /// at the graph's sample time. Otherwise a new graph is built, its clock at 0.
    func build() throws {
        let rate = outputFormat.sampleRate
        let maxFrames = Int(max(1024, min(4096, manualMaximum == 0 ? 1024 : manualMaximum)))
        let live = canRewireLive(rate: rate, maxFrames: maxFrames)
        let g: AudioGraph
        if live, let current = graph {
            g = current
            g.clearConnections()
        } else {
            for node in attached { for (_, tap) in node.taps { tap.stop() } }
            g = try wrap { () throws(AudioError) in try AudioGraph(sampleRate: rate, channels: Int(outputFormat.channelCount), maxFramesPerSlice: maxFrames) }
        }
        // The graph's sample time (the output's frames rendered): where units made now start.
        let clock = g.output.renderedFrames
        let present = live ? g.nodes : []
        func inGraph(_ u: OATUnits.RenderNode) -> Bool { present.contains { $0 === u } }
        outputNode.unit = g.output
        var kept: [OATUnits.RenderNode] = [g.output]
        var made: Set<ObjectIdentifier> = []
        var sinks: [OATUnits.RenderNode] = []
        for node in attached where node !== outputNode {
            (node as? AVAudioPlayerNode)?.ringFrames = manualMode != nil ? Int(rate) : nil
            (node as? AVAudioMixerNode)?.inputBusCount = (highestInputBus(of: node) ?? 0) + 1
            if let env = node as? AVAudioEnvironmentNode {
                env.inputBusChannels = (0...(highestInputBus(of: node) ?? 0)).map { Int(formatInto(node, bus: $0).channelCount) }
            }
            let out = channels(of: node)
            let domain = domainRate(of: node)
            let unit: OATUnits.RenderNode
            if live, let u = node.unit, inGraph(u), u.sampleRate == domain, node.canKeep(u, rate: rate, inputChannels: out, outputChannels: out) {
                unit = u
            } else {
                unit = node.makeUnit(rate: rate, inputChannels: out, outputChannels: out)
                if let mixer = node as? AVAudioMixerNode {
                    // The volumes and pans as set, before the unit is prepared: it starts at them
                    // rather than gliding from 1 (a volume-0 input is silent from the first frame).
                    mixer.unit = unit
                    mixer.push()
                    applyMixing(to: mixer)
                }
                if let env = node as? AVAudioEnvironmentNode {
                    env.unit = unit
                    env.push()
                }
                try wrap { () throws(AudioError) in try g.add(unit) }
                // A chain that runs at another rate (a source node in its own format, and the
                // effects after it up to a mixer) is prepared for that rate.
                if domain != rate { try wrap { () throws(AudioError) in try unit.prepare(sampleRate: domain, maxFrames: maxFrames) } }
                if live { unit.setRenderClock(Int64((Double(clock) * domain / rate).rounded())) }
                node.unit = unit
                made.insert(ObjectIdentifier(node))
            }
            kept.append(unit)
            if node is AVAudioSinkNode { sinks.append(unit) }
            kept += try node.addSupportUnits(to: g)
        }
        // Units made from here on (taps, splitters, converters) start at the graph's time too.
        func add(_ u: OATUnits.RenderNode, at domain: Double = rate) throws(AudioError) {
            try g.add(u)
            if live { u.setRenderClock(Int64((Double(clock) * domain / rate).rounded())) }
            kept.append(u)
        }
        // With sink nodes, a join before the output pulls them every slice.
        var root: OATUnits.RenderNode = g.output
        if !sinks.isEmpty {
            let join = SinkJoinUnit(channels: Int(outputFormat.channelCount), sinks: sinks.count)
            try wrap { () throws(AudioError) in
                try add(join)
                try g.connect(join, to: g.output)
                for (i, s) in sinks.enumerated() { try g.connect(s, to: join, input: i + 1) }
            }
            root = join
        }
        // Connections grouped by source bus: a bus feeding several inputs goes through a splitter.
        var groups: [[Connection]] = []
        for c in connections {
            if let i = groups.firstIndex(where: { $0[0].source === c.source && $0[0].sourceBus == c.sourceBus }) { groups[i].append(c) } else { groups.append([c]) }
        }
        for group in groups {
            let first = group[0]
            guard let su = first.source.unit else { continue }
            var from: OATUnits.RenderNode = su
            var fromBus = first.sourceBus
            let fromChannels = su.outputChannels.indices.contains(first.sourceBus) ? su.outputChannels[first.sourceBus] : 2
            let sourceRate = domainRate(of: first.source)
            if let tap = first.source.taps[first.sourceBus] {
                // A tap that is reading keeps its node (and what it holds) through the change.
                let t: AUTapNode
                if live, let old = tap.node, inGraph(old), old.inputChannels[0] == fromChannels {
                    t = old
                    kept.append(t)
                } else {
                    t = AUTapNode(channels: fromChannels, capacityFrames: Int(rate) * 2)
                    try wrap { () throws(AudioError) in try add(t, at: sourceRate) }
                    if sourceRate != rate { try wrap { () throws(AudioError) in try t.prepare(sampleRate: sourceRate, maxFrames: maxFrames) } }
                }
                try wrap { () throws(AudioError) in try g.connect(from, output: fromBus, to: t) }
                tap.node = t
                from = t
                fromBus = 0
            }
            if group.count > 1 {
                let splitter = AUSplitterNode(channels: fromChannels, outputs: group.count)
                try wrap { () throws(AudioError) in try add(splitter, at: sourceRate); try g.connect(from, output: fromBus, to: splitter) }
                if sourceRate != rate {
                    try wrap { () throws(AudioError) in try splitter.prepare(sampleRate: sourceRate, maxFrames: maxFrames) }
                }
                from = splitter
            }
            for (i, c) in group.enumerated() {
                guard let target = c.destination.unit else { continue }
                let du = target === g.output ? root : target
                var node = from
                var bus = group.count > 1 ? i : fromBus
                // Another rate on the way into a mixer (or the output): resampled here.
                let (srcRate, dstRate) = (domainRate(of: c.source), domainRate(of: c.destination))
                if srcRate != dstRate {
                    let resampler = AUVarispeedNode(channels: fromChannels, rate: Float(srcRate / dstRate), name: "rate converter")
                    try wrap { () throws(AudioError) in try add(resampler); try g.connect(node, output: bus, to: resampler) }
                    node = resampler
                    bus = 0
                }
                let toChannels = du.inputChannels.indices.contains(c.destinationBus) ? du.inputChannels[c.destinationBus] : fromChannels
                if fromChannels != toChannels {
                    let converter = AUFormatConverterNode(inputChannels: fromChannels, outputChannels: toChannels)
                    try wrap { () throws(AudioError) in try add(converter, at: dstRate); try g.connect(node, output: bus, to: converter) }
                    if dstRate != rate { try wrap { () throws(AudioError) in try converter.prepare(sampleRate: dstRate, maxFrames: maxFrames) } }
                    node = converter
                    bus = 0
                }
                try wrap { () throws(AudioError) in try g.connect(node, output: bus, to: du, input: c.destinationBus) }
            }
        }
        // What the rewired graph no longer uses (detached nodes, replaced units, the helpers of
        // the previous wiring) leaves it at the same commit.
        if live {
            for u in present where !kept.contains(where: { $0 === u }) { try? g.remove(u) }
        }
        try wrap { () throws(AudioError) in try g.commit() }
        graph = g
        builtManualMode = manualMode
        graphBuilt(g)
        for node in attached { node.graphDidChange(rebuilt: !live, unitMade: made.contains(ObjectIdentifier(node))) }
        applyMixing()
        dirty = false
    }

    /// The highest input bus of `node` something is connected to (nil: none).
    func highestInputBus(of node: AVAudioNode) -> Int? {
        lock.lock(); defer { lock.unlock() }
        return connections.filter { $0.destination === node }.map(\.destinationBus).max()
    }

    /// The sample rate `node` renders at: the engine's for mixers, the output and players (they
    /// convert what they play); a source node's own format's (or its output connection's); for
    /// other nodes, the rate of what feeds their input 0.
    func domainRate(of node: AVAudioNode, depth: Int = 0) -> Double {
        let rate = renderRate
        if node === outputNode || node is AVAudioMixerNode || node is AVAudioEnvironmentNode || node is AVAudioPlayerNode || depth > 64 { return rate }
        if let input = node as? AVAudioInputNode, let m = input.pulledManualInput { return m.format.sampleRate }
        if let source = node as? AVAudioSourceNode {
            if let f = source.blockFormat { return f.sampleRate }
            if let f = connections.first(where: { $0.source === node })?.format { return f.sampleRate }
            return rate
        }
        guard let c = connections.first(where: { $0.destination === node && $0.destinationBus == 0 }) else { return rate }
        return domainRate(of: c.source, depth: depth + 1)
    }

    /// Pushes each source's volume and pan to the mixer input it feeds (only `target`'s inputs
    /// when given).
    private func applyMixing(to target: AVAudioMixerNode? = nil) {
        for c in connections {
            if target == nil, let env = c.destination as? AVAudioEnvironmentNode, c.source is any AVAudioMixing {
                env.setInput(c.destinationBus, volume: (c.source as? any AVAudioMixing)?.volume ?? 1, settings: c.source.mixing3D)
                continue
            }
            guard let mixer = c.destination as? AVAudioMixerNode, let source = c.source as? any AVAudioMixing else { continue }
            if let target, mixer !== target { continue }
            mixer.setInput(c.destinationBus, volume: source.volume, pan: source.pan)
        }
    }

    /// Starts the reading thread of each tap that is not reading its node yet (device rendering).
    private func startTaps() {
        guard manualMode == nil else { return }
        for node in attached {
            for (_, tap) in node.taps {
                guard let t = tap.node, tap.reading !== t else { continue }
                let format = tap.format ?? AVAudioFormat(standardFormatWithSampleRate: renderRate, channels: AVAudioChannelCount(t.inputChannels[0]))!
                tap.start(node: t, format: format, engine: self)
            }
        }
    }

    /// Applies a change of the nodes, connections or taps while the engine renders: as on
    /// Apple, on the running engine. The graph is rewired in place (``build()``): the device
    /// keeps playing it, the engine's sample time and the players' timelines go on, a playing
    /// player keeps its position and schedule. (The device's format is read again at the next
    /// ``start()``.)
    func rebuildIfRunning() {
        lock.lock(); defer { lock.unlock() }
        guard running || manualStarted, dirty else { return }
        let rate = outputFormat.sampleRate
        let maxFrames = Int(max(1024, min(4096, manualMaximum == 0 ? 1024 : manualMaximum)))
        guard canRewireLive(rate: rate, maxFrames: maxFrames) else {
            if running {
                stopDevice()
                try? startDevice()
            } else {
                try? build()
            }
            return
        }
        do {
            try build()
        } catch {
            // The running graph stays as it was (a commit that fails keeps the plan).
            return
        }
        if running {
            try? startInputIfConnected()
            startTaps()
        }
        if running || isRealtimeManualRunning {
            for node in attached { (node as? AVAudioPlayerNode).map { if $0.isPlaying { $0.startFeeding(rate: renderRate) } } }
        }
    }

    // MARK: Transport

    /// Builds the graph ahead of ``start()``.
    open func prepare() {
        lock.lock(); defer { lock.unlock() }
        if dirty { try? build() }
    }

    /// Starts rendering to the output device (`OAT_OUTPUT` picks it, as for the C API:
    /// PulseAudio, else ALSA, else a null output). Throws an `NSError` when the graph or the
    /// device cannot start.
    open func start() throws {
        lock.lock(); defer { lock.unlock() }
        guard !running else { return }
        if manualMode != nil {
            // Manual rendering: starting builds the graph; renderOffline pulls it.
            if dirty || graph == nil { try build() }
            if manualMode == .realtime { startRealtimeManual() }
            manualStarted = true
            return
        }
        try startDevice()
    }

    private func startDevice() throws {
        // The device may have changed since the format was read (another sink, another
        // preferred rate): the graph follows it.
        let device = AVAudioEngine.deviceOutputFormat()
        if device != deviceFormat {
            deviceFormat = device
            dirty = true
        }
        if dirty || graph == nil { try build() }
        guard let graph else { throw avError(kAudioUnitErr_Uninitialized, "AVAudioEngine: no graph") }
        let spec: AudioOutputSpec = getenv("OAT_OUTPUT").flatMap { AudioOutputSpec(parsing: String(cString: $0)) } ?? .auto
        deviceSpec = spec
        try startInputIfConnected()
        do {
            // On a device no clock paces (a WAV file), the graph renders only while a source
            // has something to give: while every player is idle or paused, nothing is written.
            let gate = renderGate()
            try wrap { () throws(AudioError) in _ = try graph.start(spec, options: sessionOutputOptions, isReady: gate) }
        } catch {
            stopInput()
            throw error
        }
        running = true
        deviceReleased = false
        startWatchingDevice()
        updateAutoShutdown()
        startTaps()
        for node in attached { (node as? AVAudioPlayerNode).map { if $0.isPlaying { $0.startFeeding(rate: renderRate) } } }
    }

    /// The gate for a device that is not real time: renders go on while a player of the graph
    /// as last built wants them (``AUPlayerNode/wantsRender``); always when the graph has
    /// another kind of source (a source node, the input) or no player.
    private func renderGate() -> (@Sendable () -> Bool)? {
        updateRenderGate()
        let sources = gateSources
        return { sources.wantRender }
    }

    /// Tells the gate the players (and other sources) of the graph just built: a player
    /// attached while the engine runs is waited for too.
    func updateRenderGate() {
        let players = attached.compactMap { ($0 as? AVAudioPlayerNode)?.unit as? AUPlayerNode }
        let otherSources = attached.contains { $0 is AVAudioSourceNode || ($0 is AVAudioInputNode && hasOutput(from: $0)) }
        gateSources.set(players.isEmpty || otherSources ? nil : players)
    }

    private func stopDevice() {
        autoShutdown?.stop()
        autoShutdown = nil
        deviceReleased = false
        stopWatchingDevice()
        stopRealtimeManual()
        graph?.stop()
        stopInput()
        for node in attached {
            for (_, tap) in node.taps { tap.stop() }
        }
        running = false
        manualStarted = false
    }

    func playerStarted(_ player: AVAudioPlayerNode) {
        lock.lock(); defer { lock.unlock() }
        if running || isRealtimeManualRunning { player.startFeeding(rate: renderRate) }
        // A device released while idle opens again for the player.
        if deviceReleased { reopenReleasedDevice() }
    }

    /// Pauses rendering (the device stops; nodes keep their state).
    open func pause() {
        lock.lock(); defer { lock.unlock() }
        stopDevice()
    }

    /// Stops rendering and releases the device.
    open func stop() {
        lock.lock()
        stopDevice()
        let players = attached.compactMap { $0 as? AVAudioPlayerNode }
        lock.unlock()
        // Not under the engine's lock: a player's stop waits for its feeder, which may be
        // asking the engine for its latency.
        for player in players { player.stop() }
    }

    /// Resets every node's state (players' schedules, effects' tails).
    open func reset() {
        lock.lock()
        let nodes = attached
        lock.unlock()
        // Not under the engine's lock (as in stop()): a player's reset stops it, which waits for
        // its feeder, and the feeder may be asking the engine for its latency (a pending
        // .dataPlayedBack): holding the lock here could deadlock the two.
        for node in nodes { node.reset() }
    }

    // MARK: Manual rendering (the bodies: AVAudioEngine+ManualRendering.swift)

    /// Renders to buffers you pull (``renderOffline(_:to:)``) instead of a device, in `pcmFormat`,
    /// at most `maximumFrameCount` frames a call. The engine must be stopped.
    open func enableManualRenderingMode(_ mode: AVAudioEngineManualRenderingMode, format pcmFormat: AVAudioFormat,
                                        maximumFrameCount: AVAudioFrameCount) throws {
        try enableManualRendering(mode, format: pcmFormat, maximumFrameCount: maximumFrameCount)
    }

    /// Back to rendering to a device.
    open func disableManualRenderingMode() { disableManualRendering() }

    /// The manual rendering mode (offline when not enabled, as Apple reports).
    open var manualRenderingMode: AVAudioEngineManualRenderingMode { manualMode ?? .offline }
    /// True in manual rendering mode.
    open var isInManualRenderingMode: Bool { isManualRendering }
    /// The format of manual renders.
    open var manualRenderingFormat: AVAudioFormat { outputFormat }
    /// The most frames one manual render may ask for.
    open var manualRenderingMaximumFrameCount: AVAudioFrameCount { manualMaximum }
    /// Frames rendered manually so far.
    open var manualRenderingSampleTime: AVAudioFramePosition { lock.lock(); defer { lock.unlock() }; return manualTime }

    /// Renders `numberOfFrames` frames into `buffer` (in the manual rendering format). Players
    /// read their schedule synchronously first, so the audio is complete. Throws, as Apple's
    /// engine does, an `NSError` with code -80800 (`AVAudioEngineManualRenderingError.invalidMode`)
    /// outside offline manual rendering and -80802 (`.notRunning`) before ``start()`` or after
    /// ``pause()``/``stop()``.
    open func renderOffline(_ numberOfFrames: AVAudioFrameCount, to buffer: AVAudioPCMBuffer) throws -> AVAudioEngineManualRenderingStatus {
        try renderManually(numberOfFrames, to: buffer)
    }
}
