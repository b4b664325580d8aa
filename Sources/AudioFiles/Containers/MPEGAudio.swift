import AudioCore

/// Placeholder until the MPEG audio / ADTS parser lands.
struct MPEGAudioParser: ContainerParser {
    let hint: AudioFileType?
    init(hint: AudioFileType?) { self.hint = hint }
    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        throw unsupported("MPEG audio parser", "not implemented yet", at: offset)
    }
    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {}
}
