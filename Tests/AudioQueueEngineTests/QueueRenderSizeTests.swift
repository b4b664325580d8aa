import AudioDevices
import AudioFiles
import AudioQueueEngine
import AudioTestSupport
import Synchronization
import Testing

/// A device that renders only when the test asks, with the frame count the test gives: what a
/// PulseAudio stream does at high rates (its requests are a quarter of its latency: 9600 frames
/// at 96 kHz with afplay's 0.4 s, 19 200 at 192 kHz).
final class HandDrivenDevice: AudioOutputDevice, @unchecked Sendable {
    let format: AudioDeviceFormat
    let name = "hand"
    let framesPerRender: Int
    private let callback = Mutex<AudioRenderCallback?>(nil)
    private let events = AudioDeviceEventQueue()

    init(format: AudioDeviceFormat, framesPerRender: Int) {
        self.format = format
        self.framesPerRender = framesPerRender
    }

    var latency: Double { 0 }
    var playedFrames: Int64 { 0 }
    var renderedFrames: Int64 { 0 }
    var droppedEventCount: Int { 0 }
    func start(_ render: @escaping AudioRenderCallback) throws(AudioError) { callback.withLock { $0 = render } }
    func pause() throws(AudioError) {}
    func resume() throws(AudioError) {}
    func stop(drain: Bool) { callback.withLock { $0 = nil } }
    func close() { callback.withLock { $0 = nil } }
    func takeEvents() -> [AudioDeviceEvent] { events.take() }

    /// One render call of `frames` frames: what it returned and the first channel's samples.
    func render(_ frames: Int) -> (result: AudioRenderResult, samples: [Float])? {
        guard let render = callback.withLock({ $0 }) else { return nil }
        let channels = format.channels
        let storage = UnsafeMutablePointer<Float>.allocate(capacity: frames * channels)
        storage.initialize(repeating: .nan, count: frames * channels)
        defer { storage.deallocate() }
        let pointers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        defer { pointers.deallocate() }
        for c in 0..<channels { pointers[c] = storage + c * frames }
        let result = render(pointers, frames, AudioTimeStamp(sampleTime: 0, hostTime: HostTime.now(), rateScalar: 1, flags: .sampleHostTimeValid))
        return (result, Array(UnsafeBufferPointer(start: storage, count: frames)))
    }
}

/// The play ring serves what the device asks for, in time and not in a fixed frame count: a
/// render call of any size is filled from the ring while it holds the audio.
@Suite struct QueueRenderSizeTests {
    @Test(arguments: [(96000.0, 1, 9600), (192000.0, 1, 19200), (192000.0, 2, 19200), (44100.0, 8, 11025)])
    func aRenderOfAnySizeIsServedWhole(_ setup: (rate: Double, channels: Int, request: Int)) throws {
        let format = AudioStreamBasicDescription.linearPCM(sampleRate: setup.rate, channels: UInt32(setup.channels), bitsPerChannel: 32, isFloat: true)
        let device = Mutex<HandDrivenDevice?>(nil)
        let queue = try AudioOutputQueue(format: format, output: { f throws(AudioError) in
            let d = HandDrivenDevice(format: f, framesPerRender: setup.request)
            device.withLock { $0 = d }
            return d
        }) { _, _ in }
        defer { queue.dispose(immediately: true) }
        // Half a second of a ramp (frame i of channel 0 is i / frames), enqueued in 0.1 s buffers.
        let frames = Int(setup.rate / 2)
        let perBuffer = Int(setup.rate / 10)
        var i = 0
        while i < frames {
            let n = min(perBuffer, frames - i)
            let buffer = try queue.allocateBuffer(byteCapacity: n * setup.channels * 4)
            var samples = [Float](repeating: 0, count: n * setup.channels)
            for k in 0..<n { samples[k * setup.channels] = Float(i + k) / Float(frames) }
            _ = samples.withUnsafeBytes { buffer.fill($0) }
            try queue.enqueue(buffer)
            i += n
        }
        _ = try queue.prime(frames: frames)
        try queue.start()
        let d = try #require(device.withLock { $0 })
        let (result, samples) = try #require(d.render(setup.request))
        #expect(result.frames == setup.request, "a \(setup.request)-frame request got \(result.frames) frames")
        #expect(!result.isEndOfStream)
        let wrong = (0..<setup.request).filter { samples[$0] != Float($0) / Float(frames) }
        #expect(wrong.isEmpty, "\(wrong.count) frames differ from the ramp, the first at \(wrong.first ?? -1)")
        #expect(queue.underrunCount == 0)
    }
}
