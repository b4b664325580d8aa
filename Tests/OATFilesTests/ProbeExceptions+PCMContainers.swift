extension CorpusProbeTests {
    /// Corpus files of this container family where we knowingly differ from ffprobe, with why.
    static let pcmContainerExceptions: [String: String] = [
        "ffmpeg-generated/wav/ima_adpcm_st.wav": "ffmpeg's demuxer groups several IMA ADPCM blocks into one packet; our packets are the 1024-byte blocks (131 = 133227 frames / 1017)",
        "ffmpeg-generated/wav/ms_adpcm_st.wav": "ffmpeg's demuxer groups several MS ADPCM blocks into one packet; our packets are the 1024-byte blocks (131 = 132572 frames / 1012)",
        "tinytag-samples/adpcm.wav": "ffmpeg's demuxer groups two ADPCM blocks into one packet; our packets are the blocks of blockAlign bytes",
        "scipy-wavfile-data/test-8000Hz-le-3ch-5S-36bit.wav": "ffmpeg has no codec for 36-bit PCM and counts one demuxer block; we read 5 frames of 36 bits in 5-byte containers",
        "scipy-wavfile-data/test-8000Hz-le-3ch-5S-45bit.wav": "ffmpeg has no codec for 45-bit PCM and counts one demuxer block; we read 5 frames of 45 bits in 6-byte containers",
        "scipy-wavfile-data/test-8000Hz-le-3ch-5S-53bit.wav": "ffmpeg has no codec for 53-bit PCM and counts one demuxer block; we read 5 frames of 53 bits in 7-byte containers",
    ]
}
