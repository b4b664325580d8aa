import AudioCore

/// Placeholder until the AUParser lands: reports the container as unsupported.
struct AUParser: ContainerParser {
    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        throw unsupported("AUParser", "not implemented yet", at: offset)
    }
    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {}
}
