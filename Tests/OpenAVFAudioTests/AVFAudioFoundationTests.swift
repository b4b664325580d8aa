import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// AVAudioFormat, AVAudioChannelLayout, AVAudioPCMBuffer, AVAudioCompressedBuffer and AVAudioTime
/// as Apple documents them.
/// `kAudioChannelLayoutTag_MPEG_5_1_A` (L R C LFE Ls Rs).
private let mpeg51A: AudioChannelLayoutTag = (121 << 16) | 6

@Suite struct AVFAudioFoundationTests {
    @Test func standardAndCommonFormats() throws {
        let standard = try #require(AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2))
        #expect(standard.isStandard && !standard.isInterleaved && standard.commonFormat == .pcmFormatFloat32)
        #expect(standard.streamDescription.pointee.mBytesPerFrame == 4)
        #expect(standard.streamDescription.pointee.mFormatFlags & kAudioFormatFlagIsNonInterleaved != 0)
        #expect(standard.channelLayout?.layoutTag == kAudioChannelLayoutTag_Stereo)

        let int16 = try #require(AVAudioFormat(commonFormat: .pcmFormatInt16, sampleRate: 44100, channels: 2, interleaved: true))
        #expect(int16.isInterleaved && !int16.isStandard && int16.commonFormat == .pcmFormatInt16)
        #expect(int16.streamDescription.pointee.mBytesPerFrame == 4 && int16.streamDescription.pointee.mBitsPerChannel == 16)
        #expect(AVAudioFormat(commonFormat: .otherFormat, sampleRate: 44100, channels: 2, interleaved: true) == nil)
        #expect(AVAudioFormat(commonFormat: .pcmFormatFloat32, sampleRate: 44100, channels: 0, interleaved: true) == nil)

        // A mono format is interleaved whatever was asked (one buffer either way), as on Apple.
        let mono = try #require(AVAudioFormat(commonFormat: .pcmFormatFloat32, sampleRate: 8000, channels: 1, interleaved: false))
        #expect(mono.isInterleaved && mono.channelLayout?.layoutTag == kAudioChannelLayoutTag_Mono)

        let layout = try #require(AVAudioChannelLayout(layoutTag: mpeg51A))
        #expect(layout.channelCount == 6)
        let surround = AVAudioFormat(standardFormatWithSampleRate: 48000, channelLayout: layout)
        #expect(surround.channelCount == 6 && surround.channelLayout?.layoutTag == mpeg51A)
        var asbd = surround.streamDescription.pointee
        #expect(AVAudioFormat(streamDescription: &asbd, channelLayout: AVAudioChannelLayout(layoutTag: kAudioChannelLayoutTag_Stereo)) == nil,
                "a layout whose channel count differs is refused")
        #expect(AVAudioChannelLayout(layoutTag: kAudioChannelLayoutTag_UseChannelDescriptions) == nil)

        #expect(standard == AVAudioFormat(standardFormatWithSampleRate: 48000, channels: 2)!)
        #expect(standard != AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2)!)
        #expect(standard != int16)
    }

    @Test func settingsDictionariesRoundTrip() throws {
        let settings: [String: Any] = [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 22050.0, AVNumberOfChannelsKey: 2,
                                       AVLinearPCMBitDepthKey: 24, AVLinearPCMIsFloatKey: false, AVLinearPCMIsBigEndianKey: true,
                                       AVLinearPCMIsNonInterleaved: false]
        let format = try #require(AVAudioFormat(settings: settings))
        let d = format.streamDescription.pointee
        #expect(d.mSampleRate == 22050 && d.mChannelsPerFrame == 2 && d.mBitsPerChannel == 24 && d.mBytesPerFrame == 6)
        #expect(d.mFormatFlags & kAudioFormatFlagIsBigEndian != 0 && d.mFormatFlags & kAudioFormatFlagIsSignedInteger != 0)
        #expect(format.commonFormat == .otherFormat, "24-bit big-endian is no common format")
        let again = try #require(AVAudioFormat(settings: format.settings))
        #expect(again == format)

        let aac = try #require(AVAudioFormat(settings: [AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 44100, AVNumberOfChannelsKey: 2]))
        #expect(aac.streamDescription.pointee.mFormatID == kAudioFormatMPEG4AAC)
        #expect(aac.streamDescription.pointee.mFramesPerPacket == 1024, "the codec's packet shape is filled in")
        #expect(aac.commonFormat == .otherFormat)
        #expect(AVAudioFormat(settings: [AVSampleRateKey: 44100]) == nil)
        #expect(AVAudioFormat(settings: [AVFormatIDKey: Int(kAudioFormatLinearPCM), AVSampleRateKey: 44100, AVNumberOfChannelsKey: 1,
                                         AVLinearPCMBitDepthKey: 12]) == nil)
    }

    @Test func pcmBufferLengthsAndChannelPointers() throws {
        let standard = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2))
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: standard, frameCapacity: 1000))
        #expect(buffer.frameCapacity == 1000 && buffer.frameLength == 0 && buffer.stride == 1)
        let list = UnsafeMutableAudioBufferListPointer(buffer.mutableAudioBufferList)
        #expect(list.count == 2 && list[0].mNumberChannels == 1)
        buffer.frameLength = 500
        #expect(list[0].mDataByteSize == 2000 && list[1].mDataByteSize == 2000)
        buffer.frameLength = 5000
        #expect(buffer.frameLength == 1000, "clamped to the capacity")
        let channels = try #require(buffer.floatChannelData)
        channels[1][999] = 0.5
        #expect(list[1].mData!.assumingMemoryBound(to: Float.self)[999] == 0.5, "the channel pointers are the list's buffers")
        #expect(buffer.int16ChannelData == nil && buffer.int32ChannelData == nil)

        let interleaved = try #require(AVAudioFormat(commonFormat: .pcmFormatInt16, sampleRate: 44100, channels: 2, interleaved: true))
        let b16 = try #require(AVAudioPCMBuffer(pcmFormat: interleaved, frameCapacity: 10))
        #expect(b16.stride == 2 && b16.floatChannelData == nil && b16.int16ChannelData != nil)
        #expect(UnsafeMutableAudioBufferListPointer(b16.mutableAudioBufferList).count == 1)

        let aac = try #require(AVAudioFormat(settings: [AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: 44100, AVNumberOfChannelsKey: 2]))
        #expect(AVAudioPCMBuffer(pcmFormat: aac, frameCapacity: 10) == nil, "not PCM")
        let compressed = AVAudioCompressedBuffer(format: aac, packetCapacity: 8, maximumPacketSize: 1536)
        #expect(compressed.packetCapacity == 8 && compressed.byteCapacity == 8 * 1536 && compressed.packetDescriptions != nil)
        #expect(compressed.byteLength == 0 && compressed.packetCount == 0)
    }

    @Test func timesConvertAndExtrapolate() throws {
        let ticks = AVAudioTime.hostTime(forSeconds: 1.5)
        #expect(abs(AVAudioTime.seconds(forHostTime: ticks) - 1.5) < 1e-9)
        let anchor = AVAudioTime(hostTime: ticks, sampleTime: 1000, atRate: 48000)
        #expect(anchor.isHostTimeValid && anchor.isSampleTimeValid)
        let later = AVAudioTime(hostTime: ticks + AVAudioTime.hostTime(forSeconds: 0.5))
        #expect(!later.isSampleTimeValid)
        let filled = try #require(later.extrapolateTime(fromAnchor: anchor))
        let filledSample: AVAudioFramePosition = filled.sampleTime
        #expect(filledSample == 25000, "\(filled)")
        let sample = AVAudioTime(sampleTime: 1000 + 48000, atRate: 48000)
        #expect(sample.extrapolateTime(fromAnchor: anchor)?.hostTime == ticks + AVAudioTime.hostTime(forSeconds: 1))
        #expect(later.extrapolateTime(fromAnchor: AVAudioTime(hostTime: 1)) == nil, "an anchor without both times cannot help")
    }
}
