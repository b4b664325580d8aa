// AudioFile writing through the C-style API, as macOS code does it.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct AudioFileWriteCompatTests {
    private func tempPath(_ ext: String) -> String {
        "/tmp/oat-afwrite-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).\(ext)"
    }

    private func url(_ path: String) -> CFURL {
        let bytes = Array(path.utf8)
        return CFURLCreateFromFileSystemRepresentation(nil, bytes, bytes.count, false)!
    }

    /// 16-bit big-endian AIFF written packet by packet, properties read while writing, closed and
    /// read back through AudioFileOpenURL with the same samples.
    @Test func createWriteCloseAndReadBack() throws {
        let path = tempPath("aiff")
        defer { unlink(path) }
        var format = AudioStreamBasicDescription(mSampleRate: 22050, mFormatID: kAudioFormatLinearPCM,
                                                 mFormatFlags: kLinearPCMFormatFlagIsBigEndian | kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                                 mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2,
                                                 mBitsPerChannel: 16, mReserved: 0)
        var file: AudioFileID?
        #expect(AudioFileCreateWithURL(url(path), kAudioFileAIFFType, &format, .eraseFile, &file) == noErr)
        let f = try #require(file)
        var samples = [Int16](repeating: 0, count: 2000)
        for i in samples.indices { samples[i] = Int16(truncatingIfNeeded: i * 37 - 20000) }
        // AIFF is big-endian: swap as a macOS program would.
        let bigEndian = samples.map { $0.bigEndian }
        var packet: Int64 = 0
        for chunk in stride(from: 0, to: 1000, by: 250) {
            var n: UInt32 = 250
            let status = bigEndian.withUnsafeBytes { raw in
                AudioFileWritePackets(f, false, 1000, nil, packet, &n, raw.baseAddress! + chunk * 4)
            }
            #expect(status == noErr && n == 250)
            packet += Int64(n)
        }
        var count: UInt64 = 0
        var size = UInt32(8)
        #expect(AudioFileGetProperty(f, kAudioFilePropertyAudioDataPacketCount, &size, &count) == noErr && count == 1000)
        var type: UInt32 = 0
        size = 4
        #expect(AudioFileGetProperty(f, kAudioFilePropertyFileFormat, &size, &type) == noErr && type == kAudioFileAIFFType)
        #expect(AudioFileClose(f) == noErr)

        var readFile: AudioFileID?
        #expect(AudioFileOpenURL(url(path), .readPermission, 0, &readFile) == noErr)
        let r = try #require(readFile)
        defer { AudioFileClose(r) }
        var back = [Int16](repeating: 0, count: 2000)
        var bytes: UInt32 = 4000
        var packets: UInt32 = 1000
        let status = back.withUnsafeMutableBytes { raw in AudioFileReadPacketData(r, false, &bytes, nil, 0, &packets, raw.baseAddress!) }
        #expect(status == noErr && packets == 1000)
        #expect(back.map { Int16(bigEndian: $0) } == samples)
        // A file opened for reading is not writable.
        var one: UInt32 = 1
        #expect(AudioFileWritePackets(r, false, 4, nil, 0, &one, samples) == kAudioFilePermissionsError)
    }

    @Test func formatsAContainerCannotHoldAreRefused() {
        let path = tempPath("wav")
        defer { unlink(path) }
        var aac = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatMPEG4AAC, mFormatFlags: 0, mBytesPerPacket: 0,
                                              mFramesPerPacket: 1024, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        var file: AudioFileID?
        #expect(AudioFileCreateWithURL(url(path), kAudioFileWAVEType, &aac, .eraseFile, &file) == kAudioFileUnsupportedDataFormatError)
        #expect(file == nil)
        #expect(AudioFileCreateWithURL(url("/nonexistent-dir/x.caf"), kAudioFileCAFType, &aac, .eraseFile, &file) != noErr)
        var size: UInt32 = 0
        #expect(AudioFileGetGlobalInfoSize(kAudioFileGlobalInfo_WritableTypes, 0, nil, &size) == noErr && size >= 9 * 4)
    }
}
