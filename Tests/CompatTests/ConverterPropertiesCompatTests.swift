// AudioConverter encoder capability properties, the channel map and planar
// AudioConverterConvertComplexBuffer through the C API, as macOS code calls them.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing
#if canImport(Glibc)
import Glibc
#endif

private func pcm(_ rate: Float64, channels: UInt32, float: Bool, planar: Bool) -> AudioStreamBasicDescription {
    let width: UInt32 = float ? 4 : 2
    let flags = (float ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger) | kAudioFormatFlagIsPacked | (planar ? kAudioFormatFlagIsNonInterleaved : 0)
    let frameBytes = planar ? width : width * channels
    return AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: flags, mBytesPerPacket: frameBytes,
                                       mFramesPerPacket: 1, mBytesPerFrame: frameBytes, mChannelsPerFrame: channels, mBitsPerChannel: width * 8, mReserved: 0)
}

/// Reads an array property of `AudioValueRange`s the way macOS code does.
private func valueRanges(_ converter: AudioConverterRef, _ id: AudioConverterPropertyID) -> (OSStatus, [AudioValueRange]) {
    var size: UInt32 = 0
    var writable: DarwinBoolean = false
    let info = AudioConverterGetPropertyInfo(converter, id, &size, &writable)
    guard info == noErr else { return (info, []) }
    var ranges = [AudioValueRange](repeating: AudioValueRange(), count: Int(size) / MemoryLayout<AudioValueRange>.size)
    let status = AudioConverterGetProperty(converter, id, &size, &ranges)
    return (status, Array(ranges.prefix(Int(size) / MemoryLayout<AudioValueRange>.size)))
}

@Suite struct ConverterPropertiesCompatTests {
    /// AAC encoders list bit rates for their channel count and rate; the highest applicable rate
    /// not above 96 kb/s can be set and reads back; mono 8 kHz allows far less than stereo
    /// 44.1 kHz; a decoder has no encode bit rates.
    @Test func encodeBitRatesAndSampleRates() throws {
        var input = pcm(44100, channels: 2, float: true, planar: false)
        var aac = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatMPEG4AAC, mFormatFlags: 0, mBytesPerPacket: 0,
                                              mFramesPerPacket: 1024, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        var ref: AudioConverterRef?
        #expect(AudioConverterNew(&input, &aac, &ref) == noErr)
        let converter = try #require(ref)
        defer { AudioConverterDispose(converter) }
        let (status, applicable) = valueRanges(converter, kAudioConverterApplicableEncodeBitRates)
        #expect(status == noErr && applicable.contains { $0.mMinimum <= 128000 && 128000 <= $0.mMaximum })
        #expect(applicable.allSatisfy { $0.mMaximum <= 6 * 44100 * 2 })
        let (_, available) = valueRanges(converter, kAudioConverterAvailableEncodeBitRates)
        #expect(available.count >= applicable.count)
        let chosen = applicable.map(\.mMaximum).filter { $0 <= 96000 }.max() ?? 0
        #expect(chosen == 96000)
        var bitRate = UInt32(chosen)
        #expect(AudioConverterSetProperty(converter, kAudioConverterEncodeBitRate, 4, &bitRate) == noErr)
        var readBack: UInt32 = 0
        var size: UInt32 = 4
        #expect(AudioConverterGetProperty(converter, kAudioConverterEncodeBitRate, &size, &readBack) == noErr && readBack == 96000)
        let (rateStatus, rates) = valueRanges(converter, kAudioConverterApplicableEncodeSampleRates)
        #expect(rateStatus == noErr && rates.contains { $0.mMinimum == 44100 } && rates.contains { $0.mMinimum == 48000 })
        #expect(valueRanges(converter, kAudioConverterAvailableEncodeSampleRates).1.count == rates.count)

        var monoInput = pcm(8000, channels: 1, float: false, planar: false)
        var monoAAC = aac
        monoAAC.mSampleRate = 8000
        monoAAC.mChannelsPerFrame = 1
        var monoRef: AudioConverterRef?
        #expect(AudioConverterNew(&monoInput, &monoAAC, &monoRef) == noErr)
        let mono = try #require(monoRef)
        defer { AudioConverterDispose(mono) }
        let (_, monoRates) = valueRanges(mono, kAudioConverterApplicableEncodeBitRates)
        #expect(!monoRates.isEmpty && monoRates.allSatisfy { $0.mMaximum <= 48000 })

        var decoderRef: AudioConverterRef?
        var float = pcm(44100, channels: 2, float: true, planar: false)
        #expect(AudioConverterNew(&aac, &float, &decoderRef) == noErr)
        let decoder = try #require(decoderRef)
        defer { AudioConverterDispose(decoder) }
        #expect(valueRanges(decoder, kAudioConverterApplicableEncodeBitRates).0 == kAudioConverterErr_PropertyNotSupported)
    }

    /// Interleaved Int16 to planar Float32 with the channels swapped by the channel map; then
    /// planar Float32 back to interleaved Int16: the samples survive exactly.
    @Test func channelMapAndPlanarConvertComplexBuffer() throws {
        var int16 = pcm(44100, channels: 2, float: false, planar: false)
        var planar = pcm(44100, channels: 2, float: true, planar: true)
        var ref: AudioConverterRef?
        #expect(AudioConverterNew(&int16, &planar, &ref) == noErr)
        let converter = try #require(ref)
        defer { AudioConverterDispose(converter) }
        var map: [Int32] = [1, 0]
        #expect(AudioConverterSetProperty(converter, kAudioConverterChannelMap, 8, &map) == noErr)
        var readMap: [Int32] = [0, 0]
        var size: UInt32 = 8
        #expect(AudioConverterGetProperty(converter, kAudioConverterChannelMap, &size, &readMap) == noErr && readMap == [1, 0])
        var bad: [Int32] = [0, 5]
        #expect(AudioConverterSetProperty(converter, kAudioConverterChannelMap, 8, &bad) != noErr)

        let frames = 1000
        var samples = [Int16](repeating: 0, count: frames * 2)
        for f in 0..<frames { samples[2 * f] = Int16(f * 20 - 10000); samples[2 * f + 1] = Int16(-f * 13) }
        var left = [Float](repeating: 0, count: frames), right = [Float](repeating: 0, count: frames)
        let outList = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(outList.unsafeMutablePointer) }
        let status = samples.withUnsafeMutableBytes { i in
            left.withUnsafeMutableBytes { l in
                right.withUnsafeMutableBytes { r -> OSStatus in
                    var inList = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(i.count), mData: i.baseAddress))
                    outList[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(l.count), mData: l.baseAddress)
                    outList[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(r.count), mData: r.baseAddress)
                    return AudioConverterConvertComplexBuffer(converter, UInt32(frames), &inList, outList.unsafeMutablePointer)
                }
            }
        }
        #expect(status == noErr && outList[0].mDataByteSize == UInt32(frames * 4))
        var swapped = true
        for f in 0..<frames {
            let l: Float = Float(samples[2 * f + 1]) / 32768
            let r: Float = Float(samples[2 * f]) / 32768
            if left[f] != l || right[f] != r { swapped = false }
        }
        #expect(swapped)

        var back: AudioConverterRef?
        #expect(AudioConverterNew(&planar, &int16, &back) == noErr)
        let reverse = try #require(back)
        defer { AudioConverterDispose(reverse) }
        var restored = [Int16](repeating: 0, count: frames * 2)
        let inList = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(inList.unsafeMutablePointer) }
        let status2 = left.withUnsafeMutableBytes { l in
            right.withUnsafeMutableBytes { r in
                restored.withUnsafeMutableBytes { o -> OSStatus in
                    inList[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(l.count), mData: l.baseAddress)
                    inList[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(r.count), mData: r.baseAddress)
                    var out = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(o.count), mData: o.baseAddress))
                    return AudioConverterConvertComplexBuffer(reverse, UInt32(frames), inList.unsafePointer, &out)
                }
            }
        }
        #expect(status2 == noErr)
        var exact = true
        for f in 0..<frames where restored[2 * f] != samples[2 * f + 1] || restored[2 * f + 1] != samples[2 * f] { exact = false }
        #expect(exact)
    }
}
