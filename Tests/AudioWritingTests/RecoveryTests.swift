import OATTestSupport
import OpenAudioToolbox
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct RecoveryTests {
    /// A writer abandoned without close (what a crash leaves) gives a file that our AudioFile
    /// and ffprobe read, holding all but at most the last second of what was written.
    @Test(arguments: [("WAVE", "LEI16"), ("AIFF", "BEI16"), ("AIFC", "LEI16"), ("caff", "LEI16"), ("caff", "ulaw"),
                      ("flac", "flac"), ("Ogg", "opus"), ("adts", "aac"), ("MPG3", ".mp3")])
    func abandonedWriterLeavesReadableFile(_ type: String, _ data: String) throws {
        let s = Scratch("abandon")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        let rate = 48000.0
        try writeTestSignal(input, frames: 48000 * 5, rate: rate)
        var target = try #require(AudioFileConversion.dataFormat(named: data))
        target.sampleRate = rate
        target.channelsPerFrame = 2
        if target.isPCM { target.bytesPerFrame = target.bitsPerChannel / 8 * 2; target.bytesPerPacket = target.bytesPerFrame }
        let encoder = try AudioEncoder(to: target)
        let fileType = try #require(AudioFileConversion.fileType(named: type))
        let output = s.path("cut.out")
        let writer = try AudioFileWriter(path: output, fileType: fileType, dataFormat: encoder.outputFormat, magicCookie: encoder.magicCookie)
        writer.packetTableInfo = AudioFilePacketTableInfo(numberValidFrames: 0, primingFrames: Int32(encoder.primeInfo.leadingFrames), remainderFrames: 0)
        let reader = try ExtendedAudioFile(path: input, clientFormat: encoder.inputFormat)
        let buffer = try AudioPCMBuffer(format: encoder.inputFormat, frameCapacity: 4096)
        // Write about 3.7 seconds, then walk away.
        while writer.frameCount < Int64(3.7 * rate) {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            try writer.writePackets(try encoder.encode(buffer))
        }
        let written = writer.frameCount
        writer.abandon()

        let file = try AudioFile(path: output)
        #expect(file.dataFormat.formatID == encoder.outputFormat.formatID)
        #expect(file.totalFrames >= written - Int64(rate), "\(file.totalFrames) of \(written) frames readable")
        #expect(file.totalFrames <= written)
        let decoded = try decodeWithToolbox(output, trim: false)
        #expect(Int64(decoded.samples.count / 2) >= written - Int64(rate) - 2048)
        if haveFFmpeg {
            let probe = try #require(ffprobe(output), "ffprobe cannot read the cut file")
            #expect(probe.channels == 2)
            let n = try #require(ffmpegFrameCount(output, channels: 2))
            #expect(Int64(n) >= written - Int64(rate) - 2048, "ffmpeg decoded \(n) of \(written) frames")
        }
    }

    /// afconvert killed with SIGKILL mid-way (no handler can run) leaves nothing at the output
    /// path: the unfinished output is the temporary beside it (`.out.EXT.XXXXXX.partial`),
    /// and that is a readable file (the writer's checkpoints).
    @Test(.requires(afconvertMissing), arguments: [("WAVE", "LEI16", "wav", 4), ("flac", "flac", "flac", 0), ("Ogg", "opus", "opus", 0), ("caff", "LEI24", "caf", 6)])
    func killedAfconvertLeavesReadableFile(_ type: String, _ data: String, _ ext: String, _ bytesPerFrame: Int) throws {
        let tool = try #require(afconvertPath, "afconvert is not built next to the tests (swift build)")
        let s = Scratch("kill")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 48000 * 60, rate: 48000)
        let finalPath = s.path("out.\(ext)")
        let pid = try #require(spawn([tool, "--no-progress", "-f", type, "-d", data, input, finalPath]))
        // Kill once a few seconds of audio are on disk.
        var waited = 0
        func unfinished() -> String? { temporaries(in: s.dir).first.map { s.path($0) } }
        while (unfinished().map(fileSize) ?? 0) < 400_000 && waited < 20_000 {
            usleep(500)
            waited += 1
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let killed = (status & 0x7F) == SIGKILL
        #expect(killed, "afconvert finished before it could be killed")
        #expect(fileKind(finalPath) == 0, "a killed afconvert left a file at the output path")
        let output = try #require(unfinished(), "no unfinished temporary beside \(finalPath)")
        let size = fileSize(output)
        #expect(size > 0)
        let file = try AudioFile(path: output)
        #expect(file.totalFrames > 0)
        #expect(file.totalFrames < 48000 * 60)
        if bytesPerFrame > 0 {
            // PCM: the frames on disk (less a header) minus at most one second are readable.
            let onDisk = (size - 4096) / Int64(bytesPerFrame)
            #expect(file.totalFrames >= onDisk - 48000, "\(file.totalFrames) frames readable of about \(onDisk) on disk")
        }
        if haveFFmpeg {
            #expect(ffprobe(output) != nil, "ffprobe cannot read the killed writer's file")
            let n = try #require(ffmpegFrameCount(output, channels: 2))
            #expect(Int64(n) >= file.totalFrames - 48000 - 2048)
        }
    }

    /// WAVE becomes RF64 with a ds64 chunk once past the threshold (lowered for the test).
    @Test func rf64Switch() throws {
        let s = Scratch("rf64")
        defer { s.cleanup() }
        let format = AudioStreamBasicDescription.linearPCM(sampleRate: 8000, channels: 1, bitsPerChannel: 16)
        var options = AudioFileWriterOptions()
        options.rf64Threshold = 50_000
        options.checkpointSeconds = 0.25
        let small = s.path("small.wav"), big = s.path("big.wav")
        for (path, frames) in [(small, 10_000), (big, 40_001)] {
            let writer = try AudioFileWriter(path: path, fileType: .wave, dataFormat: format, options: options)
            var data = [UInt8]()
            for i in 0..<frames { let v = Int16(truncatingIfNeeded: i); data += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
            for start in stride(from: 0, to: frames, by: 1000) {
                let n = min(1000, frames - start)
                try writer.writePackets(AudioPacketBatch(data: Array(data[(start * 2)..<((start + n) * 2)]), packetCount: n))
            }
            try writer.close()
            let file = try AudioFile(path: path)
            #expect(file.fileFormat == (frames * 2 > 50_000 ? AudioFileType.rf64 : .wave))
            #expect(file.validFrames == Int64(frames))
            let samples = try decodeInt32(path)
            #expect(samples.enumerated().allSatisfy { $0.element >> 16 == Int32(Int16(truncatingIfNeeded: $0.offset)) })
            if haveFFmpeg {
                let probe = try #require(ffprobe(path))
                #expect(probe.codec == "pcm_s16le")
                #expect(ffmpegFrameCount(path, channels: 1) == frames)
            }
        }
    }
}

@Suite struct AFConvertCommandLineTests {
    func run(_ args: String) -> Int32 {
        guard let tool = afconvertPath else { return -1 }
        return shell("'\(tool)' --no-progress \(args) >/dev/null 2>&1").status
    }

    @Test(.requires(afconvertMissing)) func badFlagsAndImpossibleFormatsFail() throws {
        try TestResource.require(afconvertMissing)
        let s = Scratch("cli")
        defer { s.cleanup() }
        let input = s.path("in.wav")
        try writeTestSignal(input, frames: 4410)
        #expect(run("--bogus '\(input)' '\(s.path("x.wav"))'") == 2)
        #expect(run("-d LEI17 '\(input)' '\(s.path("x.wav"))'") == 2)
        #expect(run("-f NOPE '\(input)' '\(s.path("x.wav"))'") == 2)
        #expect(run("-b notanumber '\(input)' '\(s.path("x.wav"))'") == 2)
        #expect(run("'\(input)'  '\(s.path("x.unknownext"))'") == 1)
        // A container that cannot hold the format: error, and no file left behind.
        #expect(run("-f WAVE -d aac '\(input)' '\(s.path("aac.wav"))'") == 1)
        #expect(fileSize(s.path("aac.wav")) == -1)
        #expect(run("-f AIFF -d LEI16 '\(input)' '\(s.path("le.aiff"))'") == 1)
        #expect(run("-f flac -d alac '\(input)' '\(s.path("x.flac"))'") == 1)
        #expect(run("-d aach '\(input)' '\(s.path("he.m4a"))'") == 1)
        // Unwritable path, unreadable input.
        #expect(run("'\(input)' /nonexistent-dir/out.wav") == 1)
        #expect(run("'\(s.path("missing.wav"))' '\(s.path("y.wav"))'") == 1)
        // The --decode shortcut writes PCM.
        #expect(run("-f m4af -d aac '\(input)' '\(s.path("a.m4a"))'") == 0)
        #expect(run("--decode '\(s.path("a.m4a"))' '\(s.path("back.wav"))'") == 0)
        let back = try AudioFile(path: s.path("back.wav"))
        #expect(back.dataFormat.isPCM && back.dataFormat.bitsPerChannel == 16)
        #expect(back.validFrames == 4410)
        // Rate and channel changes.
        #expect(run("-f caff -d LEI16@22050 -c 1 '\(input)' '\(s.path("r.caf"))'") == 0)
        let r = try AudioFile(path: s.path("r.caf"))
        #expect(r.dataFormat.sampleRate == 22050 && r.dataFormat.channelsPerFrame == 1)
        #expect(abs(r.validFrames - 2205) <= 1)
    }
}

@Suite struct CorpusConversionTests {
    /// Corpus files (read in place) convert to FLAC and M4A with their valid frame count kept.
    @Test(.requires(TestResource.corpusMissing)) func corpusFilesConvert() throws {
        let root = try TestResource.corpusRoot()
        let s = Scratch("corpus")
        defer { s.cleanup() }
        var picked: [String] = []
        for suffix in [".mp3", ".flac", ".wav", ".m4a", ".ogg", ".opus", ".aiff", ".caf"] {
            if let f = Corpus.audioFiles().first(where: { path in
                path.lowercased().hasSuffix(suffix) && (try? AudioFile(path: root + "/" + path)).map { $0.validFrames > 1000 && $0.dataFormat.channelsPerFrame <= 2 } == true
            }) { picked.append(f) }
        }
        #expect(!picked.isEmpty)
        for rel in picked {
            let source = try AudioFile(path: root + "/" + rel)
            for (type, ext) in [("flac", "flac"), ("m4af", "m4a")] {
                let out = s.path("c.\(ext)")
                var settings = AudioFileConversionSettings()
                settings.fileType = AudioFileConversion.fileType(named: type)
                try AudioFileConversion.convert(input: root + "/" + rel, output: out, settings: settings)
                let file = try AudioFile(path: out)
                #expect(file.validFrames == source.validFrames, "\(rel) -> \(type): \(file.validFrames) of \(source.validFrames)")
                #expect(Int64(try decodeFloat(out).count) == source.validFrames * Int64(source.dataFormat.channelsPerFrame))
            }
        }
    }
}
