import OATTestSupport
import Foundation
import OpenAVFAudio
import Testing

/// AVAudioFile and AVAudioConverter as Apple's sample code uses them, checked against ffmpeg.
@Suite(.requires(TestResource.ffmpegMissing))
struct AVFAudioFileConverterTests {
    /// Reads a whole file the way Apple's samples do: a standard-format buffer, `read(into:)`
    /// until the frame length is 0. Interleaved samples.
    static func readAll(_ file: AVAudioFile, chunk: AVAudioFrameCount = 4096) throws -> [Float] {
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: chunk))
        let channels = Int(file.processingFormat.channelCount)
        var out: [Float] = []
        while true {
            try file.read(into: buffer)
            if buffer.frameLength == 0 { break }
            let data = try #require(buffer.floatChannelData)
            for f in 0..<Int(buffer.frameLength) {
                for c in 0..<channels { out.append(file.processingFormat.isInterleaved ? data[0][f * channels + c] : data[c][f]) }
            }
        }
        return out
    }

    /// A 440 + 1000 Hz signal, interleaved.
    static func tone(frames: Int, channels: Int, rate: Double) -> [Float] {
        var s = [Float](repeating: 0, count: frames * channels)
        for f in 0..<frames {
            for c in 0..<channels {
                let t = Double(f) / rate
                s[f * channels + c] = Float(0.4 * sin(2 * .pi * 440 * t + Double(c)) + 0.2 * sin(2 * .pi * 1000 * t))
            }
        }
        return s
    }

    @Test func readsFLACBitExactlyAndMP3AsFFmpegDoes() throws {
        let dir = try ScratchDirectory("avf-read")
        defer { dir.remove() }
        let flac = dir.path + "/a.flac"
        try #require(makeFixture(flac, rate: 48000, channels: 2, seconds: 1.5, codec: ["-c:a", "flac", "-sample_fmt", "s32"]))
        let file = try AVAudioFile(forReading: URL(fileURLWithPath: flac))
        #expect(file.fileFormat.streamDescription.pointee.mFormatID == kAudioFormatFLAC)
        #expect(file.processingFormat.isStandard && file.processingFormat.sampleRate == 48000 && file.processingFormat.channelCount == 2)
        #expect(file.length == 72000)
        let samples = try Self.readAll(file)
        let reference = try #require(decodeWithFFmpeg(flac))
        #expect(samples.count == reference.count)
        #expect(snr(reference, samples) > 140, "FLAC through AVAudioFile: \(dB(snr(reference, samples)))")
        #expect(file.framePosition == 72000)
        file.framePosition = 24000
        let tail = try Self.readAll(file)
        #expect(tail.count == 48000 * 2 && snr(Array(reference[48000...]), tail) > 140, "a seek lands on the frame")

        let mp3 = dir.path + "/a.mp3"
        try #require(makeFixture(mp3, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "libmp3lame", "-b:a", "192k"]))
        let mp3File = try AVAudioFile(forReading: URL(fileURLWithPath: mp3), commonFormat: .pcmFormatFloat32, interleaved: true)
        #expect(mp3File.processingFormat.isInterleaved && !mp3File.processingFormat.isStandard)
        let decoded = try Self.readAll(mp3File, chunk: 1000)
        let mp3Reference = try #require(decodeWithFFmpeg(mp3))
        #expect(decoded.count == mp3Reference.count, "frames: \(decoded.count / 2) vs ffmpeg's \(mp3Reference.count / 2)")
        #expect(snr(mp3Reference, decoded) > 60, "MP3 through AVAudioFile: \(dB(snr(mp3Reference, decoded)))")
    }

    @Test func missingAndWrongFilesThrowNSErrors() throws {
        do {
            _ = try AVAudioFile(forReading: URL(fileURLWithPath: "/nonexistent/a.wav"))
            Issue.record("opening a missing file did not throw")
        } catch let error as NSError {
            #expect(error.domain == NSOSStatusErrorDomain && error.code != 0)
        }
        let dir = try ScratchDirectory("avf-bad")
        defer { dir.remove() }
        #expect(throws: NSError.self) {
            try AVAudioFile(forWriting: URL(fileURLWithPath: dir.path + "/a.xyz"), settings: [AVFormatIDKey: kAudioFormatLinearPCM])
        }
    }

    @Test(arguments: ["wav", "caf", "aiff", "flac"])
    func writesPCMFilesThatFFmpegReads(_ ext: String) throws {
        let dir = try ScratchDirectory("avf-write")
        defer { dir.remove() }
        let url = URL(fileURLWithPath: dir.path + "/out.\(ext)")
        let rate = 44100.0, frames = 30000
        let source = Self.tone(frames: frames, channels: 2, rate: rate)
        do {
            let settings: [String: Any] = [AVFormatIDKey: ext == "flac" ? kAudioFormatFLAC : kAudioFormatLinearPCM, AVSampleRateKey: rate,
                                           AVNumberOfChannelsKey: 2, AVLinearPCMBitDepthKey: 16]
            let file = try AVAudioFile(forWriting: url, settings: settings)
            #expect(file.processingFormat.isStandard)
            let buffer = try #require(AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: 4096))
            var at = 0
            while at < frames {
                let n = min(4096, frames - at)
                let data = try #require(buffer.floatChannelData)
                for f in 0..<n { data[0][f] = source[(at + f) * 2]; data[1][f] = source[(at + f) * 2 + 1] }
                buffer.frameLength = AVAudioFrameCount(n)
                try file.write(from: buffer)
                at += n
            }
            #expect(file.length == AVAudioFramePosition(frames))
        } // closed when the object goes away, as on Apple
        let reference = try #require(decodeWithFFmpeg(url.path))
        #expect(reference.count == source.count, "\(ext): ffmpeg reads \(reference.count / 2) frames of \(frames)")
        #expect(snr(source, reference) > 85, "\(ext) 16-bit: \(dB(snr(source, reference)))")
    }

    @Test func writesAACThatFFmpegReadsAtTheRightLengthAndPitch() throws {
        let dir = try ScratchDirectory("avf-aac")
        defer { dir.remove() }
        let url = URL(fileURLWithPath: dir.path + "/out.m4a")
        let rate = 44100.0, frames = 88200
        // A chirp plus a little noise: no period for the alignment to slip by, a sharp peak.
        var noise = SplitMix(seed: 7)
        let source = (0..<frames).map { i -> Float in
            let t = Double(i) / rate
            return Float(0.4 * sin(2 * .pi * (200 * t + 400 * t * t))) + Float(Int(noise.next() % 2001) - 1000) / 50000
        }
        let file = try AVAudioFile(forWriting: url, settings: [AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: rate,
                                                              AVNumberOfChannelsKey: 1, AVEncoderBitRateKey: 128000])
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: AVAudioFrameCount(frames)))
        source.withUnsafeBufferPointer { buffer.floatChannelData![0].update(from: $0.baseAddress!, count: frames) }
        buffer.frameLength = AVAudioFrameCount(frames)
        try file.write(from: buffer)
        #expect(file.fileFormat.streamDescription.pointee.mFormatID == kAudioFormatMPEG4AAC)
        file.close()
        #expect(!file.isOpen)
        // ffmpeg drops the 1024 priming frames but keeps the end's padding (it does the same with
        // the M4A files it writes itself): whole packets, the first `frames` of them the source.
        let decoded = try #require(decodeWithFFmpeg(url.path))
        let packets = (frames + 1024 + 1023) / 1024
        #expect(decoded.count == packets * 1024 - 1024, "ffmpeg reads \(decoded.count) frames for \(frames) + padding")
        let lag = bestLag(source, decoded, range: 20000..<22000, maxLag: 2048)
        #expect(lag == 0, "lag \(lag)")
        #expect(snr(source, Array(decoded.prefix(frames))) > 20, "AAC 128k: \(dB(snr(source, decoded)))")
        // AVAudioFile reads the file's priming and padding (iTunSMPB): exactly the frames written.
        let back = try Self.readAll(AVAudioFile(forReading: url))
        #expect(back.count == frames, "AVAudioFile reads \(back.count) frames of \(frames)")
        #expect(snr(Array(decoded.prefix(frames)), back) > 40, "AVAudioFile reads its own AAC as ffmpeg does: \(dB(snr(decoded, back)))")
    }

    @Test func converterResamplesAndChangesTheSampleType() throws {
        let input = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2))
        let output = try #require(AVAudioFormat(commonFormat: .pcmFormatInt16, sampleRate: 48000, channels: 2, interleaved: true))
        let converter = try #require(AVAudioConverter(from: input, to: output))
        converter.sampleRateConverterQuality = AVAudioQuality.max.rawValue
        #expect(converter.sampleRateConverterQuality == AVAudioQuality.max.rawValue)
        let frames = 44100
        let source = Self.tone(frames: frames, channels: 2, rate: 44100)
        var offset = 0
        let chunk = try #require(AVAudioPCMBuffer(pcmFormat: input, frameCapacity: 1000))
        let out = try #require(AVAudioPCMBuffer(pcmFormat: output, frameCapacity: 4096))
        var result: [Float] = []
        var statuses: [AVAudioConverterOutputStatus] = []
        while true {
            var error: NSError?
            let status = converter.convert(to: out, error: &error) { packets, outStatus in
                if offset >= frames { outStatus.pointee = .endOfStream; return nil }
                let n = min(Int(packets), 1000, frames - offset)
                for f in 0..<n {
                    chunk.floatChannelData![0][f] = source[(offset + f) * 2]
                    chunk.floatChannelData![1][f] = source[(offset + f) * 2 + 1]
                }
                chunk.frameLength = AVAudioFrameCount(n)
                offset += n
                outStatus.pointee = .haveData
                return chunk
            }
            statuses.append(status)
            #expect(error == nil)
            if status == .error || status == .endOfStream { break }
            let data = try #require(out.int16ChannelData)
            for i in 0..<(Int(out.frameLength) * 2) { result.append(Float(data[0][i]) / 32768) }
            if statuses.count > 200 { Issue.record("no end of stream"); break }
        }
        #expect(statuses.last == .endOfStream)
        let expected = 48000
        #expect(abs(result.count / 2 - expected) <= 2, "\(result.count / 2) frames for \(expected)")
        let left = stride(from: 0, to: result.count, by: 2).map { result[$0] }
        let f = dominantFrequency(Array(left[4800..<36800]), sampleRate: 48000)
        #expect(abs(f - 440) < 2, "dominant \(f) Hz")
        let amplitude = toneAmplitude(left, freq: 1000, rate: 48000, from: 4800, count: 32000)
        #expect(abs(amplitude - 0.2) < 0.01, "1 kHz amplitude \(amplitude)")
    }

    @Test func inputThatRunsDryAndTheEndOfTheStream() throws {
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 1))
        let output = try #require(AVAudioFormat(commonFormat: .pcmFormatInt16, sampleRate: 44100, channels: 1, interleaved: true))
        let converter = try #require(AVAudioConverter(from: format, to: output))
        let input = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 1000))
        for i in 0..<1000 { input.floatChannelData![0][i] = 0.5 }
        input.frameLength = 1000
        let out = try #require(AVAudioPCMBuffer(pcmFormat: output, frameCapacity: 4096))
        var given = false
        var error: NSError?
        let first = converter.convert(to: out, error: &error) { _, status in
            if given { status.pointee = .noDataNow; return nil }
            given = true
            status.pointee = .haveData
            return input
        }
        #expect(first == .inputRanDry && out.frameLength == 1000, "\(first) with \(out.frameLength) frames")
        #expect(out.int16ChannelData![0][999] == 16384)
        let second = converter.convert(to: out, error: &error) { _, status in status.pointee = .endOfStream; return nil }
        #expect(second == .endOfStream && out.frameLength == 0)
        converter.reset()

        // convert(to:from:) converts a buffer in one call, without rate conversion.
        let whole = try #require(AVAudioPCMBuffer(pcmFormat: output, frameCapacity: 1000))
        try converter.convert(to: whole, from: input)
        #expect(whole.frameLength == 1000 && whole.int16ChannelData![0][500] == 16384)
        let other = try #require(AVAudioFormat(commonFormat: .pcmFormatInt16, sampleRate: 48000, channels: 1, interleaved: true))
        let resampler = try #require(AVAudioConverter(from: format, to: other))
        #expect(throws: NSError.self) { try resampler.convert(to: whole, from: input) }
    }

    /// The modern streamers' idiom: packets from the parser into AVAudioCompressedBuffers, decoded
    /// by AVAudioConverter into PCM buffers.
    @Test func decodesAACPacketsFromCompressedBuffers() throws {
        let dir = try ScratchDirectory("avf-decode")
        defer { dir.remove() }
        let m4a = dir.path + "/a.m4a"
        try #require(makeFixture(m4a, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "aac", "-b:a", "160k"]))
        var fileID: AudioFileID?
        #expect(AudioFileOpenURL(URL(fileURLWithPath: m4a), .readPermission, 0, &fileID) == noErr)
        let id = try #require(fileID)
        defer { AudioFileClose(id) }
        var asbd = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioFileGetProperty(id, kAudioFilePropertyDataFormat, &size, &asbd) == noErr)
        var cookieSize: UInt32 = 0
        #expect(AudioFileGetPropertyInfo(id, kAudioFilePropertyMagicCookieData, &cookieSize, nil) == noErr)
        var cookie = [UInt8](repeating: 0, count: Int(cookieSize))
        #expect(AudioFileGetProperty(id, kAudioFilePropertyMagicCookieData, &cookieSize, &cookie) == noErr)
        let compressedFormat = try #require(AVAudioFormat(streamDescription: &asbd))
        compressedFormat.magicCookie = Data(cookie)
        let pcm = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2))
        let converter = try #require(AVAudioConverter(from: compressedFormat, to: pcm))
        var packetCount: UInt64 = 0
        size = UInt32(MemoryLayout<UInt64>.size)
        #expect(AudioFileGetProperty(id, kAudioFilePropertyAudioDataPacketCount, &size, &packetCount) == noErr)
        let compressed = AVAudioCompressedBuffer(format: compressedFormat, packetCapacity: 32, maximumPacketSize: 2048)
        var next: Int64 = 0
        let out = try #require(AVAudioPCMBuffer(pcmFormat: pcm, frameCapacity: 4096))
        var decoded: [Float] = []
        loop: while true {
            var error: NSError?
            let status = converter.convert(to: out, error: &error) { packets, outStatus in
                if next >= Int64(packetCount) { outStatus.pointee = .endOfStream; return nil }
                var n = UInt32(min(Int(packets), 32, Int(Int64(packetCount) - next)))
                var bytes = compressed.byteCapacity
                let s = AudioFileReadPacketData(id, false, &bytes, compressed.packetDescriptions, next, &n, compressed.data)
                guard s == noErr, n > 0 else { outStatus.pointee = .endOfStream; return nil }
                compressed.packetCount = n
                compressed.byteLength = bytes
                next += Int64(n)
                outStatus.pointee = .haveData
                return compressed
            }
            switch status {
            case .haveData, .inputRanDry:
                for f in 0..<Int(out.frameLength) { decoded.append(out.floatChannelData![0][f]); decoded.append(out.floatChannelData![1][f]) }
            case .endOfStream: break loop
            case .error: Issue.record("decode failed: \(String(describing: error))"); break loop
            }
        }
        let reference = try #require(decodeWithFFmpeg(m4a))
        // No priming trimmed here: the raw decode, as Apple's converter gives it without primeInfo.
        let lag = bestLag(reference, decoded, range: 40000..<44000, maxLag: 4096)
        #expect(lag % 2 == 0, "whole frames: lag \(lag) samples")
        let aligned = Array(decoded.dropFirst(max(0, lag)))
        #expect(snr(Array(reference.prefix(aligned.count)), Array(aligned.prefix(reference.count))) > 60,
                "AAC decode against ffmpeg (lag \(lag)): \(dB(snr(reference, aligned)))")
    }
}
