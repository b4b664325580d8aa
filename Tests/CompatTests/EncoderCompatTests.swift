// Encoding through AudioConverterNew / AudioConverterFillComplexBuffer, written as on macOS: 16-bit
// stereo PCM pulled by an input proc becomes AAC, ALAC, FLAC or MP3 packets with descriptions;
// the compression cookie, prime info and bit rate come from AudioConverterGetProperty. The packets
// are then decoded by a second converter (the cookie set as its decompression cookie) and compared
// with the input: bit-exact after the priming frames for lossless codecs, by SNR for lossy ones.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class PCMSource {
    let samples: UnsafeMutablePointer<Int16>
    let frames: Int
    var position = 0
    init(frames: Int) {
        self.frames = frames
        samples = .allocate(capacity: frames * 2)
        for f in 0..<frames {
            let t = Double(f) / 44100
            samples[2 * f] = Int16(9000 * sin(2 * .pi * 440 * t) + 3000 * sin(2 * .pi * 3100 * t))
            samples[2 * f + 1] = Int16(8000 * sin(2 * .pi * 660 * t) + 2000 * sin(2 * .pi * 5200 * t))
        }
    }
    deinit { samples.deallocate() }
}

private func PCMInputProc(_ inAudioConverter: AudioConverterRef, _ ioNumberDataPackets: UnsafeMutablePointer<UInt32>,
                          _ ioData: UnsafeMutablePointer<AudioBufferList>,
                          _ outDataPacketDescription: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                          _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    let source = Unmanaged<PCMSource>.fromOpaque(inUserData!).takeUnretainedValue()
    let n = min(Int(ioNumberDataPackets.pointee), source.frames - source.position)
    ioData.pointee.mNumberBuffers = 1
    ioData.pointee.mBuffers.mNumberChannels = 2
    ioData.pointee.mBuffers.mData = n > 0 ? UnsafeMutableRawPointer(source.samples + 2 * source.position) : nil
    ioData.pointee.mBuffers.mDataByteSize = UInt32(n * 4)
    ioNumberDataPackets.pointee = UInt32(n)
    source.position += n
    return noErr
}

final class PacketSource {
    var packets: [[UInt8]] = []
    var frames: [UInt32] = []
    var index = 0
    var current: [UInt8] = []
    var description = AudioStreamPacketDescription()
}

private func PacketInputProc(_ inAudioConverter: AudioConverterRef, _ ioNumberDataPackets: UnsafeMutablePointer<UInt32>,
                             _ ioData: UnsafeMutablePointer<AudioBufferList>,
                             _ outDataPacketDescription: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                             _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    let source = Unmanaged<PacketSource>.fromOpaque(inUserData!).takeUnretainedValue()
    guard source.index < source.packets.count else {
        ioNumberDataPackets.pointee = 0
        return noErr
    }
    source.current = source.packets[source.index]
    ioData.pointee.mNumberBuffers = 1
    ioData.pointee.mBuffers.mData = source.current.withUnsafeMutableBytes { $0.baseAddress }
    ioData.pointee.mBuffers.mDataByteSize = UInt32(source.current.count)
    source.description = AudioStreamPacketDescription(mStartOffset: 0, mVariableFramesInPacket: 0, mDataByteSize: UInt32(source.current.count))
    withUnsafeMutablePointer(to: &source.description) { outDataPacketDescription?.pointee = $0 }
    ioNumberDataPackets.pointee = 1
    source.index += 1
    return noErr
}

@Suite struct EncoderCompatTests {
    static let pcm = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                                 mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                                 mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2,
                                                 mBitsPerChannel: 16, mReserved: 0)

    @Test("AudioConverterNew encodes PCM; the packets decode back to the input",
          arguments: [(kAudioFormatAppleLossless, true), (kAudioFormatFLAC, true), (kAudioFormatMPEG4AAC, false), (kAudioFormatMPEGLayer3, false)])
    func encodeAndDecode(_ formatID: AudioFormatID, _ lossless: Bool) throws {
        var input = Self.pcm
        var output = AudioStreamBasicDescription()
        output.mSampleRate = 44100
        output.mFormatID = formatID
        output.mChannelsPerFrame = 2
        if formatID == kAudioFormatAppleLossless || formatID == kAudioFormatFLAC { output.mFormatFlags = 1 }  // 16-bit source
        var encoder: AudioConverterRef?
        #expect(AudioConverterNew(&input, &output, &encoder) == noErr)
        guard let encoder else { return }
        defer { AudioConverterDispose(encoder) }

        if formatID == kAudioFormatMPEG4AAC {
            var bitRate: UInt32 = 128_000
            #expect(AudioConverterSetProperty(encoder, kAudioConverterEncodeBitRate, 4, &bitRate) == noErr)
        }
        var actual = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioConverterGetProperty(encoder, kAudioConverterCurrentOutputStreamDescription, &size, &actual) == noErr)
        // FLAC packets are variable-length in frames here (as for the FLAC file reader): 0.
        #expect(actual.mFramesPerPacket > 0 || formatID == kAudioFormatFLAC)
        var maxPacket: UInt32 = 0
        size = 4
        #expect(AudioConverterGetProperty(encoder, kAudioConverterPropertyMaximumOutputPacketSize, &size, &maxPacket) == noErr)
        #expect(maxPacket > 0)

        let source = PCMSource(frames: 44100 * 2)
        let packets = PacketSource()
        let capacity = Int(maxPacket) * 16
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        defer { buffer.deallocate() }
        var descriptions = [AudioStreamPacketDescription](repeating: AudioStreamPacketDescription(), count: 16)
        var produced = 0
        while true {
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(capacity), mData: buffer))
            var count: UInt32 = 16
            let status = descriptions.withUnsafeMutableBufferPointer { d in
                AudioConverterFillComplexBuffer(encoder, PCMInputProc, Unmanaged.passUnretained(source).toOpaque(), &count, &list, d.baseAddress)
            }
            #expect(status == noErr)
            if status != noErr || count == 0 { break }
            for i in 0..<Int(count) {
                let d = descriptions[i]
                #expect(Int(d.mStartOffset) + Int(d.mDataByteSize) <= Int(list.mBuffers.mDataByteSize))
                packets.packets.append(Array(UnsafeRawBufferPointer(start: buffer + Int(d.mStartOffset), count: Int(d.mDataByteSize))))
            }
            produced += Int(count)
        }
        #expect(produced > 10)
        var prime = AudioConverterPrimeInfo()
        size = UInt32(MemoryLayout<AudioConverterPrimeInfo>.size)
        #expect(AudioConverterGetProperty(encoder, kAudioConverterPrimeInfo, &size, &prime) == noErr)
        var cookieSize: UInt32 = 0
        _ = AudioConverterGetPropertyInfo(encoder, kAudioConverterCompressionMagicCookie, &cookieSize, nil)
        var cookie = [UInt8](repeating: 0, count: Int(cookieSize))
        if cookieSize > 0 {
            #expect(AudioConverterGetProperty(encoder, kAudioConverterCompressionMagicCookie, &cookieSize, &cookie) == noErr)
        }

        // Decode the packets with a second converter.
        var decoder: AudioConverterRef?
        var pcmOut = Self.pcm
        #expect(AudioConverterNew(&actual, &pcmOut, &decoder) == noErr)
        guard let decoder else { return }
        defer { AudioConverterDispose(decoder) }
        if !cookie.isEmpty {
            #expect(AudioConverterSetProperty(decoder, kAudioConverterDecompressionMagicCookie, UInt32(cookie.count), cookie) == noErr)
        }
        var decoded: [Int16] = []
        var chunk = [Int16](repeating: 0, count: 4096 * 2)
        while true {
            var count: UInt32 = 4096
            let status = chunk.withUnsafeMutableBytes { raw -> OSStatus in
                var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
                return AudioConverterFillComplexBuffer(decoder, PacketInputProc, Unmanaged.passUnretained(packets).toOpaque(), &count, &list, nil)
            }
            #expect(status == noErr)
            if status != noErr || count == 0 { break }
            decoded += chunk[0..<(Int(count) * 2)]
        }
        // Our decoder trims nothing it was not told about: skip the encoder's priming here.
        let skip = Int(prime.leadingFrames)
        let frames = min(source.frames, decoded.count / 2 - skip)
        #expect(frames >= source.frames - 2048, "decoded \(decoded.count / 2) frames, priming \(skip), input \(source.frames)")
        if lossless {
            var mismatches = 0
            for i in 0..<(frames * 2) where decoded[2 * skip + i] != source.samples[i] { mismatches += 1 }
            #expect(mismatches == 0, "\(formatID): \(mismatches) samples differ")
        } else {
            // Best alignment within a few frames of the reported priming (it must be right).
            func snr(lag: Int) -> Double {
                var signal = 0.0, noise = 0.0
                for f in 4096..<(frames - 4096) {
                    let j = f + skip + lag
                    guard j >= 0, j < decoded.count / 2 else { continue }
                    for c in 0..<2 {
                        let s = Double(source.samples[2 * f + c]), d = Double(decoded[2 * j + c])
                        signal += s * s
                        noise += (s - d) * (s - d)
                    }
                }
                return 10 * log10(signal / max(noise, 1e-9))
            }
            var best = (lag: 0, snr: -Double.infinity)
            for lag in -4...4 {
                let v = snr(lag: lag)
                if v > best.snr { best = (lag, v) }
            }
            let snr = best.snr
            print("encode \(formatID): \(produced) packets, priming \(skip), best lag \(best.lag), SNR \(snr) dB")
            #expect(best.lag == 0 && snr > 22, "lag \(best.lag), SNR \(snr) dB (perceptual coders at their default bit rate on two-tone input)")
        }
    }

    @Test("AudioConverterNewSpecific picks the software encoder")
    func newSpecific() {
        var input = Self.pcm
        var output = AudioStreamBasicDescription()
        output.mSampleRate = 44100
        output.mFormatID = kAudioFormatMPEG4AAC
        output.mChannelsPerFrame = 2
        var description = AudioClassDescription(mType: kAudioEncoderComponentType, mSubType: kAudioFormatMPEG4AAC,
                                                mManufacturer: kAppleSoftwareAudioCodecManufacturer)
        var converter: AudioConverterRef?
        #expect(AudioConverterNewSpecific(&input, &output, 1, &description, &converter) == noErr)
        #expect(converter != nil)
        if let converter { AudioConverterDispose(converter) }
    }

    @Test("AudioConverterConvertComplexBuffer: Int16 to Float32 through buffer lists")
    func convertComplexBuffer() {
        var int16 = Self.pcm
        var float32 = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                  mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2, mBitsPerChannel: 32, mReserved: 0)
        var converter: AudioConverterRef?
        #expect(AudioConverterNew(&int16, &float32, &converter) == noErr)
        guard let converter else { return }
        defer { AudioConverterDispose(converter) }
        var samples: [Int16] = (0..<2000).map { Int16(truncatingIfNeeded: $0 * 29 - 29000) }
        var output = [Float](repeating: 0, count: samples.count)
        let status = samples.withUnsafeMutableBytes { i in
            output.withUnsafeMutableBytes { o -> OSStatus in
                var inList = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(i.count), mData: i.baseAddress))
                var outList = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(o.count), mData: o.baseAddress))
                let s = AudioConverterConvertComplexBuffer(converter, 1000, &inList, &outList)
                #expect(outList.mBuffers.mDataByteSize == 8000)
                return s
            }
        }
        #expect(status == noErr)
        let exact = zip(samples, output).allSatisfy { abs(Float($0) / 32768 - $1) < 1e-6 }
        #expect(exact)
    }
}
