// The AudioConverter resampler, dither, bit-rate control mode and encoder layout properties
// through the C API, as macOS code sets them: each changes what the converter does.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
import Foundation
import Testing

private final class MonoSource {
    let samples: UnsafeMutablePointer<Float>
    let count: Int
    var position = 0
    init(_ values: [Float]) {
        count = values.count
        samples = .allocate(capacity: max(1, values.count))
        samples.initialize(from: values, count: values.count)
    }
    deinit { samples.deallocate() }
}

private func monoInputProc(_ inAudioConverter: AudioConverterRef, _ ioNumberDataPackets: UnsafeMutablePointer<UInt32>,
                           _ ioData: UnsafeMutablePointer<AudioBufferList>,
                           _ outDataPacketDescription: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                           _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    let source = Unmanaged<MonoSource>.fromOpaque(inUserData!).takeUnretainedValue()
    let n = min(Int(ioNumberDataPackets.pointee), source.count - source.position)
    ioData.pointee.mNumberBuffers = 1
    ioData.pointee.mBuffers.mNumberChannels = 1
    ioData.pointee.mBuffers.mData = n > 0 ? UnsafeMutableRawPointer(source.samples + source.position) : nil
    ioData.pointee.mBuffers.mDataByteSize = UInt32(n * 4)
    ioNumberDataPackets.pointee = UInt32(n)
    source.position += n
    return noErr
}

private func monoFloat(_ rate: Float64) -> AudioStreamBasicDescription {
    AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
                                mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 1, mBitsPerChannel: 32, mReserved: 0)
}

/// 1 s of a 23 kHz tone at 48 kHz resampled to 44.1 kHz with `complexity`: the level of its
/// alias at 21.1 kHz, in dB against the tone.
private func aliasLevel(complexity: UInt32) throws -> Double {
    var src = monoFloat(48000), dst = monoFloat(44100)
    var ref: AudioConverterRef?
    try #require(AudioConverterNew(&src, &dst, &ref) == noErr)
    let converter = try #require(ref)
    defer { AudioConverterDispose(converter) }
    var value = complexity
    try #require(AudioConverterSetProperty(converter, kAudioConverterSampleRateConverterComplexity, 4, &value) == noErr)
    var readBack: UInt32 = 0
    var size: UInt32 = 4
    #expect(AudioConverterGetProperty(converter, kAudioConverterSampleRateConverterComplexity, &size, &readBack) == noErr && readBack == complexity)
    let tone: [Float] = (0..<48000).map { i in Float(0.5 * sin(2 * Double.pi * 23000 * Double(i) / 48000)) }
    let source = MonoSource(tone)
    var out: [Float] = []
    var chunk = [Float](repeating: 0, count: 1024)
    while true {
        var frames: UInt32 = 1024
        let status = chunk.withUnsafeMutableBytes { raw -> OSStatus in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
            return AudioConverterFillComplexBuffer(converter, monoInputProc, Unmanaged.passUnretained(source).toOpaque(), &frames, &list, nil)
        }
        try #require(status == noErr)
        if frames == 0 { break }
        out += chunk[0..<Int(frames)]
    }
    return 20 * log10(max(1e-9, toneAmplitude(out, freq: 21100, rate: 44100, from: 4410, count: 35280) / 0.5))
}

@Suite struct ConverterResamplerCompatTests {
    @Test func complexityChangesTheAliasRejection() throws {
        let linear = try aliasLevel(complexity: kAudioConverterSampleRateConverterComplexity_Linear)
        let normal = try aliasLevel(complexity: kAudioConverterSampleRateConverterComplexity_Normal)
        let mastering = try aliasLevel(complexity: kAudioConverterSampleRateConverterComplexity_Mastering)
        print("C API alias of 23 kHz at 44.1 kHz (dB): linear \(linear), normal \(normal), mastering \(mastering)")
        #expect(linear > normal + 3, "linear lets more through: \(linear) vs \(normal) dB")
        #expect(mastering < normal - 60, "mastering rejects far more: \(mastering) vs \(normal) dB")
    }

    @Test func unknownValuesAreRefusedAndTheEncoderPropertiesAnswerOnlyForEncoders() throws {
        var src = monoFloat(48000), dst = monoFloat(44100)
        var ref: AudioConverterRef?
        try #require(AudioConverterNew(&src, &dst, &ref) == noErr)
        let converter = try #require(ref)
        defer { AudioConverterDispose(converter) }
        var bad: UInt32 = 0x1234
        #expect(AudioConverterSetProperty(converter, kAudioConverterSampleRateConverterComplexity, 4, &bad) == kAudio_ParamError)
        #expect(AudioConverterSetProperty(converter, kAudioConverterPropertyDithering, 4, &bad) == kAudio_ParamError)
        var tpdf = kDitherAlgorithm_TPDF
        #expect(AudioConverterSetProperty(converter, kAudioConverterPropertyDithering, 4, &tpdf) == noErr)
        var size: UInt32 = 4
        var value: UInt32 = 0
        #expect(AudioConverterGetProperty(converter, kAudioConverterPropertyDithering, &size, &value) == noErr && value == kDitherAlgorithm_TPDF)
        var writable: DarwinBoolean = false
        #expect(AudioConverterGetPropertyInfo(converter, kAudioConverterPropertyDithering, &size, &writable) == noErr && writable.boolValue)
        var mode = kAudioCodecBitRateControlMode_Variable
        #expect(AudioConverterSetProperty(converter, kAudioCodecPropertyBitRateControlMode, 4, &mode) == kAudioConverterErr_PropertyNotSupported,
                "a PCM converter has no encoder")
        #expect(AudioConverterGetPropertyInfo(converter, kAudioConverterAvailableEncodeChannelLayoutTags, &size, nil) == kAudioConverterErr_PropertyNotSupported)

        var input = monoFloat(44100)
        var aac = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatMPEG4AAC, mFormatFlags: 0, mBytesPerPacket: 0,
                                              mFramesPerPacket: 1024, mBytesPerFrame: 0, mChannelsPerFrame: 1, mBitsPerChannel: 0, mReserved: 0)
        var encoderRef: AudioConverterRef?
        try #require(AudioConverterNew(&input, &aac, &encoderRef) == noErr)
        let encoder = try #require(encoderRef)
        defer { AudioConverterDispose(encoder) }
        #expect(AudioConverterGetProperty(encoder, kAudioCodecPropertyBitRateControlMode, &size, &value) == noErr && value == kAudioCodecBitRateControlMode_Constant)
        #expect(AudioConverterSetProperty(encoder, kAudioCodecPropertyBitRateControlMode, 4, &mode) == noErr)
        #expect(AudioConverterGetProperty(encoder, kAudioCodecPropertyBitRateControlMode, &size, &value) == noErr && value == kAudioCodecBitRateControlMode_Variable)
        var tagsSize: UInt32 = 0
        #expect(AudioConverterGetPropertyInfo(encoder, kAudioConverterAvailableEncodeChannelLayoutTags, &tagsSize, nil) == noErr)
        var tags = [UInt32](repeating: 0, count: Int(tagsSize) / 4)
        #expect(AudioConverterGetProperty(encoder, kAudioConverterAvailableEncodeChannelLayoutTags, &tagsSize, &tags) == noErr)
        #expect(tags.first == kAudioChannelLayoutTag_Mono && tags.contains(kAudioChannelLayoutTag_Stereo) && tags.count >= 6, "\(tags.map { String($0, radix: 16) })")
    }
}
