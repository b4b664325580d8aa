// AudioFileStream notifies kAudioFileStreamProperty_FormatList for MP4 tracks, as Apple's does,
// between DataFormat and ReadyToProducePackets. Libraries (dimitris-c/AudioStreaming) make their
// AudioConverter on this notice; without it every M4A failed.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing

/// What a library's property listener does: note the order, and on FormatList read the list and
/// make a converter from its first (richest) layer to float PCM.
private final class FormatListLibrary {
    var order: [AudioFileStreamPropertyID] = []
    var items: [AudioFormatListItem] = []
    var converterStatus: OSStatus = -1
    var converter: AudioConverterRef?
    /// What went wrong reading the list on the notice (the test fails with it).
    var failure: String?
    deinit { if let converter { AudioConverterDispose(converter) } }
}

private func formatListProperty(_ client: UnsafeMutableRawPointer, _ stream: AudioFileStreamID, _ id: AudioFileStreamPropertyID,
                                _: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    let lib = Unmanaged<FormatListLibrary>.fromOpaque(client).takeUnretainedValue()
    lib.order.append(id)
    if id == kAudioFileStreamProperty_FormatList { readFormatList(lib, stream) }
}

/// On the FormatList notice: the list's size, the list, and a converter from its first item.
private func readFormatList(_ lib: FormatListLibrary, _ stream: AudioFileStreamID) {
    let id = kAudioFileStreamProperty_FormatList
    var size: UInt32 = 0
    var writable: DarwinBoolean = false
    let info = AudioFileStreamGetPropertyInfo(stream, id, &size, &writable)
    guard info == noErr, size > 0 else { lib.failure = "FormatList size on its notice: status \(info), \(size) bytes"; return }
    var list = [AudioFormatListItem](repeating: AudioFormatListItem(), count: Int(size) / MemoryLayout<AudioFormatListItem>.size)
    let got = AudioFileStreamGetProperty(stream, id, &size, &list)
    guard got == noErr else { lib.failure = "FormatList on its notice: status \(got)"; return }
    lib.items = list
    var source = list[0].mASBD
    var pcm = AudioStreamBasicDescription(mSampleRate: source.mSampleRate, mFormatID: kAudioFormatLinearPCM,
                                          mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
                                          mBytesPerPacket: 4 * source.mChannelsPerFrame, mFramesPerPacket: 1,
                                          mBytesPerFrame: 4 * source.mChannelsPerFrame, mChannelsPerFrame: source.mChannelsPerFrame,
                                          mBitsPerChannel: 32, mReserved: 0)
    lib.converterStatus = AudioConverterNew(&source, &pcm, &lib.converter)
}

private func formatListPackets(_: UnsafeMutableRawPointer, _: UInt32, _: UInt32, _: UnsafeRawPointer,
                               _: UnsafeMutablePointer<AudioStreamPacketDescription>?) {}

@Suite struct FormatListNoticeCompatTests {
    /// Each streamable M4A of the corpus (AAC with the moov first, fragmented AAC) notifies FormatList after
    /// DataFormat and before ReadyToProducePackets; its first item is the data format and a
    /// converter made on the notice opens. (Files with the moov at the end cannot be streamed:
    /// kAudioFileStreamError_NotOptimized, as on Apple; NotOptimizedCompatTests.)
    @Test(.requires(corpusMissing), arguments: ["aac_faststart.m4a", "aac_fragmented.m4a"])
    func formatListIsNotifiedForM4A(_ name: String) throws {
        let path = try corpusFile("ffmpeg-generated/m4a/\(name)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let lib = FormatListLibrary()
        var streamID: AudioFileStreamID?
        #expect(AudioFileStreamOpen(Unmanaged.passUnretained(lib).toOpaque(), formatListProperty, formatListPackets,
                                    kAudioFileM4AType, &streamID) == noErr)
        let stream = try #require(streamID)
        defer { AudioFileStreamClose(stream) }
        let fed = feedFileStream(stream, bytes, chunk: 8192)
        try #require(fed.status == noErr, "\(name) at \(fed.offset): \(fed.status)")
        #expect(lib.failure == nil, "\(name): \(lib.failure ?? "")")
        let data = try #require(lib.order.firstIndex(of: kAudioFileStreamProperty_DataFormat))
        let list = try #require(lib.order.firstIndex(of: kAudioFileStreamProperty_FormatList), "\(name): no FormatList in \(lib.order)")
        let ready = try #require(lib.order.firstIndex(of: kAudioFileStreamProperty_ReadyToProducePackets))
        #expect(data < list && list < ready, "\(name): \(lib.order)")
        var format = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_DataFormat, &size, &format) == noErr)
        #expect(lib.items.count == 1)
        #expect(lib.items.first?.mASBD.mFormatID == format.mFormatID && lib.items.first?.mASBD.mSampleRate == format.mSampleRate)
        #expect(lib.converterStatus == noErr, "\(name): AudioConverterNew on the notice: \(lib.converterStatus)")
    }
}
