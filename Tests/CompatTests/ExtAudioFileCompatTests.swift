// ExtAudioFile through the C-style API, as macOS code calls it (only the import differs).
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

/// Reads a whole file through ExtAudioFile in `client` (interleaved) as raw bytes.
private func extRead(_ path: String, client: AudioStreamBasicDescription?, chunk: UInt32 = 1000) throws -> (bytes: [UInt8], lengthFrames: Int64) {
    var ref: ExtAudioFileRef?
    #expect(ExtAudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, &ref) == noErr)
    let file = try #require(ref)
    defer { ExtAudioFileDispose(file) }
    var format = AudioStreamBasicDescription()
    var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    if var client {
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_ClientDataFormat, size, &client) == noErr)
    }
    #expect(ExtAudioFileGetProperty(file, kExtAudioFileProperty_ClientDataFormat, &size, &format) == noErr)
    var length: Int64 = 0
    size = 8
    #expect(ExtAudioFileGetProperty(file, kExtAudioFileProperty_FileLengthFrames, &size, &length) == noErr)
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: Int(chunk * format.mBytesPerFrame))
    while true {
        var frames = chunk
        let status = buffer.withUnsafeMutableBytes { raw -> OSStatus in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: format.mChannelsPerFrame,
                                                                                  mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
            return ExtAudioFileRead(file, &frames, &list)
        }
        #expect(status == noErr)
        if status != noErr || frames == 0 { break }
        out += buffer[0..<Int(frames * format.mBytesPerFrame)]
    }
    return (out, length)
}

/// All audio bytes of a PCM file through AudioFileReadPacketData.
private func audioFileBytes(_ path: String) throws -> [UInt8] {
    var id: AudioFileID?
    #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &id) == noErr)
    let file = try #require(id)
    defer { AudioFileClose(file) }
    var count: UInt64 = 0
    var size = UInt32(8)
    AudioFileGetProperty(file, kAudioFilePropertyAudioDataByteCount, &size, &count)
    var bytes = [UInt8](repeating: 0, count: Int(count))
    var n = UInt32(count)
    var packets = UInt32.max
    let status = bytes.withUnsafeMutableBytes { AudioFileReadPacketData(file, false, &n, nil, 0, &packets, $0.baseAddress) }
    #expect(status == noErr)
    return Array(bytes[0..<Int(n)])
}

private func int16Stereo(_ rate: Float64, bigEndian: Bool = false) -> AudioStreamBasicDescription {
    AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM,
                                mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked | (bigEndian ? kLinearPCMFormatFlagIsBigEndian : 0),
                                mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2, mBitsPerChannel: 16, mReserved: 0)
}

private func floatPlanar(_ rate: Float64, channels: UInt32) -> AudioStreamBasicDescription {
    AudioStreamBasicDescription(mSampleRate: rate, mFormatID: kAudioFormatLinearPCM,
                                mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked | kAudioFormatFlagIsNonInterleaved,
                                mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: channels, mBitsPerChannel: 32, mReserved: 0)
}

private func tempPath(_ ext: String) -> String { "/tmp/oat-extaf-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).\(ext)" }

/// A stereo test signal: 440 Hz left, 660 Hz right, amplitude 0.5.
private func signal(_ frame: Int, _ channel: Int, rate: Double) -> Float {
    Float(0.5 * sin(2 * Double.pi * (channel == 0 ? 440 : 660) * Double(frame) / rate))
}

/// Writes `frames` frames of the test signal through ExtAudioFileWrite from planar Float32.
private func writeSignal(_ file: ExtAudioFileRef, frames: Int, rate: Double, chunk: Int = 1234) -> OSStatus {
    var written = 0
    let list = AudioBufferList.allocate(maximumBuffers: 2)
    defer { free(list.unsafeMutablePointer) }
    var left = [Float](repeating: 0, count: chunk), right = [Float](repeating: 0, count: chunk)
    while written < frames {
        let n = min(chunk, frames - written)
        for i in 0..<n { left[i] = signal(written + i, 0, rate: rate); right[i] = signal(written + i, 1, rate: rate) }
        let status = left.withUnsafeMutableBytes { l in
            right.withUnsafeMutableBytes { r in
                list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(n * 4), mData: l.baseAddress)
                list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(n * 4), mData: r.baseAddress)
                return ExtAudioFileWrite(file, UInt32(n), list.unsafeMutablePointer)
            }
        }
        if status != noErr { return status }
        written += n
    }
    return noErr
}

/// SNR in dB of interleaved stereo `samples` against the test signal.
private func signalSNR(_ samples: [Float], rate: Double, offset: Int = 0) -> Double {
    var s = 0.0, e = 0.0
    for f in 0..<(samples.count / 2) {
        for c in 0..<2 {
            let ref = Double(signal(f + offset, c, rate: rate))
            let d = Double(samples[f * 2 + c]) - ref
            s += ref * ref
            e += d * d
        }
    }
    return e == 0 ? .infinity : 10 * log10(s / e)
}

/// One line of `ffprobe` output for a stream entry, or nil.
private func ffprobe(_ path: String, _ entry: String) -> String? {
    guard let pipe = popen("ffprobe -v error -count_packets -select_streams a:0 -show_entries stream=\(entry) -of csv=p=0 '\(path)' 2>/dev/null", "r") else { return nil }
    defer { pclose(pipe) }
    var line = [CChar](repeating: 0, count: 256)
    guard fgets(&line, 256, pipe) != nil else { return nil }
    return String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

@Suite struct ExtAudioFileCompatTests {
    /// The big-endian AIFF read in its own format (the default client format) holds exactly the
    /// bytes AudioFileReadPacketData gives; the same signal as ALAC in M4A read as Int16 equals
    /// the WAV's bytes (lossless decode, priming trimmed).
    @Test(.requires(corpusMissing)) func readsTheSameFramesAsAudioFile() throws {
        let aiff = try corpusFile("ffmpeg-generated/aiff/pcm_s16be_st.aiff")
        let wav = try corpusFile("ffmpeg-generated/wav/pcm_s16le_listinfo.wav")
        let alac = try corpusFile("ffmpeg-generated/m4a/alac_st.m4a")
        let direct = try audioFileBytes(aiff)
        let (viaExt, length) = try extRead(aiff, client: nil)
        #expect(length == 132300)
        #expect(viaExt.count == direct.count && viaExt == direct)

        let wavBytes = try audioFileBytes(wav)
        let (alacBytes, alacLength) = try extRead(alac, client: int16Stereo(44100))
        #expect(alacLength == 132300)
        #expect(alacBytes.count == 132300 * 4 && alacBytes == wavBytes)
        // The ALAC decoded to big-endian Int16 (byte-swapped client) is the AIFF.
        let (alacBigEndian, _) = try extRead(alac, client: int16Stereo(44100, bigEndian: true))
        #expect(alacBigEndian == direct)
        // Packed 24-bit read in its own format: the file's bytes.
        let s24 = try corpusFile("ffmpeg-generated/wav/pcm_s24le_st.wav")
        let (bytes24, _) = try extRead(s24, client: nil, chunk: 777)
        let direct24 = try audioFileBytes(s24)
        #expect(!bytes24.isEmpty && bytes24 == direct24)
        // The AIFF swapped to little-endian is the WAV.
        var swapped = direct
        for i in stride(from: 0, to: swapped.count - 1, by: 2) { swapped.swapAt(i, i + 1) }
        #expect(swapped == wavBytes)
    }

    /// An AAC file read as planar Float32: the frame count is the file's valid length, and the
    /// audio matches ffmpeg's decode.
    @Test(.requires(corpusMissing)) func readsEncodedFileAsPlanarFloat() throws {
        let path = try corpusFile("ffmpeg-generated/m4a/aac_faststart.m4a")
        var ref: ExtAudioFileRef?
        #expect(ExtAudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, &ref) == noErr)
        let file = try #require(ref)
        defer { ExtAudioFileDispose(file) }
        var fileFormat = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(ExtAudioFileGetProperty(file, kExtAudioFileProperty_FileDataFormat, &size, &fileFormat) == noErr)
        #expect(fileFormat.mFormatID == kAudioFormatMPEG4AAC && fileFormat.mChannelsPerFrame == 2)
        // Reading before a PCM client format is set fails as on macOS.
        var frames: UInt32 = 16
        var scratch = [Float](repeating: 0, count: 64)
        let early = scratch.withUnsafeMutableBytes { raw -> OSStatus in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
            return ExtAudioFileRead(file, &frames, &list)
        }
        #expect(early == kExtAudioFileError_NonPCMClientFormat)
        var client = floatPlanar(fileFormat.mSampleRate, channels: 2)
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_ClientDataFormat, size, &client) == noErr)
        var length: Int64 = 0
        size = 8
        #expect(ExtAudioFileGetProperty(file, kExtAudioFileProperty_FileLengthFrames, &size, &length) == noErr)
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        var left = [Float](repeating: 0, count: 4096), right = [Float](repeating: 0, count: 4096)
        var interleaved: [Float] = []
        while true {
            var n: UInt32 = 4096
            let status = left.withUnsafeMutableBytes { l in
                right.withUnsafeMutableBytes { r in
                    list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(l.count), mData: l.baseAddress)
                    list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: UInt32(r.count), mData: r.baseAddress)
                    return ExtAudioFileRead(file, &n, list.unsafeMutablePointer)
                }
            }
            #expect(status == noErr)
            if n == 0 || status != noErr { break }
            #expect(list[0].mDataByteSize == n * 4)
            for i in 0..<Int(n) { interleaved.append(left[i]); interleaved.append(right[i]) }
        }
        #expect(length == 132300)
        #expect(interleaved.count / 2 == Int(length))
        var tell: Int64 = 0
        #expect(ExtAudioFileTell(file, &tell) == noErr && tell == length)
        if let reference = ffmpegFloat(path) {
            let db = snrDB(reference, interleaved)
            print("ExtAudioFile AAC read vs ffmpeg: \(reference.count / 2) / \(interleaved.count / 2) frames, SNR \(db) dB")
            #expect(db > 30)
        }
    }

    /// Seeking lands on the exact frame: a read after ExtAudioFileSeek equals the same span of a
    /// full read, and Tell follows.
    @Test(.requires(corpusMissing)) func seekAndTell() throws {
        let path = try corpusFile("ffmpeg-generated/m4a/alac_st.m4a")
        let (all, _) = try extRead(path, client: int16Stereo(44100))
        var ref: ExtAudioFileRef?
        #expect(ExtAudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, &ref) == noErr)
        let file = try #require(ref)
        defer { ExtAudioFileDispose(file) }
        var client = int16Stereo(44100)
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &client) == noErr)
        for start in [100_000, 4097, 0, 131_000] {
            #expect(ExtAudioFileSeek(file, Int64(start)) == noErr)
            var buffer = [UInt8](repeating: 0, count: 2000 * 4)
            var frames: UInt32 = 2000
            let status = buffer.withUnsafeMutableBytes { raw -> OSStatus in
                var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
                return ExtAudioFileRead(file, &frames, &list)
            }
            let expected = min(2000, 132300 - start)
            #expect(status == noErr && Int(frames) == expected)
            #expect(Array(buffer[0..<(expected * 4)]) == Array(all[(start * 4)..<((start + expected) * 4)]))
            var tell: Int64 = 0
            #expect(ExtAudioFileTell(file, &tell) == noErr && tell == Int64(start + expected))
        }
        #expect(ExtAudioFileSeek(file, 200_000) == kExtAudioFileError_InvalidSeek)
    }

    /// A 16-bit WAV written from planar Float32 client buffers: ffprobe sees the frames, and
    /// reading it back gives the signal (16-bit quantisation only).
    @Test func writesPCMWaveFromFloatClient() throws {
        let path = tempPath("wav")
        defer { unlink(path) }
        var fileFormat = int16Stereo(44100)
        var ref: ExtAudioFileRef?
        #expect(ExtAudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, kAudioFileWAVEType, &fileFormat, nil,
                                          AudioFileFlags.eraseFile.rawValue, &ref) == noErr)
        let file = try #require(ref)
        var client = floatPlanar(44100, channels: 2)
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &client) == noErr)
        #expect(writeSignal(file, frames: 50_000, rate: 44100) == noErr)
        var tell: Int64 = 0
        #expect(ExtAudioFileTell(file, &tell) == noErr && tell == 50_000)
        // Lengthen with 10 000 frames of silence; shortening is refused.
        var length: Int64 = 60_000
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_FileLengthFrames, 8, &length) == noErr)
        length = 1000
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_FileLengthFrames, 8, &length) == kExtAudioFileError_InvalidOperationOrder)
        var audioFile: AudioFileID?
        var size = UInt32(MemoryLayout<AudioFileID>.size)
        #expect(ExtAudioFileGetProperty(file, kExtAudioFileProperty_AudioFile, &size, &audioFile) == noErr && audioFile != nil)
        #expect(ExtAudioFileDispose(file) == noErr)

        #expect(ffprobe(path, "codec_name") == "pcm_s16le")
        #expect(ffprobe(path, "nb_read_packets").flatMap { Int($0) } != nil)
        if let reference = ffmpegFloat(path) { #expect(reference.count == 120_000) }
        let (bytes, readLength) = try extRead(path, client: nil)
        #expect(readLength == 60_000)
        let all = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }.map { Float($0) / 32768 }
        #expect(all.count == 120_000 && all[100_000...].allSatisfy { $0 == 0 })
        let samples = Array(all[0..<100_000])
        let db = signalSNR(samples, rate: 44100)
        print("ExtAudioFile WAV write/read SNR \(db) dB")
        #expect(samples.count == 100_000 && db > 80)
    }

    /// AAC in M4A written from planar Float32 at a bit rate set on the file's AudioConverter:
    /// the packet table gives back exactly the frames written, the audio is the signal, and
    /// ffprobe reads an AAC stream near the bit rate.
    @Test func writesAACThroughTheConverter() throws {
        let path = tempPath("m4a")
        defer { unlink(path) }
        var fileFormat = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatMPEG4AAC, mFormatFlags: 0, mBytesPerPacket: 0,
                                                     mFramesPerPacket: 0, mBytesPerFrame: 0, mChannelsPerFrame: 2, mBitsPerChannel: 0, mReserved: 0)
        var ref: ExtAudioFileRef?
        #expect(ExtAudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, kAudioFileM4AType, &fileFormat, nil,
                                          AudioFileFlags.eraseFile.rawValue, &ref) == noErr)
        let file = try #require(ref)
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(ExtAudioFileGetProperty(file, kExtAudioFileProperty_FileDataFormat, &size, &fileFormat) == noErr && fileFormat.mFramesPerPacket == 1024)
        var client = floatPlanar(44100, channels: 2)
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_ClientDataFormat, size, &client) == noErr)
        var converter: AudioConverterRef?
        size = UInt32(MemoryLayout<AudioConverterRef>.size)
        #expect(ExtAudioFileGetProperty(file, kExtAudioFileProperty_AudioConverter, &size, &converter) == noErr)
        var bitRate: UInt32 = 96000
        #expect(AudioConverterSetProperty(try #require(converter), kAudioConverterEncodeBitRate, 4, &bitRate) == noErr)
        var config: UnsafeRawPointer? = nil
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_ConverterConfig, UInt32(MemoryLayout<UnsafeRawPointer?>.size), &config) == noErr)
        #expect(writeSignal(file, frames: 88_200, rate: 44100) == noErr)
        #expect(ExtAudioFileDispose(file) == noErr)

        #expect(ffprobe(path, "codec_name") == "aac")
        let rate = ffprobe(path, "bit_rate").flatMap { Int($0) } ?? 0
        print("ExtAudioFile AAC write: ffprobe bit_rate \(rate)")
        #expect(rate > 70000 && rate < 125_000)
        var readRef: ExtAudioFileRef?
        #expect(ExtAudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, &readRef) == noErr)
        let reader = try #require(readRef)
        var length: Int64 = 0
        size = 8
        #expect(ExtAudioFileGetProperty(reader, kExtAudioFileProperty_FileLengthFrames, &size, &length) == noErr)
        #expect(length == 88_200)
        #expect(ExtAudioFileDispose(reader) == noErr)
        let (bytes, _) = try extRead(path, client: AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM,
                                                                                  mFormatFlags: kAudioFormatFlagsNativeFloatPacked, mBytesPerPacket: 8,
                                                                                  mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2,
                                                                                  mBitsPerChannel: 32, mReserved: 0))
        let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let db = signalSNR(samples, rate: 44100)
        // Priming trimmed exactly: no lag fits better than 0.
        var best = (lag: 0, snr: -Double.infinity)
        for lag in -64...64 {
            let v = signalSNR(Array(samples[8000..<40000]), rate: 44100, offset: 4000 + lag)
            if v > best.snr { best = (lag, v) }
        }
        #expect(best.lag == 0)
        print("ExtAudioFile AAC write/read: \(samples.count / 2) frames, SNR \(db) dB")
        #expect(samples.count == 176_400)
        #expect(db > 15, "perceptual coder at 96 kb/s on two tones")
    }

    /// Wrapping AudioFileIDs: a created file written through the wrapper and closed with
    /// AudioFileClose; a reading file wrapped for reading; the wrong direction is refused.
    @Test func wrapsAudioFileIDs() throws {
        let path = tempPath("caf")
        defer { unlink(path) }
        var format = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                 mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2, mBitsPerChannel: 32, mReserved: 0)
        var id: AudioFileID?
        #expect(AudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, kAudioFileCAFType, &format, .eraseFile, &id) == noErr)
        let audioFile = try #require(id)
        var ref: ExtAudioFileRef?
        #expect(ExtAudioFileWrapAudioFileID(audioFile, false, &ref) == kExtAudioFileError_InvalidOperationOrder)
        #expect(ExtAudioFileWrapAudioFileID(audioFile, true, &ref) == noErr)
        let ext = try #require(ref)
        var client = floatPlanar(48000, channels: 2)
        #expect(ExtAudioFileSetProperty(ext, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &client) == noErr)
        #expect(writeSignal(ext, frames: 24_000, rate: 48000, chunk: 512) == noErr)
        #expect(ExtAudioFileDispose(ext) == noErr)
        #expect(AudioFileClose(audioFile) == noErr)

        var readID: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &readID) == noErr)
        let readFile = try #require(readID)
        var wrapped: ExtAudioFileRef?
        #expect(ExtAudioFileWrapAudioFileID(readFile, true, &wrapped) == kAudioFilePermissionsError)
        #expect(ExtAudioFileWrapAudioFileID(readFile, false, &wrapped) == noErr)
        let reader = try #require(wrapped)
        var length: Int64 = 0
        var size = UInt32(8)
        #expect(ExtAudioFileGetProperty(reader, kExtAudioFileProperty_FileLengthFrames, &size, &length) == noErr && length == 24_000)
        var samples = [Float](repeating: 0, count: 48_000)
        var frames: UInt32 = 24_000
        let status = samples.withUnsafeMutableBytes { raw -> OSStatus in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
            return ExtAudioFileRead(reader, &frames, &list)
        }
        #expect(status == noErr && frames == 24_000)
        #expect(signalSNR(samples, rate: 48000) == .infinity)
        #expect(ExtAudioFileDispose(reader) == noErr)
        // The wrapped file stays open after Dispose.
        var count: UInt64 = 0
        size = 8
        #expect(AudioFileGetProperty(readFile, kAudioFilePropertyAudioDataPacketCount, &size, &count) == noErr && count == 24_000)
        #expect(AudioFileClose(readFile) == noErr)
    }

    /// A client rate other than the file's: the frames read follow the rate ratio, Tell and Seek
    /// stay in file frames, and the 440/660 Hz test content keeps its pitch.
    @Test(.requires(corpusMissing)) func resamplingClient() throws {
        let path = try corpusFile("ffmpeg-generated/m4a/alac_st.m4a")
        var client = floatPlanar(48000, channels: 2)
        client.mFormatFlags &= ~kAudioFormatFlagIsNonInterleaved
        client.mBytesPerFrame = 8
        client.mBytesPerPacket = 8
        let (bytes, length) = try extRead(path, client: client, chunk: 4096)
        let frames = bytes.count / 8
        print("ExtAudioFile 44.1 -> 48 kHz: \(frames) frames for \(length) file frames")
        #expect(length == 132_300)
        #expect(abs(frames - 144_000) <= 2)
        var ref: ExtAudioFileRef?
        #expect(ExtAudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, &ref) == noErr)
        let file = try #require(ref)
        defer { ExtAudioFileDispose(file) }
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &client) == noErr)
        var buffer = [Float](repeating: 0, count: 9600 * 2)
        var n: UInt32 = 9600
        let status = buffer.withUnsafeMutableBytes { raw -> OSStatus in
            var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count), mData: raw.baseAddress))
            return ExtAudioFileRead(file, &n, &list)
        }
        #expect(status == noErr && n == 9600)
        var tell: Int64 = 0
        #expect(ExtAudioFileTell(file, &tell) == noErr && tell == 8820)   // 0.2 s in file frames
    }

    /// ExtAudioFileWriteAsync as a render callback uses it: set-up call, then 512-frame planar
    /// slices; the Float32 WAV holds exactly those frames after Dispose; a slice larger than the
    /// buffer is refused.
    @Test func writeAsyncFromARenderLoop() throws {
        let path = tempPath("wav")
        defer { unlink(path) }
        var fileFormat = AudioStreamBasicDescription(mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                     mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2, mBitsPerChannel: 32, mReserved: 0)
        var ref: ExtAudioFileRef?
        #expect(ExtAudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, kAudioFileWAVEType, &fileFormat, nil, AudioFileFlags.eraseFile.rawValue, &ref) == noErr)
        let file = try #require(ref)
        var client = floatPlanar(48000, channels: 2)
        #expect(ExtAudioFileSetProperty(file, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &client) == noErr)
        #expect(ExtAudioFileWriteAsync(file, 0, nil) == noErr)
        let list = AudioBufferList.allocate(maximumBuffers: 2)
        defer { free(list.unsafeMutablePointer) }
        let left = UnsafeMutablePointer<Float>.allocate(capacity: 8192), right = UnsafeMutablePointer<Float>.allocate(capacity: 8192)
        defer { left.deallocate(); right.deallocate() }
        var written = 0
        for _ in 0..<100 {
            for i in 0..<512 { left[i] = signal(written + i, 0, rate: 48000); right[i] = signal(written + i, 1, rate: 48000) }
            list[0] = AudioBuffer(mNumberChannels: 1, mDataByteSize: 512 * 4, mData: left)
            list[1] = AudioBuffer(mNumberChannels: 1, mDataByteSize: 512 * 4, mData: right)
            var status = ExtAudioFileWriteAsync(file, 512, list.unsafePointer)
            while status == kExtAudioFileError_AsyncWriteBufferOverflow {   // the writer is behind: wait a period
                usleep(1000)
                status = ExtAudioFileWriteAsync(file, 512, list.unsafePointer)
            }
            #expect(status == noErr)
            written += 512
        }
        list[0].mDataByteSize = 8192 * 4
        list[1].mDataByteSize = 8192 * 4
        #expect(ExtAudioFileWriteAsync(file, 8192, list.unsafePointer) == kExtAudioFileError_AsyncWriteTooLarge)
        #expect(ExtAudioFileDispose(file) == noErr)
        let (bytes, length) = try extRead(path, client: nil)
        #expect(length == 51_200)
        let samples = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(samples.count == 102_400 && signalSNR(samples, rate: 48000) == .infinity)
    }

    @Test func constantsHaveApplesValues() {
        #expect(kExtAudioFileProperty_FileDataFormat == 0x6666_6D74)
        #expect(kExtAudioFileProperty_ClientDataFormat == 1_667_657_076)
        #expect(kExtAudioFileProperty_FileLengthFrames == 593_916_525)
        #expect(kExtAudioFileProperty_IOBuffer == 1_768_907_366)
        #expect(kExtAudioFileProperty_PacketTable == 2_020_635_753)
        #expect(kExtAudioFileError_InvalidProperty == -66561 && kExtAudioFileError_AsyncWriteBufferOverflow == -66570)
        #expect(kExtAudioFileError_CodecUnavailableInputConsumed == -66559)
    }
}
