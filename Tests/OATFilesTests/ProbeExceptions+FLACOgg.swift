extension CorpusProbeTests {
    /// Corpus files of this container family where we knowingly differ from ffprobe, with why.
    static let flacOggExceptions: [String: String] = [
        "flac-test-files/uncommon/01 - changing samplerate.flac":
            "rate changes mid-stream: we report STREAMINFO (32 kHz), ffprobe the rate of later frames",
        "flac-test-files/uncommon/02 - increasing number of channels.flac":
            "channel count changes mid-stream: we report STREAMINFO, ffprobe the last frames' count",
        "flac-test-files/uncommon/03 - decreasing number of channels.flac":
            "channel count changes mid-stream: we report STREAMINFO, ffprobe the last frames' count",
        "flac-test-files/uncommon/10 - file starting at frame header.flac":
            "no fLaC header or STREAMINFO: not recognised as FLAC (fails cleanly, as the manifest allows)",
        "flac-test-files/uncommon/11 - file starting with unparsable data.flac":
            "junk then frames, no fLaC header: not recognised as FLAC (fails cleanly, as the manifest allows)",
        "tinytag-samples/empty_file.flac": "empty file: a clear error; ffprobe invents a stream with no parameters",
        "tinytag-samples/invalid_file.flac": "1-byte file: a clear error; ffprobe invents a stream with no parameters",
        "ffmpeg-generated/ogg/chained_vorbis_st_then_mono8k.ogg":
            "chained Ogg: we report the last link's format and only audio packets; ffprobe the first link's format and counts the second link's 3 header packets",
        "ffmpeg-generated/ogg/chained_opus_st_then_mono.opus":
            "chained Ogg: we report the last link's format (mono) and only audio packets; ffprobe the first link's and counts the second link's 2 header packets",
    ]
}
