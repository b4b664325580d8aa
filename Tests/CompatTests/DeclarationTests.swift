#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing

extension CompatSeedTests {
    @Test("C layouts and Apple's constant values")
    func layoutsAndConstants() {
        #expect(MemoryLayout<AudioStreamBasicDescription>.size == 40)
        #expect(MemoryLayout<AudioStreamPacketDescription>.size == 16)
        #expect(MemoryLayout<AudioFilePacketTableInfo>.size == 16)
        #expect(MemoryLayout<AudioFormatListItem>.stride == 48)
        #expect(MemoryLayout<AudioBuffer>.size == 16)
        #expect(MemoryLayout<AudioBufferList>.size == 24)
        #expect(MemoryLayout<AudioChannelDescription>.size == 20)
        #expect(kAudioFormatLinearPCM == 0x6C70_636D)
        #expect(kAudioFormatMPEG4AAC == 0x6161_6320)
        #expect(kAudioFileStreamError_UnsupportedFileType == 0x7479_703F)
        #expect(kAudioQueueErr_InvalidBuffer == -66687)
        #expect(kAudioQueueProperty_IsRunning == 0x6171_726E)
        #expect(kAudioFileMP3Type == 0x4D50_4733)
        #expect(kAudioFormatFlagsNativeFloatPacked == 9)
        var asbd = AudioStreamBasicDescription()
        asbd.mFormatID = kAudioFormatAppleLossless
        asbd.mFormatFlags = kAppleLosslessFormatFlag_16BitSourceData
        #expect(asbd.mFormatID == 0x616C_6163 && asbd.mFormatFlags == 1)
        var types = [AudioFileTypeID](repeating: 0, count: 32)
        var size: UInt32 = 0
        #expect(AudioFileGetGlobalInfoSize(kAudioFileGlobalInfo_ReadableTypes, 0, nil, &size) == noErr)
        size = UInt32(types.count * 4)
        #expect(AudioFileGetGlobalInfo(kAudioFileGlobalInfo_ReadableTypes, 0, nil, &size, &types) == noErr)
        #expect(types.prefix(Int(size) / 4).contains(kAudioFileCAFType))
    }
}
