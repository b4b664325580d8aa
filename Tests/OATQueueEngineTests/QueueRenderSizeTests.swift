import OATDevices
import OATFiles
import OATQueueEngine
import OATTestSupport
import Synchronization
import Testing

/// The play ring serves what the device asks for, in time and not in a fixed frame count: a
/// render call of any size is filled from the ring while it holds the audio.
@Suite struct QueueRenderSizeTests {
    @Test(arguments: [(96000.0, 1, 9600), (192000.0, 1, 19200), (192000.0, 2, 19200), (44100.0, 8, 11025)])
    func aRenderOfAnySizeIsServedWhole(_ setup: (rate: Double, channels: Int, request: Int)) throws {
        let format = AudioStreamBasicDescription.linearPCM(sampleRate: setup.rate, channels: UInt32(setup.channels), bitsPerChannel: 32, isFloat: true)
        let device = Locked<HandDrivenOutputDevice?>(nil)
        let queue = try AudioOutputQueue(format: format, output: { f throws(AudioError) in
            let d = HandDrivenOutputDevice(format: f, framesPerRender: setup.request)
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
        let (result, planes) = try #require(d.render(setup.request, fill: .nan))
        let samples = planes[0]
        #expect(result.frames == setup.request, "a \(setup.request)-frame request got \(result.frames) frames")
        #expect(!result.isEndOfStream)
        let wrong = (0..<setup.request).filter { samples[$0] != Float($0) / Float(frames) }
        #expect(wrong.isEmpty, "\(wrong.count) frames differ from the ramp, the first at \(wrong.first ?? -1)")
        #expect(queue.underrunCount == 0)
    }
}
