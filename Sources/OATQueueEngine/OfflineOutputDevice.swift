import OATCore
import OATDevices
import Synchronization

/// The "device" of a queue in offline mode: it holds the queue's render callback and calls it
/// when ``AudioOutputQueue/renderOffline(into:frames:timeStamp:)`` asks, on the caller's thread,
/// as fast as the queue decodes. Not paced: a short render is not an underrun.
///
/// Thread safety: `render` is called by one thread at a time (the queue serialises offline
/// renders through its caller); start/stop from the control side.
final class OfflineOutputDevice: AudioOutputDevice, @unchecked Sendable {
    let name = "offline"
    let format: AudioDeviceFormat
    let framesPerRender = 4096
    var isRealTime: Bool { false }
    var latency: Double { 0 }
    private let callback = Locked<AudioRenderCallback?>(nil)
    private let rendered = Atomic<Int64>(0)
    private let paused = Atomic<Bool>(false)
    private let events = AudioDeviceEventQueue()
    /// Host time of the first render when the caller gives none; later renders follow the sample clock.
    private var originHostTime: UInt64 = 0

    init(format: AudioDeviceFormat) { self.format = format }

    var playedFrames: Int64 { rendered.load(ordering: .acquiring) }
    var renderedFrames: Int64 { rendered.load(ordering: .acquiring) }

    func start(_ render: @escaping AudioRenderCallback) throws(AudioError) {
        callback.withLock { $0 = render }
        events.post(.started)
    }

    func pause() throws(AudioError) { paused.store(true, ordering: .releasing) }
    func resume() throws(AudioError) { paused.store(false, ordering: .releasing) }
    func stop(drain: Bool) { callback.withLock { $0 = nil } }
    func close() { stop(drain: false) }
    func takeEvents() -> [AudioDeviceEvent] { events.take() }
    var droppedEventCount: Int { events.droppedCount }

    /// Renders up to `frames` into `buffers`; returns the frames of audio produced.
    func render(_ buffers: UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>, frames: Int, timeStamp: AudioTimeStamp?, offset: Int) -> Int {
        guard let render = callback.withLock({ $0 }), !paused.load(ordering: .acquiring), frames > 0 else { return 0 }
        let sampleTime = rendered.load(ordering: .relaxed)
        if originHostTime == 0 { originHostTime = timeStamp.map { $0.flags.contains(.hostTimeValid) ? $0.hostTime : HostTime.now() } ?? HostTime.now() }
        var host = originHostTime &+ UInt64(Double(sampleTime) / format.sampleRate * 1e9)
        if let t = timeStamp, t.flags.contains(.hostTimeValid) {
            host = t.hostTime &+ UInt64(Double(offset) / format.sampleRate * 1e9)
        }
        let time = AudioTimeStamp(sampleTime: Double(sampleTime), hostTime: host, rateScalar: 1, flags: .sampleHostTimeValid)
        let result = render(buffers, frames, time)
        let n = max(0, min(frames, result.frames))
        rendered.add(Int64(n), ordering: .releasing)
        if result.isEndOfStream { events.post(.drained) }
        return n
    }
}
