extension CorpusProbeTests {
    /// Corpus files of this container family where we knowingly differ from ffprobe, with why.
    static let mpegExceptions: [String: String] = [
        "minimp3-vectors/l1-fl1.bit": "ffprobe drops the first frame (its packets start at byte 576); we deliver every frame from byte 0 (MANIFEST finding 2)",
        "minimp3-vectors/l1-fl2.bit": "ffprobe drops the first two frames (its packets start at byte 836); we deliver every frame from byte 0 (MANIFEST finding 2)",
        "minimp3-vectors/l2-fl10.bit": "ffprobe drops the first frame (its packets start at byte 864); we deliver every frame from byte 0 (MANIFEST finding 2)",
        "minimp3-vectors/l2-fl11.bit": "ffprobe drops the first frame (its packets start at byte 627); we deliver every frame from byte 0 (MANIFEST finding 2)",
        "minimp3-vectors/l2-fl12.bit": "ffprobe drops the first frame (its packets start at byte 576); we deliver every frame from byte 0 (MANIFEST finding 2)",
        "minimp3-vectors/l3-nonstandard-he_44_48khz.bit": "the rate changes from 44.1 to 48 kHz after 410 frames; we deliver the 44.1 kHz stream (as minimp3's reference does) and skip the rest, ffprobe counts both parts and shows the last rate",
    ]
}
