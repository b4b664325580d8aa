// Issue 17 §3 d and f: behaviour macOS programs rely on, written as macOS code calls the API.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation
import Testing
import OATTestSupport

/// The corpus file, or a failure naming it when it is missing.
func requiredCorpusFile(_ relative: String) throws -> String {
    try corpusFile(relative)
}

/// Writes a 16-bit stereo WAV of `frames` frames of a 440 Hz tone through the C API.
private func writeToneWAV(_ path: String, frames: Int = 4410) throws {
    var format = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                             mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                             mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2,
                                             mBitsPerChannel: 16, mReserved: 0)
    var file: AudioFileID?
    try #require(AudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, kAudioFileWAVEType, &format, .eraseFile, &file) == noErr)
    var samples = [Int16](repeating: 0, count: frames * 2)
    for i in 0..<frames {
        let v = Int16(8000 * sin(2 * Double.pi * 440 * Double(i) / 44100))
        samples[2 * i] = v
        samples[2 * i + 1] = v
    }
    var packets = UInt32(frames)
    let status = samples.withUnsafeBytes { raw in
        AudioFileWritePackets(file!, false, UInt32(raw.count), nil, 0, &packets, raw.baseAddress!)
    }
    try #require(status == noErr)
    try #require(AudioFileClose(file!) == noErr)
}

@Suite struct DisposeTwiceCompatTests {
    @Test func audioFileCloseTwiceAndStaleCallsReturnErrors() throws {
        let path = "/tmp/oat-dispose-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).wav"
        defer { unlink(path) }
        // A created file: the first close finishes it, the second finds it closed.
        var format = AudioStreamBasicDescription(mSampleRate: 8000, mFormatID: kAudioFormatLinearPCM,
                                                 mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                                 mBytesPerPacket: 2, mFramesPerPacket: 1, mBytesPerFrame: 2, mChannelsPerFrame: 1,
                                                 mBitsPerChannel: 16, mReserved: 0)
        var created: AudioFileID?
        #expect(AudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, kAudioFileWAVEType, &format, .eraseFile, &created) == noErr)
        let w = try #require(created)
        #expect(AudioFileClose(w) == noErr)
        #expect(AudioFileClose(w) == kAudioFileNotOpenError)

        try writeToneWAV(path)
        var opened: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &opened) == noErr)
        let r = try #require(opened)
        #expect(AudioFileClose(r) == noErr)
        #expect(AudioFileClose(r) == kAudioFileNotOpenError)
        // A stale ID in other calls: an error, not freed memory.
        var asbd = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioFileGetProperty(r, kAudioFilePropertyDataFormat, &size, &asbd) != noErr)
        // A new file opened after the close gets a handle of its own.
        var again: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &again) == noErr)
        #expect(again != r)
        #expect(AudioFileClose(r) == kAudioFileNotOpenError)
        #expect(AudioFileGetProperty(again!, kAudioFilePropertyDataFormat, &size, &asbd) == noErr)
        #expect(AudioFileClose(again!) == noErr)
    }

    @Test func extAudioFileDisposeTwiceReturnsAnError() throws {
        let path = "/tmp/oat-dispose-ext-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).wav"
        defer { unlink(path) }
        try writeToneWAV(path)
        var ext: ExtAudioFileRef?
        #expect(ExtAudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, &ext) == noErr)
        let e = try #require(ext)
        #expect(ExtAudioFileDispose(e) == noErr)
        #expect(ExtAudioFileDispose(e) == kAudio_ParamError)
        var frames: Int64 = 0
        var size = UInt32(MemoryLayout<Int64>.size)
        #expect(ExtAudioFileGetProperty(e, kExtAudioFileProperty_FileLengthFrames, &size, &frames) != noErr)
    }

    @Test func converterQueueStreamUnitAndGraphDisposeTwiceReturnErrors() throws {
        var pcm = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                              mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                              mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2,
                                              mBitsPerChannel: 16, mReserved: 0)
        var float = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                                mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
                                                mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2,
                                                mBitsPerChannel: 32, mReserved: 0)
        var converter: AudioConverterRef?
        #expect(AudioConverterNew(&pcm, &float, &converter) == noErr)
        let c = try #require(converter)
        #expect(AudioConverterDispose(c) == noErr)
        #expect(AudioConverterDispose(c) == kAudio_ParamError)
        #expect(AudioConverterReset(c) == kAudio_ParamError)

        var queue: AudioQueueRef?
        let callback: AudioQueueOutputCallback = { _, _, _ in }
        #expect(AudioQueueNewOutput(&pcm, callback, nil, nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        #expect(AudioQueueDispose(q, true) == noErr)
        #expect(AudioQueueDispose(q, true) == kAudio_ParamError)
        #expect(AudioQueueStart(q, nil) != noErr)

        var stream: AudioFileStreamID?
        #expect(AudioFileStreamOpen(nil, { _, _, _, _ in }, { _, _, _, _, _ in }, kAudioFileMP3Type, &stream) == noErr)
        let s = try #require(stream)
        #expect(AudioFileStreamClose(s) == noErr)
        #expect(AudioFileStreamClose(s) == kAudio_ParamError)
        #expect(AudioFileStreamParseBytes(s, 4, [0xFF, 0xFB, 0x90, 0x64], []) != noErr)

        var description = AudioComponentDescription(componentType: kAudioUnitType_Mixer, componentSubType: kAudioUnitSubType_MultiChannelMixer,
                                                    componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        let component = try #require(AudioComponentFindNext(nil, &description))
        var instance: AudioComponentInstance?
        #expect(AudioComponentInstanceNew(component, &instance) == noErr)
        let u = try #require(instance)
        #expect(AudioComponentInstanceDispose(u) == noErr)
        #expect(AudioComponentInstanceDispose(u) == kAudio_ParamError)
        #expect(AudioUnitInitialize(u) == kAudio_ParamError)

        var graph: AUGraph?
        #expect(NewAUGraph(&graph) == noErr)
        let g = try #require(graph)
        var node = AUNode()
        #expect(AUGraphAddNode(g, &description, &node) == noErr)
        var nodeUnit: AudioUnit?
        #expect(AUGraphNodeInfo(g, node, nil, &nodeUnit) == noErr)
        #expect(DisposeAUGraph(g) == noErr)
        #expect(DisposeAUGraph(g) == kAudio_ParamError)
        var count: UInt32 = 0
        #expect(AUGraphGetNodeCount(g, &count) == kAudio_ParamError)
        // The graph's units went with it.
        #expect(AudioUnitInitialize(try #require(nodeUnit)) == kAudio_ParamError)
    }
}

/// 16-bit PCM, big- or little-endian.
private func int16Format(channels: UInt32, rate: Double, bigEndian: Bool) -> AudioStreamBasicDescription {
    AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM,
                                mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked | (bigEndian ? kLinearPCMFormatFlagIsBigEndian : 0),
                                mBytesPerPacket: 2 * channels, mFramesPerPacket: 1, mBytesPerFrame: 2 * channels, mChannelsPerFrame: channels,
                                mBitsPerChannel: 16, mReserved: 0)
}

/// The input side of ``decodeFile(_:to:)``: the file and the packet it hands out.
private final class FileInput {
    let file: AudioFileID
    var packet: Int64 = 0
    let capacity = 1 << 16
    let buffer: UnsafeMutableRawPointer
    let description = UnsafeMutablePointer<AudioStreamPacketDescription>.allocate(capacity: 1)
    init(file: AudioFileID) {
        self.file = file
        buffer = .allocate(byteCount: capacity, alignment: 16)
    }
    deinit {
        buffer.deallocate()
        description.deallocate()
    }
}

/// Decodes a whole file with AudioConverterFillComplexBuffer, one packet per input-proc call.
private func decodeFile(_ path: String, to output: AudioStreamBasicDescription) throws -> (status: OSStatus, bytes: [UInt8]) {
    var file: AudioFileID?
    try #require(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &file) == noErr)
    defer { AudioFileClose(file!) }
    var source = AudioStreamBasicDescription()
    var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    try #require(AudioFileGetProperty(file!, kAudioFilePropertyDataFormat, &size, &source) == noErr)
    var destination = output
    var converter: AudioConverterRef?
    let status = AudioConverterNew(&source, &destination, &converter)
    guard status == noErr, let converter else { return (status, []) }
    defer { AudioConverterDispose(converter) }
    var cookieSize: UInt32 = 0
    if AudioFileGetPropertyInfo(file!, kAudioFilePropertyMagicCookieData, &cookieSize, nil) == noErr, cookieSize > 0 {
        var cookie = [UInt8](repeating: 0, count: Int(cookieSize))
        AudioFileGetProperty(file!, kAudioFilePropertyMagicCookieData, &cookieSize, &cookie)
        AudioConverterSetProperty(converter, kAudioConverterDecompressionMagicCookie, cookieSize, cookie)
    }
    let input = FileInput(file: file!)
    let proc: AudioConverterComplexInputDataProc = { _, ioPackets, ioData, outDescriptions, user in
        let input = Unmanaged<FileInput>.fromOpaque(user!).takeUnretainedValue()
        var bytes = UInt32(input.capacity)
        var packets: UInt32 = 1
        let status = AudioFileReadPacketData(input.file, false, &bytes, input.description, input.packet, &packets, input.buffer)
        if status != noErr && status != kAudioFileEndOfFileError { return status }
        ioPackets.pointee = packets
        input.packet += Int64(packets)
        ioData.pointee.mNumberBuffers = 1
        ioData.pointee.mBuffers.mDataByteSize = bytes
        ioData.pointee.mBuffers.mData = input.buffer
        if let outDescriptions {
            input.description.pointee.mStartOffset = 0
            outDescriptions.pointee = input.description
        }
        return noErr
    }
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096 * Int(output.mBytesPerFrame))
    while true {
        var frames = UInt32(4096)
        var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: output.mChannelsPerFrame,
                                                                           mDataByteSize: UInt32(chunk.count), mData: nil))
        let s = chunk.withUnsafeMutableBytes { raw -> OSStatus in
            list.mBuffers.mData = raw.baseAddress
            return AudioConverterFillComplexBuffer(converter, proc, Unmanaged.passUnretained(input).toOpaque(), &frames, &list, nil)
        }
        if s != noErr { return (s, result) }
        if frames == 0 { break }
        result += chunk[0..<Int(list.mBuffers.mDataByteSize)]
    }
    return (noErr, result)
}

@Suite struct BigEndianConverterCompatTests {
    @Test func pcmToAndFromBigEndianInt16() throws {
        var float = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                                mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked,
                                                mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 1,
                                                mBitsPerChannel: 32, mReserved: 0)
        var big = int16Format(channels: 1, rate: 44100, bigEndian: true)
        var toBig: AudioConverterRef?
        #expect(AudioConverterNew(&float, &big, &toBig) == noErr)
        let c = try #require(toBig)
        defer { AudioConverterDispose(c) }
        let input: [Float] = [0.5, -0.25, 0, 0.125]
        var out = [UInt8](repeating: 0, count: 8)
        var outSize = UInt32(out.count)
        let status = input.withUnsafeBytes { AudioConverterConvertBuffer(c, UInt32($0.count), $0.baseAddress!, &outSize, &out) }
        #expect(status == noErr)
        #expect(outSize == 8)
        // 16384, -8192, 0, 4096, most significant byte first.
        #expect(out == [0x40, 0x00, 0xE0, 0x00, 0x00, 0x00, 0x10, 0x00])
        var reported = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioConverterGetProperty(c, kAudioConverterCurrentOutputStreamDescription, &size, &reported) == noErr)
        #expect(reported.mFormatFlags & kLinearPCMFormatFlagIsBigEndian != 0)

        // And back: big-endian Int16 to Float32.
        var fromBig: AudioConverterRef?
        #expect(AudioConverterNew(&big, &float, &fromBig) == noErr)
        let d = try #require(fromBig)
        defer { AudioConverterDispose(d) }
        var back = [Float](repeating: 9, count: 4)
        var backSize = UInt32(16)
        let s2 = out.withUnsafeBytes { raw in
            back.withUnsafeMutableBytes { AudioConverterConvertBuffer(d, 8, raw.baseAddress!, &backSize, $0.baseAddress!) }
        }
        #expect(s2 == noErr)
        #expect(back == input)
    }

    @Test(.requires(TestResource.corpusMissing))
    func mp3ToBigEndianInt16ForAIFF() throws {
        let path = try requiredCorpusFile("ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3")
        let native = try decodeFile(path, to: int16Format(channels: 2, rate: 44100, bigEndian: false))
        let big = try decodeFile(path, to: int16Format(channels: 2, rate: 44100, bigEndian: true))
        #expect(native.status == noErr)
        #expect(big.status == noErr, "AudioConverterNew/Fill to big-endian: \(big.status)")
        #expect(native.bytes.count > 44100 * 4)
        #expect(big.bytes.count == native.bytes.count)
        // The same samples, each with its two bytes swapped.
        var swapped = native.bytes
        var i = 0
        while i + 1 < swapped.count { swapped.swapAt(i, i + 1); i += 2 }
        #expect(big.bytes == swapped)
    }
}
