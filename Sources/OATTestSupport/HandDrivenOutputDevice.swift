import OATCore
import OATDevices
import Synchronization

/// An output device that renders only when a test asks, with the frame count the test gives: what
/// a PulseAudio stream does at high rates (its requests are a quarter of its latency: 9600 frames at
/// 96 kHz with afplay's 0.4 s, 19 200 at 192 kHz).
public final class HandDrivenOutputDevice: AudioOutputDevice, @unchecked Sendable {
    public let format: AudioDeviceFormat
    public let name = "hand"
    public let framesPerRender: Int
    private let callback = Locked<AudioRenderCallback?>(nil)
    private let events = AudioDeviceEventQueue()

    /// A device at `format` that says it renders `framesPerRender` frames at a time.
    public init(format: AudioDeviceFormat, framesPerRender: Int) {
        self.format = format
        self.framesPerRender = framesPerRender
    }

    public var latency: Double { 0 }
    public var playedFrames: Int64 { 0 }
    public var renderedFrames: Int64 { 0 }
    public var droppedEventCount: Int { 0 }
    /// Whether a render callback is installed (started and not stopped).
    public var isStarted: Bool { callback.withLock { $0 != nil } }
    public func start(_ render: @escaping AudioRenderCallback) throws(AudioError) { callback.withLock { $0 = render } }
    public func pause() throws(AudioError) {}
    public func resume() throws(AudioError) {}
    public func stop(drain: Bool) { callback.withLock { $0 = nil } }
    public func close() { callback.withLock { $0 = nil } }
    public func takeEvents() -> [AudioDeviceEvent] { events.take() }
    /// Reports `event` as the device would (a loss, a restore): the queue takes it with the next
    /// ``takeEvents()``.
    public func report(_ event: AudioDeviceEvent) { events.post(event) }

    /// One render call of `frames` frames into buffers filled with `fill` beforehand: what it
    /// returned and each channel's samples; nil before start.
    public func render(_ frames: Int, fill: Float) -> (result: AudioRenderResult, channels: [[Float]])? {
        guard let render = callback.withLock({ $0 }) else { return nil }
        let channels = format.channels
        let storage = UnsafeMutablePointer<Float>.allocate(capacity: frames * channels)
        storage.initialize(repeating: fill, count: frames * channels)
        defer { storage.deallocate() }
        let pointers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        defer { pointers.deallocate() }
        for c in 0..<channels { pointers[c] = storage + c * frames }
        let result = render(pointers, frames, AudioTimeStamp(sampleTime: 0, hostTime: HostTime.now(), rateScalar: 1, flags: .sampleHostTimeValid))
        return (result, (0..<channels).map { Array(UnsafeBufferPointer(start: storage + $0 * frames, count: frames)) })
    }
}
