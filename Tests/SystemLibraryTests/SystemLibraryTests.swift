import COATALSA
import COATFFmpeg
import COATDeviceLazy
import COATPulseAudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The C libraries the playback and recording layers build on are installed and link.
@Suite struct SystemLibraryTests {
    @Test func ffmpegHasTheDecodersTheParsersFeed() {
        #expect(avcodec_version() >> 16 >= 59, "libavcodec 59 (FFmpeg 5) or newer")
        for id in [AV_CODEC_ID_MP3, AV_CODEC_ID_AAC, AV_CODEC_ID_FLAC, AV_CODEC_ID_ALAC, AV_CODEC_ID_OPUS, AV_CODEC_ID_VORBIS] {
            #expect(avcodec_find_decoder(id) != nil, "decoder \(String(cString: avcodec_get_name(id)))")
        }
        #expect(oat_averror_eof() < 0)
    }

    /// libpulse and libasound load on first use (COATDeviceLazy) and every function the package
    /// calls resolves: the loaders report no error, and the trampolines reach the libraries
    /// (their own texts, not the loader's fallbacks).
    @Test func pulseAndALSALoadAndResolve() {
        #expect(oat_pulse_load() == nil, "\(oat_pulse_load().map { String(cString: $0) } ?? "")")
        #expect(oat_alsa_load() == nil, "\(oat_alsa_load().map { String(cString: $0) } ?? "")")
        #expect(oat_pulse_is_loaded() == 1 && oat_alsa_is_loaded() == 1)
        #expect(String(cString: pa_get_library_version()).first?.isNumber == true)
        #expect(String(cString: snd_asoundlib_version()).first?.isNumber == true)
        #expect(String(cString: pa_strerror(Int32(PA_ERR_ACCESS.rawValue))) == "Access denied")
        #expect(String(cString: snd_strerror(-EINVAL)) == "Invalid argument")
        // A private main loop made, its API reached, and freed: calls through the trampolines.
        let ml = pa_mainloop_new()
        #expect(ml != nil && pa_mainloop_get_api(ml) != nil)
        pa_mainloop_free(ml)
        var hw: OpaquePointer?
        #expect(snd_pcm_hw_params_malloc(&hw) == 0 && hw != nil)
        snd_pcm_hw_params_free(hw)
    }
}
