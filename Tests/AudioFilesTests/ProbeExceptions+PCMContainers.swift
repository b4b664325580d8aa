extension CorpusProbeTests {
    /// Corpus files of this container family where we knowingly differ from ffprobe, with why.
    static let pcmContainerExceptions: [String: String] = [:]
}
