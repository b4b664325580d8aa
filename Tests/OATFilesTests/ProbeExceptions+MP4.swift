extension CorpusProbeTests {
    /// Corpus files of this container family where we knowingly differ from ffprobe, with why.
    static let mp4Exceptions: [String: String] = [
        "tinytag-samples/mvhd_version_1.m4a":
            "AudioSpecificConfig signals SBR explicitly (object type 5, 22.05 -> 44.1 kHz): HE-AAC 'aach'; ffprobe names no profile since the file has no packets to decode",
        "tinytag-samples/zero_value_properties.m4a":
            "the 'esds' box's type is zeroed, so there is no decoder configuration: we refuse the track; ffprobe guesses AAC with 0 channels",
    ]
}
