// AudioFile callbacks, AudioFileWriteBytes, optimize, user data, markers and global info through
// the C API, as macOS code calls them (only the import differs).
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Audio data in memory behind the callbacks.
final class MemoryData: @unchecked Sendable {
    var bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
}

private func memoryRead(_ client: UnsafeMutableRawPointer, _ position: Int64, _ count: UInt32, _ buffer: UnsafeMutableRawPointer,
                        _ actual: UnsafeMutablePointer<UInt32>) -> OSStatus {
    let data = Unmanaged<MemoryData>.fromOpaque(client).takeUnretainedValue()
    let n = max(0, min(Int(count), data.bytes.count - Int(position)))
    data.bytes.withUnsafeBytes { if n > 0 { buffer.copyMemory(from: $0.baseAddress! + Int(position), byteCount: n) } }
    actual.pointee = UInt32(n)
    return noErr
}

private func memoryWrite(_ client: UnsafeMutableRawPointer, _ position: Int64, _ count: UInt32, _ buffer: UnsafeRawPointer,
                         _ actual: UnsafeMutablePointer<UInt32>) -> OSStatus {
    let data = Unmanaged<MemoryData>.fromOpaque(client).takeUnretainedValue()
    let end = Int(position) + Int(count)
    if data.bytes.count < end { data.bytes += [UInt8](repeating: 0, count: end - data.bytes.count) }
    for i in 0..<Int(count) { data.bytes[Int(position) + i] = buffer.load(fromByteOffset: i, as: UInt8.self) }
    actual.pointee = count
    return noErr
}

private func memorySize(_ client: UnsafeMutableRawPointer) -> Int64 { Int64(Unmanaged<MemoryData>.fromOpaque(client).takeUnretainedValue().bytes.count) }

private func memorySetSize(_ client: UnsafeMutableRawPointer, _ size: Int64) -> OSStatus {
    let data = Unmanaged<MemoryData>.fromOpaque(client).takeUnretainedValue()
    if data.bytes.count > Int(size) { data.bytes.removeLast(data.bytes.count - Int(size)) } else { data.bytes += [UInt8](repeating: 0, count: Int(size) - data.bytes.count) }
    return noErr
}

private func tempPath(_ ext: String) -> String { "/tmp/oat-afx-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).\(ext)" }

private func probe(_ path: String, _ entry: String) -> String? {
    guard let pipe = popen("ffprobe -v error -count_packets -select_streams a:0 -show_entries stream=\(entry) -of csv=p=0 '\(path)' 2>/dev/null", "r") else { return nil }
    defer { pclose(pipe) }
    var line = [CChar](repeating: 0, count: 256)
    guard fgets(&line, 256, pipe) != nil else { return nil }
    return String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// All packets of a file as bytes, through AudioFileReadPacketData.
private func allPacketBytes(_ file: AudioFileID) -> [UInt8] {
    var upper: UInt32 = 0
    var size = UInt32(4)
    AudioFileGetProperty(file, kAudioFilePropertyPacketSizeUpperBound, &size, &upper)
    var out: [UInt8] = []
    var packet: Int64 = 0
    var buffer = [UInt8](repeating: 0, count: Int(upper) * 64)
    while true {
        var bytes = UInt32(buffer.count)
        var packets: UInt32 = 64
        let status = buffer.withUnsafeMutableBytes { AudioFileReadPacketData(file, false, &bytes, nil, packet, &packets, $0.baseAddress) }
        if status != noErr || packets == 0 { break }
        out += buffer[0..<Int(bytes)]
        packet += Int64(packets)
    }
    return out
}

@Suite struct AudioFileExtrasCompatTests {
    /// 16-bit big-endian AIFF written with AudioFileWriteBytes (a partial frame is held back):
    /// ffprobe reads pcm_s16be at 22050 Hz and ffmpeg decodes exactly the samples written.
    @Test func writeBytesMakesAnAIFFFfprobeReads() throws {
        let path = tempPath("aiff")
        defer { unlink(path) }
        var format = AudioStreamBasicDescription(mSampleRate: 22050, mFormatID: kAudioFormatLinearPCM,
                                                 mFormatFlags: kLinearPCMFormatFlagIsBigEndian | kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                                 mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
        var id: AudioFileID?
        #expect(AudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, kAudioFileAIFFType, &format, .eraseFile, &id) == noErr)
        let file = try #require(id)
        let samples: [Int16] = (0..<20000).map { Int16(truncatingIfNeeded: $0 * 13 - 9000) }
        let bigEndian = samples.map { $0.bigEndian }
        var offset: Int64 = 0
        try bigEndian.withUnsafeBytes { raw in
            for chunk in [4000, 16000, 20001] {   // the last one has a partial frame
                var n = UInt32(min(chunk, raw.count - Int(offset)))
                #expect(AudioFileWriteBytes(file, false, offset, &n, raw.baseAddress! + Int(offset)) == noErr)
                #expect(n % 4 == 0)
                offset += Int64(n)
            }
            var n: UInt32 = 4
            #expect(AudioFileWriteBytes(file, false, 0, &n, raw.baseAddress!) == kAudioFilePositionError)
            _ = try #require(Optional(raw.count))
        }
        #expect(offset == 40000)
        #expect(AudioFileOptimize(file) == noErr)
        #expect(AudioFileClose(file) == noErr)
        #expect(probe(path, "codec_name") == "pcm_s16be")
        #expect(probe(path, "sample_rate") == "22050")
        let decoded = try #require(ffmpegFloat(path))
        #expect(decoded.count == 20000)
        var exact = decoded.count == 20000
        for i in 0..<min(decoded.count, 20000) where decoded[i] != Float(samples[i]) / 32768 { exact = false }
        #expect(exact)
    }

    /// A corpus M4A opened through read callbacks gives the same packets as AudioFileOpenURL;
    /// a WAV initialised through write callbacks arrives in memory whole and opens again.
    @Test(.requires(corpusMissing)) func callbacksReadAndWrite() throws {
        let path = try corpusFile("ffmpeg-generated/m4a/aac_faststart.m4a")
        let data = MemoryData(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        let client = Unmanaged.passUnretained(data).toOpaque()
        var viaCallbacks: AudioFileID?
        #expect(AudioFileOpenWithCallbacks(client, memoryRead, nil, memorySize, nil, 0, &viaCallbacks) == noErr)
        let a = try #require(viaCallbacks)
        defer { AudioFileClose(a) }
        var viaURL: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &viaURL) == noErr)
        let b = try #require(viaURL)
        defer { AudioFileClose(b) }
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioFileGetProperty(a, kAudioFilePropertyDataFormat, &size, &format) == noErr && format.mFormatID == kAudioFormatMPEG4AAC)
        let packetsA = allPacketBytes(a), packetsB = allPacketBytes(b)
        #expect(!packetsA.isEmpty && packetsA == packetsB)

        let out = MemoryData([])
        let outClient = Unmanaged.passUnretained(out).toOpaque()
        var pcm = AudioStreamBasicDescription(mSampleRate: 8000, mFormatID: kAudioFormatLinearPCM,
                                              mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                              mBytesPerPacket: 2, mFramesPerPacket: 1, mBytesPerFrame: 2, mChannelsPerFrame: 1, mBitsPerChannel: 16, mReserved: 0)
        var created: AudioFileID?
        #expect(AudioFileInitializeWithCallbacks(outClient, memoryRead, memoryWrite, memorySize, memorySetSize, kAudioFileWAVEType, &pcm, [], &created) == noErr)
        let c = try #require(created)
        let samples: [Int16] = (0..<8000).map { Int16(truncatingIfNeeded: $0 * 7) }
        var packets: UInt32 = 8000
        #expect(samples.withUnsafeBytes { AudioFileWritePackets(c, false, 16000, nil, 0, &packets, $0.baseAddress!) } == noErr)
        #expect(AudioFileClose(c) == noErr)
        #expect(out.bytes.count > 16000 && Array(out.bytes[0..<4]) == Array("RIFF".utf8))
        var reopened: AudioFileID?
        #expect(AudioFileOpenWithCallbacks(outClient, memoryRead, nil, memorySize, nil, kAudioFileWAVEType, &reopened) == noErr)
        let r = try #require(reopened)
        defer { AudioFileClose(r) }
        let back = allPacketBytes(r)
        #expect(back == samples.withUnsafeBytes { Array($0) })
    }

    /// User data, markers and regions: none here, with Apple's error codes.
    @Test(.requires(corpusMissing)) func userDataMarkersRegions() throws {
        let path = try corpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav")
        var id: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &id) == noErr)
        let file = try #require(id)
        defer { AudioFileClose(file) }
        var count: UInt32 = 9
        #expect(AudioFileCountUserData(file, 0x4C49_5354 /* 'LIST' */, &count) == noErr && count == 0)
        var size: UInt32 = 0
        #expect(AudioFileGetUserDataSize(file, 0x4C49_5354, 0, &size) == kAudioFileInvalidChunkError)
        var byte: UInt8 = 0
        #expect(AudioFileSetUserData(file, 0x4C49_5354, 0, 1, &byte) == kAudioFilePermissionsError)
        #expect(AudioFileGetPropertyInfo(file, kAudioFilePropertyMarkerList, &size, nil) == noErr && size == 8)
        var header: (UInt32, UInt32) = (9, 9)
        size = 8
        #expect(AudioFileGetProperty(file, kAudioFilePropertyRegionList, &size, &header) == noErr && header.1 == 0)
        #expect(AudioFileGetProperty(file, kAudioFilePropertyChunkIDs, &size, &header) == kAudioFileUnsupportedPropertyError)
    }

    /// Global info: names, extensions, MIME types and UTIs per type, types per extension, and the
    /// formats and stream descriptions each writable type takes.
    @Test func globalInfo() throws {
        var type = kAudioFileWAVEType
        var extensions: CFArray?
        var size = UInt32(MemoryLayout<CFArray>.size)
        #expect(AudioFileGetGlobalInfo(kAudioFileGlobalInfo_ExtensionsForType, 4, &type, &size, &extensions) == noErr)
        #expect((extensions ?? []).contains("wav"))
        var name: CFString?
        type = kAudioFileCAFType
        size = UInt32(MemoryLayout<CFString>.size)
        #expect(AudioFileGetGlobalInfo(kAudioFileGlobalInfo_FileTypeName, 4, &type, &size, &name) == noErr && name == "CAF")
        var all: CFArray?
        size = UInt32(MemoryLayout<CFArray>.size)
        #expect(AudioFileGetGlobalInfo(kAudioFileGlobalInfo_AllExtensions, 0, nil, &size, &all) == noErr && (all ?? []).contains("flac"))
        var ext: CFString = "m4a"
        #expect(AudioFileGetGlobalInfoSize(kAudioFileGlobalInfo_TypesForExtension, UInt32(MemoryLayout<CFString>.size), &ext, &size) == noErr && size == 4)
        var types = [AudioFileTypeID](repeating: 0, count: 4)
        size = 16
        #expect(AudioFileGetGlobalInfo(kAudioFileGlobalInfo_TypesForExtension, UInt32(MemoryLayout<CFString>.size), &ext, &size, &types) == noErr)
        #expect(size == 4 && types[0] == kAudioFileM4AType)

        type = kAudioFileM4AType
        #expect(AudioFileGetGlobalInfoSize(kAudioFileGlobalInfo_AvailableFormatIDs, 4, &type, &size) == noErr)
        var formats = [AudioFormatID](repeating: 0, count: Int(size) / 4)
        #expect(AudioFileGetGlobalInfo(kAudioFileGlobalInfo_AvailableFormatIDs, 4, &type, &size, &formats) == noErr)
        #expect(formats.contains(kAudioFormatMPEG4AAC) && formats.contains(kAudioFormatAppleLossless) && !formats.contains(kAudioFormatOpus))

        var pair = AudioFileTypeAndFormatID(mFileType: kAudioFileWAVEType, mFormatID: kAudioFormatLinearPCM)
        let pairSize = UInt32(MemoryLayout<AudioFileTypeAndFormatID>.size)
        #expect(AudioFileGetGlobalInfoSize(kAudioFileGlobalInfo_AvailableStreamDescriptionsForFormat, pairSize, &pair, &size) == noErr)
        var descriptions = [AudioStreamBasicDescription](repeating: AudioStreamBasicDescription(), count: Int(size) / MemoryLayout<AudioStreamBasicDescription>.stride)
        #expect(AudioFileGetGlobalInfo(kAudioFileGlobalInfo_AvailableStreamDescriptionsForFormat, pairSize, &pair, &size, &descriptions) == noErr)
        #expect(descriptions.contains { $0.mBitsPerChannel == 16 && $0.mFormatFlags & kAudioFormatFlagIsBigEndian == 0 })
        #expect(!descriptions.contains { $0.mFormatFlags & kAudioFormatFlagIsBigEndian != 0 })
        pair.mFormatID = kAudioFormatMPEG4AAC
        #expect(AudioFileGetGlobalInfoSize(kAudioFileGlobalInfo_AvailableStreamDescriptionsForFormat, pairSize, &pair, &size) == kAudioFileUnsupportedDataFormatError)
    }
}
