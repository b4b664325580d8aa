import OATCore
import OATDevices
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A compiled, immutable render plan: the graph's nodes in topological order (sources first),
/// each input bus resolved to the (entry, bus) feeding it, and every output bus's buffers
/// preallocated. Built on the control plane, swapped in atomically, used by the render thread,
/// freed on the control plane once the render thread has let go of it.
final class RenderPlan: @unchecked Sendable {
    struct Source {
        let entry: Int
        let bus: Int
    }

    struct Entry {
        let node: RenderNode
        let inputs: [Source?]
        let inputChannels: [Int]
        let outputs: [UnsafeMutablePointer<UnsafeMutablePointer<Float>>]
        let outputChannels: [Int]
    }

    let entries: [Entry]
    let root: Int
    let maxFrames: Int
    /// Render-thread state: the slice serial and, per entry, the serial and frame count of its
    /// last render (a node with several output buses renders once per slice).
    var serial: Int64 = 0
    var hostTime: UInt64 = 0
    private let lastSerial: UnsafeMutablePointer<Int64>
    private let lastFrames: UnsafeMutablePointer<Int>
    private let silence: UnsafeMutablePointer<Float>
    private let silencePointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    private var storage: [UnsafeMutablePointer<Float>] = []

    init(nodes: [RenderNode], sources: [[Source?]], root: Int, maxFrames: Int) {
        self.maxFrames = maxFrames
        self.root = root
        silence = .allocate(capacity: maxFrames)
        silence.initialize(repeating: 0, count: maxFrames)
        silencePointers = .allocate(capacity: 64)
        silencePointers.initialize(repeating: silence, count: 64)
        var entries: [Entry] = []
        var storage: [UnsafeMutablePointer<Float>] = []
        for (i, node) in nodes.enumerated() {
            var outs: [UnsafeMutablePointer<UnsafeMutablePointer<Float>>] = []
            for channels in node.outputChannels {
                let block = UnsafeMutablePointer<Float>.allocate(capacity: max(1, channels * maxFrames))
                block.initialize(repeating: 0, count: max(1, channels * maxFrames))
                storage.append(block)
                let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, channels))
                for c in 0..<channels { (pointers + c).initialize(to: block + c * maxFrames) }
                outs.append(pointers)
            }
            entries.append(Entry(node: node, inputs: sources[i], inputChannels: node.inputChannels, outputs: outs,
                                 outputChannels: node.outputChannels))
        }
        self.entries = entries
        self.storage = storage
        lastSerial = .allocate(capacity: max(1, nodes.count))
        lastSerial.initialize(repeating: -1, count: max(1, nodes.count))
        lastFrames = .allocate(capacity: max(1, nodes.count))
        lastFrames.initialize(repeating: 0, count: max(1, nodes.count))
    }

    deinit {
        for e in entries { for p in e.outputs { p.deallocate() } }
        for b in storage { b.deallocate() }
        lastSerial.deallocate()
        lastFrames.deallocate()
        silencePointers.deallocate()
        silence.deallocate()
    }

    @inline(__always)
    func outputBuffer(entry: Int, bus: Int, frames: Int) -> AUBufferList {
        let e = entries[entry]
        return AUBufferList(channels: e.outputs[bus], channelCount: e.outputChannels[bus], frames: frames)
    }

    /// Renders what feeds `entry`'s input `bus` for `frames` frames and returns it.
    func pull(entry: Int, bus: Int, frames: Int, fresh: Bool) -> AUBufferList {
        let e = entries[entry]
        guard let source = e.inputs[bus] else {
            return AUBufferList(channels: silencePointers, channelCount: min(64, e.inputChannels[bus]), frames: frames)
        }
        if fresh { serial &+= 1 }
        renderEntry(source.entry, frames: frames)
        return outputBuffer(entry: source.entry, bus: source.bus, frames: frames)
    }

    func renderEntry(_ index: Int, frames: Int) {
        if lastSerial[index] == serial && lastFrames[index] == frames { return }
        lastSerial[index] = serial
        lastFrames[index] = frames
        let node = entries[index].node
        let context = AURenderContext(frames: frames, sampleTime: node.renderedFrames, hostTime: hostTime, plan: self, index: index)
        if node.isBypassed && !entries[index].inputChannels.isEmpty && !entries[index].outputChannels.isEmpty {
            // Bypassed: the input as it is (channels mapped as AUBufferList.copy maps them).
            context.output(0).copy(from: context.input(0))
            for bus in 1..<entries[index].outputChannels.count { context.output(bus).silence() }
        } else {
            node.render(context)
        }
        node.renderedFrames &+= Int64(frames)
    }
}

/// The graph's output: one input bus whose audio goes to the device (or to the caller of
/// ``AudioGraph/render(into:frames:time:)`` offline). Apple's output unit (RemoteIO,
/// DefaultOutput, HALOutput).
public final class AUOutputNode: RenderNode, @unchecked Sendable {
    /// Creates an output with `channels` channels.
    public init(channels: Int) {
        super.init(name: "output", inputChannels: [channels], outputChannels: [])
    }
}

/// A pull-model render graph of ``RenderNode``s (Apple's AUGraph, done the real-time-safe way).
///
/// Edit it on the control plane (``add(_:)``, ``connect(_:output:to:input:)``, ``disconnect(_:input:)``,
/// ``remove(_:)``); nothing changes for the render thread until ``commit()`` compiles the
/// edited graph into a plan (topologically sorted, every buffer preallocated, new nodes
/// prepared) and swaps it in atomically. The old plan is freed on the control thread once the
/// render thread has left it. Nodes keep their state across commits, so edits while playing
/// do not interrupt the audio of the nodes that stay.
///
/// Rendering: ``start(device:)`` drives the graph from an output device's render callback
/// (the RemoteIO pattern); ``render(into:frames:time:)`` and ``renderOffline(frames:)``
/// render without a device, as fast as the CPU allows. Requests longer than
/// ``maxFramesPerSlice`` are rendered in slices of at most that many frames.
///
/// Thread safety: the editing methods may be called from any thread (they serialise on a
/// lock the render thread never takes). ``render(into:frames:time:)`` must be called from one
/// thread at a time and never while a device drives the graph; it does not allocate or lock.
public final class AudioGraph: @unchecked Sendable {
    struct Connection: Hashable {
        let source: ObjectIdentifier
        let sourceBus: Int
        let destination: ObjectIdentifier
        let destinationBus: Int
    }

    struct Description {
        var nodes: [RenderNode] = []
        var connections: [Connection] = []
        var dirty = true
        /// Nodes removed since the last commit: they stay bound to this graph (not addable
        /// elsewhere, so never re-prepared) until no plan that the render thread may be
        /// rendering holds them.
        var pendingRemoval: [RenderNode] = []
    }

    /// Frames per second on every bus.
    public let sampleRate: Double
    /// The most frames a node renders in one call.
    public let maxFramesPerSlice: Int
    /// The output node (already added).
    public let output: AUOutputNode
    private let description = Locked(Description())
    private let commitLock = Locked(())
    private let current = Atomic<UnsafeMutableRawPointer?>(nil)
    private let inUse = Atomic<UnsafeMutableRawPointer?>(nil)
    private let deviceBox = Locked<(any AudioOutputDevice)?>(nil)
    private let commits = Atomic<Int>(0)
    private let observerSlot = Atomic<UnsafeMutableRawPointer?>(nil)
    private let retiredObservers = Locked<[RenderObserver]>([])
    private let offlineIdle = Atomic<Bool>(false)

    /// Creates an empty graph whose output has `channels` channels.
    public init(sampleRate: Double = 48000, channels: Int = 2, maxFramesPerSlice: Int = 1024) throws(AudioError) {
        guard sampleRate.isFinite, sampleRate >= 1000, sampleRate <= 768_000 else {
            throw AudioError(.invalidArgument, component: "AudioGraph", "sample rate \(sampleRate) is outside 1000...768000 Hz")
        }
        guard maxFramesPerSlice >= 16, maxFramesPerSlice <= 16384 else {
            throw AudioError(.invalidArgument, component: "AudioGraph", "maxFramesPerSlice \(maxFramesPerSlice) is outside 16...16384")
        }
        guard channels >= 1, channels <= 64 else {
            throw AudioError(.invalidArgument, component: "AudioGraph", "\(channels) output channels is outside 1...64")
        }
        self.sampleRate = sampleRate
        self.maxFramesPerSlice = maxFramesPerSlice
        output = AUOutputNode(channels: channels)
        try add(output)
    }

    deinit {
        stop()
        if let p = current.exchange(nil, ordering: .sequentiallyConsistent) {
            Unmanaged<RenderPlan>.fromOpaque(p).release()
        }
        if let o = observerSlot.exchange(nil, ordering: .sequentiallyConsistent) {
            Unmanaged<RenderObserver>.fromOpaque(o).release()
        }
    }

    /// Sets the observer of every ``render(into:frames:time:)`` (device-driven or not), nil to
    /// remove it: Apple's render notifications. Its closures run on the render thread and must
    /// be real-time safe. A replaced observer stays alive until the graph is freed, since the
    /// render thread may still be calling it.
    public func setRenderObserver(_ observer: RenderObserver?) {
        let new = observer.map { Unmanaged.passRetained($0).toOpaque() }
        if let old = observerSlot.exchange(new, ordering: .sequentiallyConsistent) {
            let o = Unmanaged<RenderObserver>.fromOpaque(old)
            retiredObservers.withLock { $0.append(o.takeUnretainedValue()) }
            o.release()
        }
    }

    // MARK: Editing

    /// The nodes in the graph (the output first).
    public var nodes: [RenderNode] { description.withLock { $0.nodes } }

    /// Adds `node` (prepared for the graph's rate now, on this thread).
    public func add(_ node: RenderNode) throws(AudioError) {
        // Removed since the last commit and added back: it never left the running plan.
        let readded = description.withLock { d -> Bool in
            guard node.graph === self, let i = d.pendingRemoval.firstIndex(where: { $0 === node }) else { return false }
            d.pendingRemoval.remove(at: i)
            d.nodes.append(node)
            d.dirty = true
            return true
        }
        if readded { return }
        if let g = node.graph {
            throw AudioError(.invalidState, component: "AudioGraph", g === self ? "\(node.name) is already in this graph" : "\(node.name) belongs to another graph",
                             osStatus: -10862)
        }
        if !node.prepared || node.sampleRate != sampleRate || node.maxFrames != maxFramesPerSlice {
            try node.prepare(sampleRate: sampleRate, maxFrames: maxFramesPerSlice)
            node.prepared = true
        }
        node.graph = self
        description.withLock {
            $0.nodes.append(node)
            $0.dirty = true
        }
    }

    /// Removes `node` and every connection to or from it (takes effect at ``commit()``). Once a
    /// plan has been committed, the node stays bound to this graph until the next ``commit()``
    /// has swapped in a plan without it and the render thread has left the old one: until then
    /// it cannot join another graph, so it is never re-prepared (its render state freed) while
    /// the old plan may still render it.
    public func remove(_ node: RenderNode) throws(AudioError) {
        guard node !== output else {
            throw AudioError(.invalidArgument, component: "AudioGraph", "the output node cannot be removed", osStatus: -10860)
        }
        let id = ObjectIdentifier(node)
        let found = description.withLock { d -> Bool in
            guard let i = d.nodes.firstIndex(where: { $0 === node }) else { return false }
            d.nodes.remove(at: i)
            d.connections.removeAll { $0.source == id || $0.destination == id }
            d.dirty = true
            d.pendingRemoval.append(node)
            return true
        }
        guard found else {
            throw AudioError(.invalidArgument, component: "AudioGraph", "\(node.name) is not in this graph", osStatus: -10860)
        }
        // Never committed: no plan holds the node, it is free at once.
        commitLock.withLock { _ in
            guard current.load(ordering: .sequentiallyConsistent) == nil else { return }
            releasePendingRemovals(keeping: [])
        }
    }

    /// Unbinds the nodes removed since the last commit that `plan` (the plan now current) does
    /// not hold. Called with `commitLock` held, after the render thread left any older plan.
    private func releasePendingRemovals(keeping plan: [RenderNode]) {
        let free = description.withLock { d -> [RenderNode] in
            let (keep, free) = (d.pendingRemoval.filter { n in plan.contains { $0 === n } },
                                d.pendingRemoval.filter { n in !plan.contains { $0 === n } })
            d.pendingRemoval = keep
            return free
        }
        for n in free where n.graph === self { n.graph = nil }
    }

    /// Connects output bus `output` of `source` to input bus `input` of `destination` (takes effect at ``commit()``).
    ///
    /// Errors: a node not in the graph (dangling), a bus out of range, different channel
    /// counts on the two buses (format mismatch), a bus already connected (an output bus feeds
    /// one input: use ``AUSplitterNode`` to fan out), or a connection that would close a cycle.
    public func connect(_ source: RenderNode, output sourceBus: Int = 0, to destination: RenderNode, input destinationBus: Int = 0) throws(AudioError) {
        let result = description.withLock { d -> AudioError? in
            guard d.nodes.contains(where: { $0 === source }) else {
                return AudioError(.invalidArgument, component: "AudioGraph", "cannot connect \(source.name): it is not in the graph (add it first)", osStatus: -10860)
            }
            guard d.nodes.contains(where: { $0 === destination }) else {
                return AudioError(.invalidArgument, component: "AudioGraph", "cannot connect to \(destination.name): it is not in the graph (add it first)", osStatus: -10860)
            }
            guard sourceBus >= 0, sourceBus < source.outputChannels.count else {
                return AudioError(.invalidArgument, component: "AudioGraph", "\(source.name) has no output bus \(sourceBus) (it has \(source.outputChannels.count))", osStatus: -10877)
            }
            guard destinationBus >= 0, destinationBus < destination.inputChannels.count else {
                return AudioError(.invalidArgument, component: "AudioGraph", "\(destination.name) has no input bus \(destinationBus) (it has \(destination.inputChannels.count))", osStatus: -10877)
            }
            let a = source.outputChannels[sourceBus], b = destination.inputChannels[destinationBus]
            guard a == b else {
                return AudioError(.unsupportedFormat, component: "AudioGraph",
                                  "format mismatch: \(source.name) output \(sourceBus) has \(a) channels but \(destination.name) input \(destinationBus) takes \(b) (insert an AUFormatConverterNode)",
                                  osStatus: -10868)
            }
            let sid = ObjectIdentifier(source), did = ObjectIdentifier(destination)
            if d.connections.contains(where: { $0.destination == did && $0.destinationBus == destinationBus }) {
                return AudioError(.invalidState, component: "AudioGraph", "\(destination.name) input \(destinationBus) is already connected (disconnect it first)", osStatus: -10861)
            }
            if d.connections.contains(where: { $0.source == sid && $0.sourceBus == sourceBus }) {
                return AudioError(.invalidState, component: "AudioGraph", "\(source.name) output \(sourceBus) is already connected (an output bus feeds one input: use a splitter)", osStatus: -10861)
            }
            // A cycle: the source is reachable downstream of the destination.
            var stack = [did], seen: Set<ObjectIdentifier> = []
            while let n = stack.popLast() {
                if n == sid {
                    return AudioError(.invalidArgument, component: "AudioGraph",
                                      "connecting \(source.name) to \(destination.name) would make a cycle (\(destination.name) already feeds \(source.name))", osStatus: -10861)
                }
                guard seen.insert(n).inserted else { continue }
                stack.append(contentsOf: d.connections.filter { $0.source == n }.map(\.destination))
            }
            d.connections.append(Connection(source: sid, sourceBus: sourceBus, destination: did, destinationBus: destinationBus))
            d.dirty = true
            return nil
        }
        if let result { throw result }
    }

    /// Disconnects whatever feeds input bus `bus` of `destination` (takes effect at ``commit()``).
    public func disconnect(_ destination: RenderNode, input bus: Int = 0) {
        let did = ObjectIdentifier(destination)
        description.withLock { d in
            d.connections.removeAll { $0.destination == did && $0.destinationBus == bus }
            d.dirty = true
        }
    }

    /// Removes every connection (takes effect at ``commit()``).
    public func clearConnections() {
        description.withLock { d in
            d.connections.removeAll()
            d.dirty = true
        }
    }

    /// The connections as (source, source bus, destination, destination bus).
    public var connections: [(source: RenderNode, sourceBus: Int, destination: RenderNode, destinationBus: Int)] {
        description.withLock { d in
            d.connections.compactMap { c in
                guard let s = d.nodes.first(where: { ObjectIdentifier($0) == c.source }),
                      let t = d.nodes.first(where: { ObjectIdentifier($0) == c.destination }) else { return nil }
                return (s, c.sourceBus, t, c.destinationBus)
            }
        }
    }

    /// True when edits were made since the last ``commit()``.
    public var hasUncommittedEdits: Bool { description.withLock { $0.dirty } }

    /// Plans committed so far.
    public var commitCount: Int { commits.load(ordering: .relaxed) }

    /// Compiles the edited graph into a render plan and swaps it in atomically; the previous
    /// plan is freed here once the render thread no longer uses it (waits at most one render
    /// call). Throws (and keeps the running plan) when the graph is invalid.
    public func commit() throws(AudioError) {
        let result: Result<RenderPlan, AudioError> = commitLock.withLock { _ in
            let (nodes, connections) = description.withLock { d in (d.nodes, d.connections) }
            do throws(AudioError) {
                let plan = try AudioGraph.compile(nodes: nodes, connections: connections, root: output, maxFrames: maxFramesPerSlice)
                return .success(plan)
            } catch {
                return .failure(error)
            }
        }
        let plan = try result.get()
        commitLock.withLock { _ in
            let fresh = Unmanaged.passRetained(plan).toOpaque()
            let old = current.exchange(fresh, ordering: .sequentiallyConsistent)
            if let old {
                while inUse.load(ordering: .sequentiallyConsistent) == old { usleep(200) }
                Unmanaged<RenderPlan>.fromOpaque(old).release()
            }
            // The render thread has left every older plan: nodes they alone held are free.
            releasePendingRemovals(keeping: plan.entries.map(\.node))
            description.withLock { $0.dirty = false }
            commits.add(1, ordering: .relaxed)
        }
    }

    static func compile(nodes: [RenderNode], connections: [Connection], root: RenderNode, maxFrames: Int) throws(AudioError) -> RenderPlan {
        let ids = nodes.map { ObjectIdentifier($0) }
        var indexOf: [ObjectIdentifier: Int] = [:]
        for (i, id) in ids.enumerated() { indexOf[id] = i }
        // Validate every connection again (nodes may have been removed since).
        var feeds: [[Int]] = Array(repeating: [], count: nodes.count)
        var indegree = [Int](repeating: 0, count: nodes.count)
        for c in connections {
            guard let s = indexOf[c.source], let d = indexOf[c.destination] else {
                throw AudioError(.invalidArgument, component: "AudioGraph", "a connection refers to a node that is no longer in the graph", osStatus: -10860)
            }
            guard c.sourceBus < nodes[s].outputChannels.count, c.destinationBus < nodes[d].inputChannels.count else {
                throw AudioError(.invalidArgument, component: "AudioGraph", "connection \(nodes[s].name):\(c.sourceBus) -> \(nodes[d].name):\(c.destinationBus) names a bus that does not exist", osStatus: -10877)
            }
            guard nodes[s].outputChannels[c.sourceBus] == nodes[d].inputChannels[c.destinationBus] else {
                throw AudioError(.unsupportedFormat, component: "AudioGraph",
                                 "format mismatch: \(nodes[s].name) output \(c.sourceBus) has \(nodes[s].outputChannels[c.sourceBus]) channels, \(nodes[d].name) input \(c.destinationBus) takes \(nodes[d].inputChannels[c.destinationBus])", osStatus: -10868)
            }
            feeds[s].append(d)
            indegree[d] += 1
        }
        // Kahn's algorithm: sources first.
        var order: [Int] = []
        var ready = (0..<nodes.count).filter { indegree[$0] == 0 }
        while let n = ready.popLast() {
            order.append(n)
            for d in feeds[n] {
                indegree[d] -= 1
                if indegree[d] == 0 { ready.append(d) }
            }
        }
        if order.count != nodes.count {
            let stuck = (0..<nodes.count).filter { indegree[$0] > 0 }.map { nodes[$0].name }
            throw AudioError(.invalidArgument, component: "AudioGraph", "the graph has a cycle through \(stuck.joined(separator: ", "))", osStatus: -10861)
        }
        var position = [Int](repeating: 0, count: nodes.count)
        for (p, n) in order.enumerated() { position[n] = p }
        var sources: [[RenderPlan.Source?]] = order.map { Array(repeating: nil, count: nodes[$0].inputChannels.count) }
        for c in connections {
            guard let s = indexOf[c.source], let d = indexOf[c.destination] else { continue }
            sources[position[d]][c.destinationBus] = RenderPlan.Source(entry: position[s], bus: c.sourceBus)
        }
        guard let r = indexOf[ObjectIdentifier(root)] else {
            throw AudioError(.invalidState, component: "AudioGraph", "the output node is missing", osStatus: -10860)
        }
        for n in nodes where !n.prepared {
            throw AudioError(.invalidState, component: "AudioGraph", "\(n.name) was not prepared", osStatus: -10867)
        }
        return RenderPlan(nodes: order.map { nodes[$0] }, sources: sources, root: position[r], maxFrames: maxFrames)
    }

    // MARK: Rendering

    /// Renders `frames` frames of the output into `buffers` (one pointer per output channel,
    /// each at least `frames` long); silence before the first ``commit()``. Real-time safe:
    /// no allocation, no locks. One caller at a time.
    public func render(into buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, frames: Int, time: AudioTimeStamp = AudioTimeStamp()) {
        guard let o = observerSlot.load(ordering: .acquiring) else {
            renderPlan(into: buffers, frames: frames, time: time)
            return
        }
        let observer = Unmanaged<RenderObserver>.fromOpaque(o).takeUnretainedValue()
        observer.before(buffers, frames, time)
        renderPlan(into: buffers, frames: frames, time: time)
        observer.after(buffers, frames, time)
    }

    /// Waits (sleeping, not on a real-time thread) until every source of the current plan is
    /// ready to render `frames` frames (``RenderNode/isReadyToRender(frames:)``: a player whose
    /// feeder has read ahead), at most `seconds`; false on timeout. For hosts that render
    /// offline (Apple's `kAudioUnitProperty_OfflineRender`), where a render may block for data
    /// produced on another thread instead of playing silence in its place.
    public func waitForSources(frames: Int, seconds: Double) -> Bool {
        pollWithBackoff(until: HostTime.now() + HostTime.ticks(seconds: seconds)) { sourcesReady(frames: frames) }
    }

    /// Render thread: true when every node of the current plan is ready to render `frames`
    /// frames (``RenderNode/isReadyToRender(frames:)``). Uses the plan as ``render(into:frames:time:)`` does.
    private func sourcesReady(frames: Int) -> Bool {
        var ready = true
        withCurrentPlan { plan in
            ready = plan?.entries.allSatisfy { $0.node.isReadyToRender(frames: frames) } ?? true
        }
        return ready
    }

    private func renderPlan(into buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, frames: Int, time: AudioTimeStamp) {
        // Announce the plan in use, re-checking that it is still current (the control side
        // frees a replaced plan only once `inUse` no longer names it).
        var p = current.load(ordering: .sequentiallyConsistent)
        while true {
            inUse.store(p, ordering: .sequentiallyConsistent)
            let q = current.load(ordering: .sequentiallyConsistent)
            if q == p { break }
            p = q
        }
        defer { inUse.store(nil, ordering: .sequentiallyConsistent) }
        guard let p else {
            for c in 0..<buffers.count { buffers[c].update(repeating: 0, count: max(0, frames)) }
            return
        }
        let plan = Unmanaged<RenderPlan>.fromOpaque(p).takeUnretainedValue()
        let rootChannels = plan.entries[plan.root].inputChannels[0]
        var done = 0
        while done < frames {
            let n = min(plan.maxFrames, frames - done)
            plan.serial &+= 1
            plan.hostTime = time.flags.contains(.hostTimeValid) ? time.hostTime &+ UInt64(Double(done) / sampleRate * 1e9) : 0
            let out = plan.pull(entry: plan.root, bus: 0, frames: n, fresh: false)
            for c in 0..<buffers.count {
                let src = c < rootChannels ? out.channels[c] : (rootChannels == 1 ? out.channels[0] : nil)
                if let src { (buffers[c] + done).update(from: src, count: n) } else { (buffers[c] + done).update(repeating: 0, count: n) }
            }
            plan.entries[plan.root].node.renderedFrames &+= Int64(n)
            done += n
        }
    }

    /// Renders `frames` frames offline (no device, as fast as possible) and returns them per
    /// channel. Control plane only (allocates the result); never while a device drives the graph.
    public func renderOffline(frames: Int) -> [[Float]] {
        let channels = output.inputChannels[0]
        var out = [[Float]](repeating: [Float](repeating: 0, count: max(0, frames)), count: channels)
        let pointers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        defer { pointers.deallocate() }
        for c in 0..<channels {
            out[c].withUnsafeMutableBufferPointer { pointers[c] = $0.baseAddress! }
        }
        // The arrays are uniquely referenced and not resized, so the pointers stay valid.
        render(into: pointers, frames: max(0, frames))
        return out
    }

    // MARK: Device

    /// The device driving the graph, if started.
    public var device: (any AudioOutputDevice)? { deviceBox.withLock { $0 } }

    /// Drives the graph from `device`'s render callback (commits pending edits first). The
    /// device must run at the graph's rate with the output node's channel count.
    ///
    /// On a device that is not real time (files, `null:fast`), the graph renders nothing (the
    /// device calls again) while a node of the plan is not ready (``RenderNode/isReadyToRender(frames:)``:
    /// a player whose feeder is behind), so rendering faster than real time waits for the
    /// sources instead of turning into gaps of silence. `isReady`, when given, is asked too
    /// before each render of such a device. It must be real-time safe (read atomics).
    ///
    /// On such a device the graph also ends by the audio, not by the time: once no source is
    /// active (``RenderNode/isActiveSource``) the frames written stop where the sources' content
    /// ended plus the effects' tail (below -90 dBFS, at most the nodes' ``RenderNode/tailSeconds``),
    /// and nothing more is written while they stay idle (``isClocklessOutputIdle``). Two runs of
    /// the same graph on the same input write the same frames.
    public func start(device: any AudioOutputDevice, isReady: (@Sendable () -> Bool)? = nil) throws(AudioError) {
        guard device.format.sampleRate == sampleRate else {
            throw AudioError(.unsupportedFormat, component: "AudioGraph", "device \(device.name) runs at \(device.format.sampleRate) Hz, the graph at \(sampleRate) Hz", osStatus: -10868)
        }
        guard device.format.channels == output.inputChannels[0] else {
            throw AudioError(.unsupportedFormat, component: "AudioGraph", "device \(device.name) has \(device.format.channels) channels, the graph output \(output.inputChannels[0])", osStatus: -10868)
        }
        if hasUncommittedEdits || current.load(ordering: .acquiring) == nil { try commit() }
        let busy = deviceBox.withLock { d -> Bool in
            if d != nil { return true }
            d = device
            return false
        }
        if busy { throw AudioError(.invalidState, component: "AudioGraph", "the graph is already running on a device", osStatus: -10863) }
        do {
            let gate = device.isRealTime ? nil : isReady
            let offline = device.isRealTime ? nil : OfflineEnd(sampleRate: sampleRate)
            offlineIdle.store(false, ordering: .releasing)
            try device.start { [self] buffers, frames, time in
                guard let offline else {
                    render(into: buffers, frames: frames, time: time)
                    return AudioRenderResult(frames: frames)
                }
                // The gate holds renders back while something is on its way; once no source is
                // active (the end), the tail renders whatever the gate says.
                if let gate, offline.phase != .tail, !gate(), offline.phase == .idle || sourcesActive() {
                    return AudioRenderResult(frames: 0)
                }
                if !sourcesReady(frames: frames) { return AudioRenderResult(frames: 0) }
                return renderToClocklessDevice(buffers, frames: frames, time: time, offline)
            }
        } catch {
            deviceBox.withLock { $0 = nil }
            throw error
        }
    }

    /// Render thread: one render for a device no clock paces. While a source is active the
    /// slice is rendered whole; in the slice where the last one ends, the sources' content ends
    /// at the frame after the last one of them played (``RenderNode/framesAfterContent``), and the
    /// tail follows: it ends after its last sample at or above -90 dBFS once 256 frames after
    /// that one are below (what was written already stays), and at the latest after the sum of
    /// the nodes' ``RenderNode/tailSeconds`` (none: the file ends with the sources' content). Then
    /// nothing is rendered (the device writes nothing) until a source is active again. So the frames written are set by the audio and the same every
    /// run, whatever the time the host takes.
    private func renderToClocklessDevice(_ buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, frames: Int,
                                         time: AudioTimeStamp, _ o: OfflineEnd) -> AudioRenderResult {
        var active = false, after = Int.max, tailSeconds = 0.0
        withCurrentPlan { plan in
            guard let plan else { active = true; return }
            var sources = 0
            for e in plan.entries {
                tailSeconds += max(0, e.node.tailSeconds)
                guard e.inputChannels.isEmpty else { continue }
                sources += 1
                if e.node.isActiveSource { active = true }
            }
            // A graph without a source (a generic output fed by nothing) renders what it renders.
            if sources == 0 { active = true }
        }
        if o.phase == .idle {
            guard active else { return AudioRenderResult(frames: 0) }
            o.phase = .playing
            offlineIdle.store(false, ordering: .releasing)
        }
        if o.phase == .tail && active { o.phase = .playing }
        render(into: buffers, frames: frames, time: time)
        var tailStart = 0
        if o.phase == .playing {
            withCurrentPlan { plan in
                guard let plan else { return }
                for e in plan.entries where e.inputChannels.isEmpty { after = min(after, max(0, e.node.framesAfterContent)) }
            }
            let stillActive = sourcesActive()
            if stillActive { return AudioRenderResult(frames: frames) }
            // The sources ended in this slice.
            tailStart = after == Int.max ? frames : frames - min(frames, after)
            o.phase = .tail
            o.tailRendered = 0
            o.lastLoud = 0
            o.tailLimit = Int64(min(60, tailSeconds) * sampleRate)
        }
        // The tail part of the slice, tailStart..<frames: tail positions w..<w + span (0 is
        // the sources' end).
        let w = o.tailRendered
        let span = Int(clamping: min(Int64(frames - tailStart), max(0, o.tailLimit - w)))
        for c in 0..<buffers.count {
            let p = buffers[c]
            var i = tailStart + span - 1
            while i >= tailStart && w + Int64(i - tailStart) >= o.lastLoud {
                if abs(p[i]) >= OfflineEnd.threshold { o.lastLoud = w + Int64(i - tailStart) + 1; break }
                i -= 1
            }
        }
        let reached = w + Int64(span)
        let quiet = reached - o.lastLoud
        let atLimit = reached >= o.tailLimit
        guard atLimit || quiet >= OfflineEnd.quietFrames else {
            o.tailRendered = reached
            return AudioRenderResult(frames: frames)
        }
        // Ends after the last loud sample (what was written already stays), or at the limit.
        let end = quiet >= OfflineEnd.quietFrames ? max(w, o.lastLoud) : o.tailLimit
        o.phase = .idle
        offlineIdle.store(true, ordering: .releasing)
        return AudioRenderResult(frames: tailStart + Int(clamping: max(0, min(Int64(span), end - w))))
    }

    /// Render thread: true when a source of the current plan is active (``RenderNode/isActiveSource``),
    /// or the plan has no source.
    private func sourcesActive() -> Bool {
        var active = false
        withCurrentPlan { plan in
            guard let plan else { active = true; return }
            var sources = 0
            for e in plan.entries where e.inputChannels.isEmpty {
                sources += 1
                if e.node.isActiveSource { active = true; return }
            }
            if sources == 0 { active = true }
        }
        return active
    }

    /// Render thread: runs `body` with the current plan, announced as in use.
    private func withCurrentPlan(_ body: (RenderPlan?) -> Void) {
        var p = current.load(ordering: .sequentiallyConsistent)
        while true {
            inUse.store(p, ordering: .sequentiallyConsistent)
            let q = current.load(ordering: .sequentiallyConsistent)
            if q == p { break }
            p = q
        }
        defer { inUse.store(nil, ordering: .sequentiallyConsistent) }
        body(p.map { Unmanaged<RenderPlan>.fromOpaque($0).takeUnretainedValue() })
    }

    /// True while a device no clock paces (a file, `null:fast`) drives the graph and has
    /// written everything its sources gave and the tails after them, so it writes nothing
    /// until a source is active again. A host that renders a file waits for it before it stops
    /// the graph.
    public var isClocklessOutputIdle: Bool { offlineIdle.load(ordering: .acquiring) }

    /// Opens `spec` at the graph's format and drives the graph from it (`isReady` as in
    /// ``start(device:isReady:)``); returns the opened output (with its notice when ``AudioOutputSpec/auto`` fell back).
    @discardableResult
    public func start(_ spec: AudioOutputSpec, options: AudioOutput.Options = AudioOutput.Options(),
                      isReady: (@Sendable () -> Bool)? = nil) throws(AudioError) -> AudioOutput.Opened {
        let opened = try AudioOutput.open(spec, format: AudioDeviceFormat(sampleRate: sampleRate, channels: output.inputChannels[0]), options: options)
        do { try start(device: opened.device, isReady: isReady) } catch {
            opened.device.close()
            throw error
        }
        return opened
    }

    /// Stops and closes the device started by ``start(device:)`` or ``start(_:options:)``.
    /// The graph renders no more once this returns. With `drain`, what the device already holds
    /// is played first (an output unit's stop: at most its I/O buffer, so nothing rendered is
    /// lost); without, it is dropped.
    public func stop(drain: Bool = false) {
        let d = deviceBox.withLock { d -> (any AudioOutputDevice)? in
            defer { d = nil }
            return d
        }
        d?.stop(drain: drain)
        d?.close()
    }

    /// True while a device drives the graph.
    public var isRunning: Bool { deviceBox.withLock { $0 != nil } }
}

/// Where a graph driven by a device no clock paces is in its sources' end (render thread only).
final class OfflineEnd: @unchecked Sendable {
    enum Phase { case playing, tail, idle }
    /// -90 dBFS.
    static let threshold: Float = 3.1622776e-5
    /// Idle until a source is active: nothing is rendered before (not even unreported
    /// frames, which would move the effects' state by whenever the device first asked).
    var phase = Phase.idle
    /// Frames at the end of a tail below the threshold that end it.
    static let quietFrames: Int64 = 256
    var tailRendered: Int64 = 0
    var tailLimit: Int64 = 0
    /// The tail position after its last sample at or above the threshold.
    var lastLoud: Int64 = 0
    let sampleRate: Double
    init(sampleRate: Double) { self.sampleRate = sampleRate }
}

/// Observes an ``AudioGraph``'s renders (``AudioGraph/setRenderObserver(_:)``): `before` runs
/// before each render with the output buffers about to be filled, `after` with them filled.
/// Both run on the render thread: no allocation, locks or blocking.
public final class RenderObserver: @unchecked Sendable {
    /// The output buffers (one per channel), the frame count and the time stamp.
    public typealias Callback = (UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, Int, AudioTimeStamp) -> Void
    /// Called before each render.
    public let before: Callback
    /// Called after each render.
    public let after: Callback
    /// Creates an observer.
    public init(before: @escaping Callback, after: @escaping Callback) {
        self.before = before
        self.after = after
    }
}
