import OATCore
import OATTestSupport
import OpenAudioToolbox
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `AudioFileWriterOptions.crashSafe` without a device: files abandoned mid-way (what `kill -9`
/// leaves) are readable by AudioFile and FFmpeg up to the last checkpoint, and closed files are
/// ordinary gapless files.
@Suite struct CrashSafeWriterTests {
    /// Encodes `seconds` of a stereo tone at 48 kHz into `path` with crash-safe options,
    /// abandoning the writer (no close) when `abandon` is true.
    func write(_ path: String, type: AudioFileType, data: String, seconds: Double, abandon: Bool,
               reserveSeconds: Double = 3600) throws -> (frames: Int64, info: AudioFilePacketTableInfo) {
        var target = try #require(AudioFileConversion.dataFormat(named: data + "@48000"))
        target.channelsPerFrame = 2
        if target.isPCM {
            target.bytesPerFrame = (target.bitsPerChannel + 7) / 8 * 2
            target.bytesPerPacket = target.bytesPerFrame
        }
        let encoder = try AudioEncoder(to: target)
        var options = AudioFileWriterOptions()
        options.crashSafe = true
        options.checkpointSeconds = 0.5
        options.packetTableReserveSeconds = reserveSeconds
        let writer = try AudioFileWriter(path: path, fileType: type, dataFormat: encoder.outputFormat,
                                         magicCookie: encoder.magicCookie, options: options)
        let priming = Int32(encoder.primeInfo.leadingFrames)
        if priming > 0 { writer.packetTableInfo = AudioFilePacketTableInfo(numberValidFrames: 0, primingFrames: priming, remainderFrames: 0) }
        let buffer = try AudioPCMBuffer(format: encoder.inputFormat, frameCapacity: 4800)
        let total = Int(seconds * 48000)
        var done = 0
        let float = AudioStreamBasicDescription.linearPCM(sampleRate: 48000, channels: 2, bitsPerChannel: 32, isFloat: true)
        let converter = try AudioConverter(from: float, to: encoder.inputFormat)
        while done < total {
            let n = min(4800, total - done)
            var chunk = [Float](repeating: 0, count: n * 2)
            for i in 0..<n {
                let t = Double(done + i) / 48000
                chunk[2 * i] = Float(0.4 * sin(2 * Double.pi * 440 * t))
                chunk[2 * i + 1] = Float(0.3 * sin(2 * Double.pi * 660 * t))
            }
            try chunk.withUnsafeBytes { raw in try converter.decode(packet: raw) }
            while converter.read(into: buffer) > 0 { try writer.writePackets(try encoder.encode(buffer)) }
            done += n
        }
        if abandon {
            writer.abandon()
            return (writer.frameCount, writer.packetTableInfo ?? AudioFilePacketTableInfo(numberValidFrames: 0, primingFrames: 0, remainderFrames: 0))
        }
        try writer.writePackets(try encoder.finish())
        writer.packetTableInfo = encoder.packetTableInfo
        try writer.close()
        return (writer.frameCount, encoder.packetTableInfo)
    }

    @Test(arguments: [("m4a", AudioFileType.m4a, "aac"), ("alac.m4a", .m4a, "alac"), ("caf", .caf, "aac"), ("alac.caf", .caf, "alac"),
                      ("mp3.caf", .caf, ".mp3"), ("wav", .wave, "LEI16"), ("aiff", .aiff, "BEI16"), ("pcm.caf", .caf, "LEI24"),
                      ("flac", .flac, "flac"), ("opus", .ogg, "opus"), ("aac", .aacADTS, "aac"), ("mp3", .mp3, ".mp3")])
    func abandonedFileIsReadableToTheLastCheckpoint(_ name: String, _ type: AudioFileType, _ data: String) throws {
        let scratch = try ScratchDirectory("crashsafe")
        defer { scratch.remove() }
        let path = "\(scratch.path)/abandoned.\(name)"
        _ = try write(path, type: type, data: data, seconds: 3.2, abandon: true)
        let file = try AudioFile(path: path)
        #expect(file.dataFormat.sampleRate == 48000)
        let decoded = try decodeWithToolbox(path, trim: false)
        let seconds = Double(decoded.samples.count / 2) / 48000
        #expect(seconds >= 2.5 && seconds <= 3.3, "\(name): \(seconds) s of 3.2 readable")
        #expect(ffprobeReads(path), "ffprobe cannot read the abandoned \(name)")
        let ffmpeg = try #require(decodeWithFFmpeg(path), "FFmpeg cannot decode the abandoned \(name)")
        #expect(Double(ffmpeg.count / 2) / 48000 >= 2.5, "\(name): FFmpeg decodes \(ffmpeg.count / 2) frames")
    }

    @Test(arguments: [("m4a", AudioFileType.m4a, "aac"), ("caf", .caf, "aac"), ("alac.m4a", .m4a, "alac")])
    func closedFileIsOrdinaryAndGapless(_ name: String, _ type: AudioFileType, _ data: String) throws {
        let scratch = try ScratchDirectory("crashsafe")
        defer { scratch.remove() }
        let path = "\(scratch.path)/closed.\(name)"
        let result = try write(path, type: type, data: data, seconds: 2.0, abandon: false)
        let file = try AudioFile(path: path)
        #expect(file.validFrames == 96000, "\(name): \(file.validFrames) valid frames")
        if data == "aac" { #expect(file.packetTableInfo?.primingFrames == result.info.primingFrames && result.info.primingFrames > 0) }
        let decoded = try decodeWithToolbox(path)
        #expect(decoded.samples.count / 2 == 96000)
        let bytes = try #require(Corpus.read(path))
        if type == .m4a {
            // No fragment boxes are left at the top level: the first moov and the moofs are free.
            var offset = 0, moovs = 0, moofs = 0
            while offset + 8 <= bytes.count {
                let size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
                let kind = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
                if kind == "moov" { moovs += 1 }
                if kind == "moof" { moofs += 1 }
                guard size >= 8 else { break }
                offset += size
            }
            #expect(moovs == 1 && moofs == 0, "\(name): \(moovs) moov, \(moofs) moof at the top level")
            if data == "aac" && haveFFmpeg {
                // The same gapless view as an M4A written in one go (GaplessContainerTests):
                // the edit list's duration, and FFmpeg 5.1 trimming the priming but not the end.
                #expect(ffprobe(path)?.durationTS == 96000, "\(name): ffprobe duration_ts \(ffprobe(path)?.durationTS ?? -1)")
                #expect(ffmpegFrameCount(path, channels: 2) == 96000 + Int(result.info.remainderFrames))
            }
        }
        #expect(ffprobeReads(path), "ffprobe cannot read the closed \(name)")
    }

    /// A recording longer than the reserved CAF packet table still closes correctly: the table
    /// goes after the data and the reserved chunk becomes `free`.
    @Test func cafPacketTableOutgrowingItsReservation() throws {
        let scratch = try ScratchDirectory("crashsafe")
        defer { scratch.remove() }
        let path = "\(scratch.path)/overflow.caf"
        _ = try write(path, type: .caf, data: "aac", seconds: 3.0, abandon: false, reserveSeconds: 1)
        let file = try AudioFile(path: path)
        #expect(file.validFrames == Int64(3.0 * 48000))
        let bytes = try #require(Corpus.read(path))
        #expect(bytes.firstRange(of: Array("free".utf8)) != nil)
        #expect(ffprobeReads(path))
        let abandonedPath = "\(scratch.path)/overflow-abandoned.caf"
        _ = try write(abandonedPath, type: .caf, data: "aac", seconds: 3.0, abandon: true, reserveSeconds: 1)
        let abandoned = try AudioFile(path: abandonedPath)
        let seconds = Double(abandoned.packetCount * 1024) / 48000
        // The table stops at the last checkpoint (0.5 s steps) before the 1 s reservation ran out.
        #expect(seconds >= 0.45 && seconds <= 1.0, "the reserved table covers \(seconds) s")
        #expect(decodeWithFFmpeg(abandonedPath).map { Double($0.count / 2) >= 0.45 * 48000 } == true)
    }

    func ffprobeReads(_ path: String) -> Bool {
        guard ChildProcess.which("ffprobe") != nil else { return true }
        return system("ffprobe -v error -show_entries format=duration -of csv=p=0 '\(path)' > /dev/null 2>&1") == 0
    }
}
