import OATConversion
import OATCore
import Testing

/// An input that fails after part of a fill was decoded: Apple's converter returns the error
/// with what it produced so far. Here the frames decoded straight into the caller's buffer (the
/// direct path: Float32 at the source's shape with a known valid length) were lost with the
/// throw, so `AudioConverterFillComplexBuffer`, which reads the converter's FIFO after an input
/// error, reported 0 packets and the next fill went on past them.
@Suite struct FillErrorAfterPartialDecodeTests {
    static let format = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 32, isFloat: true)

    /// `frames` interleaved stereo frames: left i, right -i (scaled), so every sample is known.
    static func batch(from first: Int, frames: Int) -> AudioPacketBatch {
        var samples = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            samples[2 * i] = Float(first + i) / 65536
            samples[2 * i + 1] = -Float(first + i) / 65536
        }
        let bytes = samples.withUnsafeBytes { Array($0) }
        return AudioPacketBatch(data: bytes, packetCount: frames)
    }

    @Test("A failing input after a partial direct decode keeps the decoded frames, in order, for the caller")
    func framesDecodedBeforeTheErrorAreKept() throws {
        let converter = try AudioConverter(from: Self.format, to: Self.format)
        // A known valid length: the converter decodes straight into the caller's buffer.
        converter.limitRemainingFrames(1_000_000)
        let buffer = try AudioPCMBuffer(format: Self.format, frameCapacity: 4096)
        var calls = 0
        let failure = AudioError(.io, component: "test", "the source failed", osStatus: -36)
        var caught: AudioError?
        do {
            _ = try converter.fillComplexBuffer(buffer, maxFrames: 4096) { (_: Int) throws(AudioError) -> AudioPacketBatch? in
                calls += 1
                if calls == 1 { return Self.batch(from: 0, frames: 1000) }
                if calls == 2 { return Self.batch(from: 1000, frames: 500) }
                throw failure
            }
        } catch {
            caught = error
        }
        #expect(caught?.osStatus == -36, "the input's error comes back: \(String(describing: caught))")
        // What was converted before the error is there to deliver (AudioConverterFillComplexBuffer
        // reads it into the caller's buffer with the error).
        let out = try AudioPCMBuffer(format: Self.format, frameCapacity: 4096)
        let n = converter.read(into: out, maxFrames: 4096)
        #expect(n == 1500, "\(n) frames delivered of the 1500 decoded before the error")
        let samples = out.floatChannel(0)!
        var wrong = 0
        for i in 0..<min(n, 1500) where samples[2 * i] != Float(i) / 65536 || samples[2 * i + 1] != -Float(i) / 65536 { wrong += 1 }
        #expect(wrong == 0, "\(wrong) frames differ from the input")
        // The next fill goes on after them.
        let next = try converter.fillComplexBuffer(buffer, maxFrames: 100) { (_: Int) throws(AudioError) -> AudioPacketBatch? in
            Self.batch(from: 1500, frames: 100)
        }
        #expect(next == 100 && buffer.floatChannel(0)![0] == Float(1500) / 65536, "the fill after the error starts at frame 1500")
    }
}
