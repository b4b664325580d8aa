import OATCore

/// Delivers a region of constant-size packets (PCM, mu-law, A-law, IMA4) as they arrive.
/// Shared by the chunked containers (WAV, AIFF, CAF, AU).
struct CBRDataRegion: Equatable {
    /// Bytes per packet (> 0).
    let bytesPerPacket: Int
    /// Bytes left in the region, or nil when it runs to the end of the input.
    var remaining: Int64?

    /// Largest run of bytes delivered in one step.
    static let maximumStep = 1 << 20

    /// True when the region has been delivered completely.
    var isDone: Bool { remaining == 0 }

    /// One step: emits whole packets from `input`. A trailing partial packet (at the end of
    /// the region or of the input) is skipped. Returns nil when the region is done.
    mutating func step(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) -> ParseStatus? {
        if remaining == 0 { return nil }
        let limit = remaining.map { Int(min($0, Int64(Self.maximumStep))) } ?? Self.maximumStep
        let usable = min(input.count, limit)
        let packets = usable / bytesPerPacket
        if packets > 0 {
            let n = packets * bytesPerPacket
            out.emitConstantPackets(UnsafeRawBufferPointer(rebasing: input[0..<n]), count: packets, fileOffset: offset)
            if let r = remaining { remaining = r - Int64(n) }
            return .consumed(n)
        }
        // Less than one packet at hand.
        if let r = remaining, r < Int64(bytesPerPacket) {
            // The region ends inside a packet: drop the fragment.
            remaining = 0
            return .skip(r)
        }
        if isEOF {
            remaining = 0
            return input.isEmpty ? nil : .consumed(input.count)
        }
        return .needMore(bytesPerPacket)
    }
}
