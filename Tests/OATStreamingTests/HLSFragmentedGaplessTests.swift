import OATCore
import OATFiles
import OATStreaming
import OATTestSupport
import Testing

/// Issue 19: where an fMP4 (CMAF) rendition states its priming and length, playback honours it.
/// FFmpeg's init section has an edit list of media time 0 and duration 0; an Apple encoder's says
/// media time 2 112 (or 1 024 for FFmpeg's AAC) and the presentation's duration. The test writes
/// that edit list into FFmpeg's init section (`HLSInitEditList`) and plays the playlist through
/// the streaming player to a WAV: exactly the source's 529 200 frames, aligned with the source at
/// lag 0. Without an edit list it stays FFmpeg's 530 432 (nothing stated, nothing trimmed).
@Suite(.requires(TestResource.ffmpegMissing)) struct HLSFragmentedGaplessTests {
    /// Rewrites the first `elst` entry of an init section in place: `duration` in the movie
    /// timescale (from `mvhd`), `mediaTime` in the track's.
    static func setEditList(_ bytes: inout [UInt8], duration: UInt32, mediaTime: Int32) throws {
        func find(_ type: String) -> Int? {
            let t = Array(type.utf8)
            return bytes.indices.dropLast(4).first { bytes[$0] == t[0] && bytes[$0 + 1] == t[1] && bytes[$0 + 2] == t[2] && bytes[$0 + 3] == t[3] }
        }
        let elst = try #require(find("elst"), "FFmpeg's init section has no edit list")
        try #require(bytes[elst + 4] == 0, "elst version 0")
        let count = Int(bytes[elst + 8]) << 24 | Int(bytes[elst + 9]) << 16 | Int(bytes[elst + 10]) << 8 | Int(bytes[elst + 11])
        try #require(count >= 1)
        func put(_ at: Int, _ v: UInt32) { for k in 0..<4 { bytes[at + k] = UInt8(truncatingIfNeeded: v >> (24 - 8 * k)) } }
        put(elst + 12, duration)
        put(elst + 16, UInt32(bitPattern: mediaTime))
    }

    /// The movie timescale of an init section (`mvhd` version 0).
    static func movieTimescale(_ bytes: [UInt8]) throws -> UInt32 {
        let t = Array("mvhd".utf8)
        let i = try #require(bytes.indices.dropLast(4).first { bytes[$0] == t[0] && bytes[$0 + 1] == t[1] && bytes[$0 + 2] == t[2] && bytes[$0 + 3] == t[3] })
        try #require(bytes[i + 4] == 0)
        return (12..<16).reduce(0) { $0 << 8 | UInt32(bytes[i + 4 + $1]) }
    }

    static func play(_ playlist: String, _ out: String) async throws -> [Float] {
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: wavOutput(out), onEvent: log.handler)
        let task = log.attach(player)
        await player.play(playlist)
        #expect(await log.waitFor(60, isStopped))
        await player.stop()
        task.cancel()
        #expect(log.stopReason == .ended)
        return try readFloatWAV(out).samples
    }

    @Test(arguments: [true, false])
    func editListInTheInitSectionTrimsPrimingAndPadding(_ stated: Bool) async throws {
        let dir = try ScratchDirectory("hls-fmp4-gapless")
        defer { dir.remove() }
        let wav = dir.path + "/source.wav"
        try #require(makeFixture(wav, rate: 44_100, channels: 1, seconds: 12, codec: ["-c:a", "pcm_f32le"]))
        let playlist = dir.path + "/aac.m3u8"
        try #require(runFFmpeg(["-i", wav, "-c:a", "aac", "-b:a", "128k", "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod",
                                "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4",
                                "-hls_segment_filename", dir.path + "/seg-%d.m4s", playlist]))
        let initPath = dir.path + "/init.mp4"
        if stated {
            var initSection = try #require(Corpus.read(initPath))
            let scale = try Self.movieTimescale(initSection)
            // 12.000 s of presentation after FFmpeg's AAC encoder's 1 024 priming frames.
            try Self.setEditList(&initSection, duration: 12 * scale, mediaTime: 1024)
            #expect(writeFile(initPath, initSection))
        }
        let played = try await Self.play(playlist, dir.path + "/out.wav")
        let source = try decodeWithToolbox(wav).samples
        if stated {
            #expect(played.count == 529_200, "played \(played.count) frames for the source's 529 200")
            let m = try #require(lossyAlign(recording: played, reference: source, channels: 1))
            #expect(m.offset == 0, "aligned at lag \(m.offset)")
            #expect(m.snr >= 25, "SNR \(m.snr) dB")
            print("fMP4 HLS with an edit list: \(played.count) frames, lag \(m.offset), SNR \(m.snr) dB")
        } else {
            #expect(played.count == 518 * 1024, "played \(played.count) frames: FFmpeg's decode, nothing stated")
        }
    }
}
