import AudioCore

/// Placeholder until the WAVParser lands: reports the container as unsupported.
struct WAVParser: ContainerParser {
    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        throw unsupported("WAVParser", "not implemented yet", at: offset)
    }
    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {}
}
