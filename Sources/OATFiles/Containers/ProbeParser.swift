import OATCore

/// The container families the stream can parse.
enum ContainerKind: Equatable {
    case wave, aiff, caf, au, flac, ogg, mp4, mpeg

    /// The family a file type hint names.
    init?(hint: AudioFileType) {
        switch hint {
        case .wave, .rf64, .bw64: self = .wave
        case .aiff, .aifc: self = .aiff
        case .caf: self = .caf
        case .next: self = .au
        case .flac: self = .flac
        case .ogg: self = .ogg
        case .mpeg4, .m4a: self = .mp4
        case .mp1, .mp2, .mp3, .aacADTS: self = .mpeg
        default: return nil
        }
    }

    /// Recognises a container from its first bytes (up to 12), or nil.
    static func sniff(_ b: UnsafeRawBufferPointer) -> ContainerKind? {
        func tag(_ at: Int) -> FourCC? { b.count >= at + 4 ? FourCC(b[at], b[at + 1], b[at + 2], b[at + 3]) : nil }
        switch tag(0) {
        case "RIFF", "RIFX", "RF64", "BW64": return .wave
        case "FORM": return .aiff
        case "caff": return .caf
        case ".snd": return .au
        case "fLaC": return .flac
        case "OggS": return .ogg
        default: break
        }
        switch tag(4) {
        case "ftyp", "moov", "mdat", "free", "skip", "wide", "moof", "styp", "pnot": return .mp4
        default: return nil
        }
    }
}

/// The first parser of every stream: skips and reads leading ID3v2 tags, recognises the
/// container from its magic bytes (or the type hint for raw MPEG audio and ADTS), then hands
/// every later step to that container's parser.
struct ProbeParser: ContainerParser {
    let hint: AudioFileType?
    var inner: (any ContainerParser)?
    var id3: ID3v2Walker?

    init(hint: AudioFileType?) { self.hint = hint }

    /// The ASF header object GUID that starts WMA/WMV files.
    static let asfHeaderGUID: [UInt8] = [0x30, 0x26, 0xB2, 0x75, 0x8E, 0x66, 0xCF, 0x11, 0xA6, 0xD9, 0x00, 0xAA, 0x00, 0x62, 0xCE, 0x6C]

    static func make(_ kind: ContainerKind) -> any ContainerParser {
        switch kind {
        case .wave: WAVParser()
        case .aiff: AIFFParser()
        case .caf: CAFParser()
        case .au: AUParser()
        case .flac: FLACParser()
        case .ogg: OggParser()
        case .mp4: MP4Parser()
        case .mpeg: MPEGAudioParser()
        }
    }

    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        if inner != nil { return try inner!.parse(input, at: offset, isEOF: isEOF, &out) }
        if var walker = id3 {
            if offset < walker.tagEnd {
                let status = try walker.step(input, at: offset, isEOF: isEOF, &out)
                id3 = walker.done ? nil : walker
                return status
            }
            id3 = nil
        }
        if input.count < 16 && !isEOF { return .needMore(16) }
        if isEOF && input.isEmpty { return .finished }
        if input.count >= 3 && input[0] == 0x49 && input[1] == 0x44 && input[2] == 0x33 {
            if let (walker, size) = try ID3v2Walker.header(input, at: offset) {
                id3 = walker
                return .consumed(size)
            }
        }
        if input.count >= 16, Array(input[0..<16]) == ProbeParser.asfHeaderGUID {
            throw unsupported("AudioFileStream", "this is an ASF (WMA/WMV) file: the container is not supported", at: offset)
        }
        // Every family but raw MPEG audio and ADTS has magic bytes, so the bytes decide and the hint
        // is only a hint (Apple's): a WAVE or MPEG hint on ADTS bytes still parses ADTS. Only an MP4
        // hint is followed without magic (a file may open with a box the sniffer does not list).
        let hinted = hint.flatMap(ContainerKind.init(hint:))
        let kind = ContainerKind.sniff(input) ?? (hinted == .mp4 ? .mp4 : .mpeg)
        inner = Self.make(kind)
        return try inner!.parse(input, at: offset, isEOF: isEOF, &out)
    }

    mutating func seek(toPacket packet: Int64, _ out: inout ParseOutput) throws(AudioError) -> AudioFileStreamSeekResult {
        guard inner != nil else {
            throw AudioError(.invalidState, component: "AudioFileStream", "cannot seek before the container is recognised")
        }
        return try inner!.seek(toPacket: packet, &out)
    }

    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {
        if inner != nil { inner!.resume(at: offset, packetIndex: packetIndex, &out) }
        id3 = nil
    }

    func frame(forPacket packet: Int64) -> Int64? { inner?.frame(forPacket: packet) }
}
