// AudioFileStream's file type hint is only a hint, as on Apple: streamers pass one hint for every
// stream (syedhali/AudioStreamer passes kAudioFileMP3Type), and ADTS AAC must still parse.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing

/// What the callbacks saw.
private final class HintCollector {
    var ready = false
    var format = AudioStreamBasicDescription()
    var packets = 0
}

private func hintProperty(_ client: UnsafeMutableRawPointer, _ stream: AudioFileStreamID, _ id: AudioFileStreamPropertyID,
                          _: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    let c = Unmanaged<HintCollector>.fromOpaque(client).takeUnretainedValue()
    if id == kAudioFileStreamProperty_ReadyToProducePackets {
        c.ready = true
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        _ = AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_DataFormat, &size, &c.format)
    }
}

private func hintPackets(_ client: UnsafeMutableRawPointer, _: UInt32, count: UInt32, _: UnsafeRawPointer,
                         _: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
    Unmanaged<HintCollector>.fromOpaque(client).takeUnretainedValue().packets += Int(count)
}

@Suite struct FileStreamHintCompatTests {
    /// Feeds `bytes` in network-sized chunks (never an end of stream, as a streamer does); returns
    /// the collector and the first failing status.
    fileprivate static func stream(_ bytes: [UInt8], hint: AudioFileTypeID) throws -> (HintCollector, OSStatus) {
        let collector = HintCollector()
        var streamID: AudioFileStreamID?
        let client = Unmanaged.passUnretained(collector).toOpaque()
        #expect(AudioFileStreamOpen(client, hintProperty, hintPackets, hint, &streamID) == noErr)
        let stream = try #require(streamID)
        defer { AudioFileStreamClose(stream) }
        return (collector, feedFileStream(stream, bytes, chunk: 4096).status)
    }

    /// ADTS AAC opened with an MP3 hint (and with a WAVE hint) gives its format and every packet.
    @Test(.requires(corpusMissing)) func adtsWithAWrongHintParses() throws {
        let path = try corpusFile("ffmpeg-generated/adts/aac_lc_44k_st.aac")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let (right, rightStatus) = try Self.stream(bytes, hint: kAudioFileAAC_ADTSType)
        #expect(rightStatus == noErr && right.packets > 100)
        for hint in [kAudioFileMP3Type, kAudioFileWAVEType, AudioFileTypeID(0)] {
            let (c, status) = try Self.stream(bytes, hint: hint)
            #expect(status == noErr, "hint \(hint): \(status)")
            #expect(c.ready)
            #expect(c.format.mFormatID == kAudioFormatMPEG4AAC && c.format.mSampleRate == 44100 && c.format.mChannelsPerFrame == 2)
            #expect(c.packets == right.packets, "hint \(hint): \(c.packets) of \(right.packets) packets")
        }
    }

    /// Bytes of no audio type (an HTML error page served as the stream, repeated past the
    /// parser's search window) end in kAudioFileStreamError_UnsupportedFileType, never silence.
    @Test func noTypeIsUnsupportedFileType() throws {
        let page = Array("<html><body>502 Bad Gateway</body></html>\n".utf8)
        var bytes: [UInt8] = []
        while bytes.count < (1 << 20) + 8192 { bytes += page }
        let (c, status) = try Self.stream(bytes, hint: kAudioFileMP3Type)
        #expect(status == kAudioFileStreamError_UnsupportedFileType, "\(status)")
        #expect(!c.ready && c.packets == 0)
    }
}
