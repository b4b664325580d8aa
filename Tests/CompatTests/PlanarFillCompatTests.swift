import Foundation
import OpenAudioToolbox
import Testing

/// `AudioConverterFillComplexBuffer` from deinterleaved PCM (one buffer per channel), the
/// standard float format of Apple's render code, with a sample-rate change: Apple converts it;
/// here it failed with 'fmt?' because the decode path took the first buffer only.
@Suite struct PlanarFillCompatTests {
    final class Source {
        let left: [Float], right: [Float]
        var offset = 0
        var scratch: [[Float]] = [[], []]
        init(frames: Int) {
            left = (0..<frames).map { Float(0.5 * sin(2 * Double.pi * 440 * Double($0) / 44100)) }
            right = (0..<frames).map { Float(0.25 * sin(2 * Double.pi * 1000 * Double($0) / 44100)) }
        }
    }

    @Test func deinterleavedFloatResampledToInterleavedInt16() throws {
        var src = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                              mFormatFlags: kAudioFormatFlagsNativeFloatPacked | kAudioFormatFlagIsNonInterleaved,
                                              mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 32, mReserved: 0)
        var dst = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM,
                                              mFormatFlags: kAudioFormatFlagIsSignedInteger | kAudioFormatFlagIsPacked,
                                              mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
        var converter: AudioConverterRef?
        #expect(AudioConverterNew(&src, &dst, &converter) == noErr)
        let ref = try #require(converter)
        defer { AudioConverterDispose(ref) }
        let source = Source(frames: 44100)
        let box = Unmanaged.passRetained(source)
        defer { box.release() }
        var out = [Int16](repeating: 0, count: 4096 * 2)
        var produced: [Int16] = []
        while true {
            var packets: UInt32 = 4096
            let status = out.withUnsafeMutableBytes { raw -> OSStatus in
                var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
                let s = AudioConverterFillComplexBuffer(ref, { _, ioPackets, ioData, _, user in
                    let source = Unmanaged<Source>.fromOpaque(user!).takeUnretainedValue()
                    let n = min(Int(ioPackets.pointee), 1000, source.left.count - source.offset)
                    ioPackets.pointee = UInt32(n)
                    guard n > 0 else { return noErr }
                    source.scratch = [Array(source.left[source.offset..<(source.offset + n)]), Array(source.right[source.offset..<(source.offset + n)])]
                    source.offset += n
                    let buffers = UnsafeMutableAudioBufferListPointer(ioData)
                    for c in 0..<2 {
                        source.scratch[c].withUnsafeMutableBytes { b in
                            buffers[c] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(b.count), mData: b.baseAddress)
                        }
                    }
                    return noErr
                }, box.toOpaque(), &packets, &list, nil)
                return s
            }
            #expect(status == noErr)
            if status != noErr || packets == 0 { break }
            produced += out.prefix(Int(packets) * 2)
        }
        #expect(abs(produced.count / 2 - 48000) <= 2, "\(produced.count / 2) frames for 48000")
        // Each channel keeps its own tone: the left 440 Hz at 0.5, the right 1 kHz at 0.25.
        func amplitude(_ channel: Int, _ freq: Double) -> Double {
            var re = 0.0, im = 0.0
            let n = 48000 / 40 * 30 // whole periods of both tones
            for i in 0..<n {
                let v = Double(produced[(4800 + i) * 2 + channel]) / 32768
                re += v * cos(2 * .pi * freq * Double(i) / 48000)
                im += v * sin(2 * .pi * freq * Double(i) / 48000)
            }
            return 2 * (re * re + im * im).squareRoot() / Double(n)
        }
        #expect(abs(amplitude(0, 440) - 0.5) < 0.01 && amplitude(0, 1000) < 0.01, "left: \(amplitude(0, 440)), \(amplitude(0, 1000))")
        #expect(abs(amplitude(1, 1000) - 0.25) < 0.01 && amplitude(1, 440) < 0.01, "right: \(amplitude(1, 1000)), \(amplitude(1, 440))")
    }
}
