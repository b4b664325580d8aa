import OATCore
import OATFiles
import OATNetwork
import OATTestSupport
import Testing

/// What gapless playback can reach for FFmpeg-segmented HLS (issue 19; docs/hls.md, "Gapless").
/// A 12.000 s AAC source cut into 2 s MPEG-TS segments decodes to 518 AAC frames = 530 432
/// frames: 1 024 priming and 208 padding frames that nothing in the playlist or the segments
/// states (EXTINF sums to the coded length, the first PTS is FFmpeg's 1.4 s mux delay, ADTS has no
/// delay field). FFmpeg's own decode of the playlist gives the same count; trimming would mean
/// guessing the encoder. This pins that figure, so a change in what is delivered is seen.
@Suite struct HLSGaplessTests {
    @Test func ffmpegTransportStreamSegmentsDecodeToFFmpegsFrameCount() throws {
        let dir = try ScratchDirectory("hls-gapless")
        defer { dir.remove() }
        let wav = dir.path + "/source.wav"
        try #require(makeFixture(wav, rate: 44_100, channels: 1, seconds: 12, codec: ["-c:a", "pcm_s16le"]))
        let playlist = dir.path + "/aac.m3u8"
        try #require(runFFmpeg(["-i", wav, "-c:a", "aac", "-b:a", "128k", "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod",
                                "-hls_segment_filename", dir.path + "/aac-%d.ts", playlist]))
        let source = HLSByteSource(url: playlist)
        _ = try source.open(at: 0)
        let drained = try DrainedSource(source)
        let decoded = try decodeElementary(drained.bytes, hint: .aacADTS, discontinuities: drained.discontinuities)
        let frames = decoded.samples.count / max(1, decoded.channels)
        let theirs = try #require(decodeWithFFmpeg(playlist))
        // ceil((529 200 + 1 024 priming) / 1 024) AAC frames of 1 024.
        #expect(frames == 518 * 1024)
        #expect(frames == theirs.count)
        // The playlist's duration is the coded length too: no true duration to trim the padding to.
        let extinf = try #require(source.duration)
        #expect(abs(extinf - Double(frames) / 44_100) < 0.001, "EXTINF sum \(extinf) s")
        print("HLS gapless figure: \(frames) frames decoded, FFmpeg \(theirs.count), source 529200, EXTINF \(extinf) s")
    }
}
