import OATCore
import OATDevices
import Synchronization

/// An output device that runs what is rendered into it through a chain of effect nodes (EQ,
/// dynamics, reverb, ...) before handing it to another device.
///
/// This is how audio from a player that owns its output (``OATDevices/AudioOutputDevice``
/// factories, as the streaming player and the AudioQueue take) gets the OATUnits effects:
/// give the player a factory that wraps the real device in this one. The chain is an
/// ``AudioGraph`` (render-callback source -> effects -> output) at the device's rate and
/// channel count, processed on the device's render thread in place, so the real-time rules
/// hold: no allocation, no locks (the graph's compiled plan is swapped atomically).
///
/// Everything else (pause, resume, stop, counters, events) is the wrapped device's.
public final class AUProcessingOutputDevice: AudioOutputDevice, @unchecked Sendable {
    /// The device the processed audio goes to.
    public let inner: any AudioOutputDevice
    /// The graph holding the effect chain (edit its nodes' parameters freely; structural edits
    /// are committed and swapped in atomically).
    public let graph: AudioGraph
    /// The effect nodes, in processing order.
    public let effects: [RenderNode]

    /// Render-thread state: where the source node reads the audio being processed.
    private final class Cursor: @unchecked Sendable {
        var buffers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>(start: nil, count: 0)
        var position = 0
        var valid = 0
    }
    private let cursor = Cursor()

    /// Wraps `inner`, processing through `effects` (nodes not yet in any graph, each with one
    /// input and one output of the device's channel count). An empty chain passes audio through.
    public init(wrapping inner: any AudioOutputDevice, effects: [RenderNode], maxFramesPerSlice: Int = 1024) throws(AudioError) {
        self.inner = inner
        self.effects = effects
        let channels = inner.format.channels
        graph = try AudioGraph(sampleRate: inner.format.sampleRate, channels: channels, maxFramesPerSlice: maxFramesPerSlice)
        let cursor = self.cursor
        let source = AURenderCallbackNode(channels: channels, name: "device input") { out, frames, _ in
            // Copies the next `frames` of the audio being processed (zeros past its end).
            let available = max(0, min(frames, cursor.valid - cursor.position))
            for c in 0..<out.channelCount {
                let dst = out[c]
                if c < cursor.buffers.count, available > 0 {
                    dst.update(from: cursor.buffers[c] + cursor.position, count: available)
                }
                if available < frames { (dst + available).update(repeating: 0, count: frames - available) }
            }
            cursor.position += frames
        }
        try graph.add(source)
        var last: RenderNode = source
        for node in effects {
            try graph.add(node)
            try graph.connect(last, to: node)
            last = node
        }
        try graph.connect(last, to: graph.output)
        try graph.commit()
    }

    public var name: String { inner.name }
    public var format: AudioDeviceFormat { inner.format }
    public var framesPerRender: Int { inner.framesPerRender }
    public var isRealTime: Bool { inner.isRealTime }
    public var latency: Double { inner.latency }
    public var playedFrames: Int64 { inner.playedFrames }
    public var renderedFrames: Int64 { inner.renderedFrames }
    /// Passed to the wrapped device.
    public func setTargetLatency(_ seconds: Double) { inner.setTargetLatency(seconds) }

    /// Starts the wrapped device; each render pulls from `render`, then processes the frames it
    /// produced through the chain in place.
    public func start(_ render: @escaping AudioRenderCallback) throws(AudioError) {
        let graph = self.graph
        let cursor = self.cursor
        try inner.start { buffers, frames, time in
            let result = render(buffers, frames, time)
            let n = max(0, min(frames, result.frames))
            guard n > 0 else { return result }
            cursor.buffers = buffers
            cursor.position = 0
            cursor.valid = n
            graph.render(into: buffers, frames: n, time: time)
            return result
        }
    }

    public func pause() throws(AudioError) { try inner.pause() }
    public func resume() throws(AudioError) { try inner.resume() }
    public func stop(drain: Bool) { inner.stop(drain: drain) }
    /// Drops what the wrapped device holds (the effects keep their state).
    public func flush(_ resume: () -> Void) { inner.flush(resume) }
    public func close() { inner.close() }
    public func takeEvents() -> [AudioDeviceEvent] { inner.takeEvents() }
    public var droppedEventCount: Int { inner.droppedEventCount }
}
