// AudioFileStream and AudioFile packet dependency properties through the C API, as macOS code
// calls them (only the import differs).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing

private func ignoreProperty(_: UnsafeMutableRawPointer, _: AudioFileStreamID, _: AudioFileStreamPropertyID,
                            _: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {}
private func ignorePackets(_: UnsafeMutableRawPointer, _: UInt32, _: UInt32, _: UnsafeRawPointer,
                           _: UnsafeMutablePointer<AudioStreamPacketDescription>?) {}

@Suite struct PacketDependencyCompatTests {
    /// An MP3 stream: packet 10 needs 2 packets of pre-roll, packet 0 none; the neighbouring
    /// independent packets are 9 and 11; the dependency info says independent with pre-roll 2.
    @Test func streamRollDistanceAndIndependentPackets() throws {
        guard let path = corpusFile("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3") else { print(corpusAbsent); return }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        var streamID: AudioFileStreamID?
        #expect(AudioFileStreamOpen(nil, ignoreProperty, ignorePackets, kAudioFileMP3Type, &streamID) == noErr)
        let stream = try #require(streamID)
        defer { AudioFileStreamClose(stream) }
        var roll = AudioPacketRollDistanceTranslation(mPacket: 10, mRollDistance: -1)
        var size = UInt32(MemoryLayout<AudioPacketRollDistanceTranslation>.size)
        // Before the format is known the value is unknown.
        #expect(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PacketToRollDistance, &size, &roll) == kAudioFileStreamError_ValueUnknown)
        let status = bytes.withUnsafeBytes { AudioFileStreamParseBytes(stream, UInt32($0.count), $0.baseAddress, []) }
        #expect(status == noErr)
        #expect(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PacketToRollDistance, &size, &roll) == noErr)
        #expect(roll.mPacket == 10 && roll.mRollDistance == 2)
        roll = AudioPacketRollDistanceTranslation(mPacket: 0, mRollDistance: -1)
        #expect(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PacketToRollDistance, &size, &roll) == noErr && roll.mRollDistance == 0)

        var independent = AudioIndependentPacketTranslation(mPacket: 10, mIndependentlyDecodablePacket: -1)
        size = UInt32(MemoryLayout<AudioIndependentPacketTranslation>.size)
        #expect(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PreviousIndependentPacket, &size, &independent) == noErr)
        #expect(independent.mIndependentlyDecodablePacket == 9)
        #expect(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_NextIndependentPacket, &size, &independent) == noErr)
        #expect(independent.mIndependentlyDecodablePacket == 11)
        independent.mPacket = 0
        #expect(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PreviousIndependentPacket, &size, &independent) == kAudioFileStreamError_InvalidPacketOffset)

        var info = AudioPacketDependencyInfoTranslation(mPacket: 10, mIsIndependentlyDecodable: 0, mNumberPrerollPackets: 0)
        size = UInt32(MemoryLayout<AudioPacketDependencyInfoTranslation>.size)
        #expect(size == 16)
        #expect(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_PacketToDependencyInfo, &size, &info) == noErr)
        #expect(info.mIsIndependentlyDecodable == 1 && info.mNumberPrerollPackets == 2)
        var infoSize: UInt32 = 0
        var writable: DarwinBoolean = true
        #expect(AudioFileStreamGetPropertyInfo(stream, kAudioFileStreamProperty_PacketToDependencyInfo, &infoSize, &writable) == noErr)
        #expect(infoSize == 16 && !writable.boolValue)
    }

    /// The same properties on an AudioFile: PCM needs no pre-roll; the last packet has no next.
    @Test func fileRollDistance() throws {
        guard let path = corpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav") else { print(corpusAbsent); return }
        var id: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &id) == noErr)
        let file = try #require(id)
        defer { AudioFileClose(file) }
        var roll = AudioPacketRollDistanceTranslation(mPacket: 1000, mRollDistance: -1)
        var size = UInt32(MemoryLayout<AudioPacketRollDistanceTranslation>.size)
        #expect(AudioFileGetProperty(file, kAudioFilePropertyPacketToRollDistance, &size, &roll) == noErr && roll.mRollDistance == 0)
        var next = AudioIndependentPacketTranslation(mPacket: 132_299, mIndependentlyDecodablePacket: 0)
        size = UInt32(MemoryLayout<AudioIndependentPacketTranslation>.size)
        #expect(AudioFileGetProperty(file, kAudioFilePropertyNextIndependentPacket, &size, &next) == kAudioFileInvalidPacketOffsetError)
        #expect(kAudioFileStreamProperty_PacketToRollDistance == 0x706B_726C && kAudioFileStreamProperty_PreviousIndependentPacket == 0x7069_6E64)
        #expect(kAudioFileStreamProperty_NextIndependentPacket == 0x6E69_6E64 && kAudioFileStreamProperty_PacketToDependencyInfo == 0x706B_6470)
    }
}
