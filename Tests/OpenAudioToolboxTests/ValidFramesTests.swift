import OATTestSupport
import OpenAudioToolbox
import Testing

/// Where a container carries gapless information (LAME tag, edit list, iTunSMPB, pakt, Opus
/// pre-skip, Ogg granules), afinfo's valid_frames equals FFmpeg's decoded frame count, and our own
/// trimmed decode produces exactly valid_frames.
@Suite struct ValidFramesTests {
    static let rows = Corpus.probeRows().filter { $0.file.hasPrefix("ffmpeg-generated/") && ($0.int("n_audio_streams") ?? 0) > 0 }

    /// Where FFmpeg 5.1 itself does not apply all of the container's gapless information, the
    /// exact count and why (see ffmpeg-generated/MANIFEST.md).
    static let overrides: [String: (frames: Int64, reason: String)] = [
        "ffmpeg-generated/m4a/aac_faststart.m4a": (132300, "FFmpeg 5.1 applies only the start of the edit list (133120)"),
        "ffmpeg-generated/m4a/aac_moov_at_end.m4a": (132300, "FFmpeg 5.1 applies only the start of the edit list (133120)"),
        "ffmpeg-generated/m4a/aac_mono_8k.m4a": (24000, "FFmpeg 5.1 applies only the start of the edit list (24576)"),
        "ffmpeg-generated/m4a/mp3_in_mp4.mp4": (132300, "FFmpeg 5.1 applies only the start of the edit list (132527)"),
        "ffmpeg-generated/m4a/opus_in_mp4.mp4": (144000, "FFmpeg 5.1 applies only the pre-skip from the edit list (144648)"),
        "ffmpeg-generated/ogg/chained_vorbis_st_then_mono8k.ogg": (-1, "chained: the packet table covers the last link only"),
        "ffmpeg-generated/ogg/chained_opus_st_then_mono.opus": (-1, "chained: the packet table covers the last link only; FFmpeg fails past the link"),
    ]

    /// The argument list comes from the corpus: it must not be empty where the corpus is.
    @Test(.requires(TestResource.corpusMissing)) func corpusListIsNotEmpty() throws {
        _ = try TestResource.corpusRoot()
        #expect(!Self.rows.isEmpty, "no ffprobe rows for ffmpeg-generated files")
    }

    @Test(arguments: rows.map(\.file))
    func validFramesMatchDecodedFrames(_ file: String) throws {
        let row = try #require(Self.rows.first { $0.file == file })
        let path = Corpus.root! + "/" + file
        let audio = try AudioFile(path: path)
        let ffmpegFrames = try #require(row.int("decoded_frames"), "\(file): ffprobe.tsv has no decoded_frames")
        let override = Self.overrides[file]
        if let override, override.frames == -1 {
            // Documented (overrides): no single count to compare; the file must still open and decode.
            print("\(file): \(override.reason)")
            _ = try ExtendedAudioFile(path: path)
            return
        }
        let trimmedByFFmpeg = Int64(ffmpegFrames) != audio.totalFrames
        if trimmedByFFmpeg || audio.packetTableInfo != nil || override != nil {
            let expected = override?.frames ?? Int64(ffmpegFrames)
            #expect(audio.validFrames == expected, "\(file): valid \(audio.validFrames), expected \(expected) (ffmpeg \(ffmpegFrames), total \(audio.totalFrames), table \(String(describing: audio.packetTableInfo)))")
        }
        // Our own decode yields exactly the valid frames (an open error is a failure).
        let reader = try ExtendedAudioFile(path: path)
        let buffer = try AudioPCMBuffer(format: reader.clientFormat, frameCapacity: 8192)
        var frames: Int64 = 0
        while true {
            let n = try reader.read(into: buffer)
            if n == 0 { break }
            frames += Int64(n)
        }
        #expect(frames == audio.validFrames, "\(file): decoded \(frames) of \(audio.validFrames) valid frames")
    }
}
