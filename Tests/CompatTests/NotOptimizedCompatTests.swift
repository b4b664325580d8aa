// AudioFileStream on an MP4 whose 'moov' follows its 'mdat', through the C API as macOS code
// calls it (only the import differs). Apple: "It is not possible to produce output packets
// because the streamed audio file's packet table or other defining information is not present or
// appears after the audio data" (kAudioFileStreamError_NotOptimized): ParseBytes returns it when
// it reaches the audio data, so a streamer stops instead of waiting for packets forever.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
import OATTestSupport
#endif
import Foundation
import Testing

@Suite struct NotOptimizedCompatTests {
    /// Feeds `bytes` in 4 KiB pieces; the first status that is not noErr, and the piece it came at.
    static func feed(_ bytes: [UInt8], hint: AudioFileTypeID) -> (status: OSStatus, at: Int, ready: UInt32, stream: AudioFileStreamID?) {
        var streamID: AudioFileStreamID?
        let opened = AudioFileStreamOpen(nil, { _, _, _, _ in }, { _, _, _, _, _ in }, hint, &streamID)
        guard opened == noErr, let stream = streamID else { return (opened, -1, 0, nil) }
        var offset = 0
        var status = noErr
        while offset < bytes.count && status == noErr {
            let n = min(4096, bytes.count - offset)
            status = bytes[offset..<(offset + n)].withUnsafeBytes { AudioFileStreamParseBytes(stream, UInt32(n), $0.baseAddress, []) }
            if status != noErr { break }
            offset += n
        }
        var ready: UInt32 = 0
        var size = UInt32(MemoryLayout<UInt32>.size)
        _ = AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_ReadyToProducePackets, &size, &ready)
        return (status, offset, ready, stream)
    }

    @Test func moovAfterMdatIsNotOptimized() throws {
        let plain = "/tmp/oat-optm-\(getpid())-plain.m4a", fast = "/tmp/oat-optm-\(getpid())-fast.m4a"
        defer { unlink(plain); unlink(fast) }
        let source = "aevalsrc=\(fixtureSignalExpression(channels: 2, seconds: 2)):s=44100:d=2"
        try #require(runFFmpeg(["-f", "lavfi", "-i", source, "-c:a", "aac", "-b:a", "96k", plain]), "ffmpeg is needed")
        try #require(runFFmpeg(["-f", "lavfi", "-i", source, "-c:a", "aac", "-b:a", "96k", "-movflags", "+faststart", fast]))
        let plainBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: plain)))
        let fastBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fast)))

        // moov last (FFmpeg's default): 'optm' as soon as the mdat is reached (the first piece:
        // ftyp, free, then the mdat header), and never ready to produce packets.
        let a = Self.feed(plainBytes, hint: kAudioFileM4AType)
        #expect(a.status == kAudioFileStreamError_NotOptimized)
        #expect(a.at == 0)
        #expect(a.ready == 0)
        if let s = a.stream {
            // Later calls keep failing: the stream cannot continue.
            let again = plainBytes[4096..<8192].withUnsafeBytes { AudioFileStreamParseBytes(s, 4096, $0.baseAddress, []) }
            #expect(again != noErr)
            AudioFileStreamClose(s)
        }

        // moov first: parses to the end and is ready.
        let b = Self.feed(fastBytes, hint: kAudioFileM4AType)
        #expect(b.status == noErr)
        #expect(b.ready == 1)
        if let s = b.stream { AudioFileStreamClose(s) }
    }
}
