import CALSA
import CFFmpeg
import CPulseAudio
import Testing

/// The C libraries the playback and recording layers build on are installed and link.
@Suite struct SystemLibraryTests {
    @Test func ffmpegHasTheDecodersTheParsersFeed() {
        #expect(avcodec_version() >> 16 >= 59, "libavcodec 59 (FFmpeg 5) or newer")
        for id in [AV_CODEC_ID_MP3, AV_CODEC_ID_AAC, AV_CODEC_ID_FLAC, AV_CODEC_ID_ALAC, AV_CODEC_ID_OPUS, AV_CODEC_ID_VORBIS] {
            #expect(avcodec_find_decoder(id) != nil, "decoder \(String(cString: avcodec_get_name(id)))")
        }
        #expect(oat_averror_eof() < 0)
    }

    @Test func pulseAndALSALink() {
        #expect(String(cString: pa_get_library_version()).first?.isNumber == true)
        #expect(String(cString: snd_asoundlib_version()).first?.isNumber == true)
    }
}
