import OATCore

/// The facts `afinfo` reports about a file, computed from an ``AudioFile``.
public struct AudioFileSummary: Sendable, Equatable {
    /// Container type code, e.g. `WAVE`, `caff`, `MPG3`.
    public var fileType: String
    /// Container display name.
    public var fileTypeName: String
    /// The data format.
    public var format: AudioStreamBasicDescription
    /// Packets in the file.
    public var packetCount: Int64
    /// Frames the packets decode to.
    public var totalFrames: Int64
    /// Encoder delay frames.
    public var primingFrames: Int64
    /// Padding frames at the end.
    public var remainderFrames: Int64
    /// Frames of real audio.
    public var validFrames: Int64
    /// Seconds of real audio.
    public var durationSeconds: Double
    /// True when the duration is an estimate rather than counted.
    public var durationIsEstimated: Bool
    /// Bits per second.
    public var bitRate: UInt32
    /// Offset of the audio data.
    public var dataOffset: Int64
    /// Bytes of audio data.
    public var audioDataByteCount: Int64
    /// Largest packet.
    public var maximumPacketSize: UInt32
    /// Largest packet the format allows.
    public var packetSizeUpperBound: UInt32
    /// Magic cookie size in bytes (0 when none).
    public var magicCookieSize: Int
    /// Channel layout description, or nil.
    public var channelLayout: String?
    /// Tags.
    public var tags: [String: String]
    /// Non-fatal problem found while reading.
    public var warning: String?
    /// Frames a full decode produced after trimming, when a decode was run (`afinfo --decode`).
    public var decodedFrames: Int64?

    /// Summarises an open file.
    public init(_ file: AudioFile) {
        fileType = file.fileFormat.description
        fileTypeName = file.fileFormat.displayName
        format = file.dataFormat
        packetCount = file.packetCount
        totalFrames = file.totalFrames
        if let p = file.packetTableInfo {
            primingFrames = Int64(p.primingFrames)
            remainderFrames = Int64(p.remainderFrames)
            validFrames = p.numberValidFrames
        } else {
            primingFrames = 0
            remainderFrames = 0
            validFrames = file.totalFrames
        }
        durationSeconds = format.sampleRate > 0 ? Double(validFrames) / format.sampleRate : 0
        durationIsEstimated = file.warning != nil
        bitRate = file.bitRate
        dataOffset = file.dataOffset
        audioDataByteCount = file.audioDataByteCount
        maximumPacketSize = file.maximumPacketSize
        packetSizeUpperBound = file.packetSizeUpperBound
        magicCookieSize = file.magicCookie?.count ?? 0
        channelLayout = file.channelLayout?.description
        tags = file.infoDictionary
        warning = file.warning?.description
    }

    /// The report in the layout of macOS `afinfo`. Text that came from the file or the
    /// command line (name, tags, four-character codes) is made terminal-safe: control
    /// characters and bidirectional overrides print as visible escapes (`\x1B`), so a tag
    /// cannot clear the screen, retitle the terminal or forge a line.
    public func text(fileName: String) -> String {
        var s = "File:           \(terminalSafe(fileName))\n"
        s += "File type ID:   \(terminalSafe(fileType))\n"
        s += "Num Tracks:     1\n----\n"
        s += "Data format:    \(terminalSafe(format.description))\n"
        s += "                Channel layout: \(terminalSafe(channelLayout ?? "no channel layout."))\n"
        s += "estimated duration: \(formatFixed(durationSeconds, 6)) sec\n"
        s += "audio bytes: \(audioDataByteCount)\n"
        s += "audio packets: \(packetCount)\n"
        s += "bit rate: \(bitRate) bits per second\n"
        s += "packet size upper bound: \(packetSizeUpperBound)\n"
        s += "maximum packet size: \(maximumPacketSize)\n"
        s += "audio data file offset: \(dataOffset)\n"
        if magicCookieSize > 0 { s += "magic cookie: \(magicCookieSize) bytes\n" }
        s += "audio \(validFrames) valid frames + \(primingFrames) priming + \(remainderFrames) remainder = \(validFrames + primingFrames + remainderFrames)\n"
        if let decodedFrames { s += "decoded frames: \(decodedFrames)\n" }
        for key in tags.keys.sorted() { s += "\(terminalSafe(key)): \(terminalSafe(tags[key]!))\n" }
        s += "----\n"
        return s
    }

    /// One JSON object with the fields `afinfo --json` prints.
    public var json: String {
        var fields: [(String, String)] = [
            ("file_type", jsonString(fileType)),
            ("file_type_name", jsonString(fileTypeName)),
            ("format_id", jsonString(format.formatID.description)),
            ("format_flags", String(format.formatFlags.rawValue)),
            ("sample_rate", jsonNumber(format.sampleRate)),
            ("channels", String(format.channelsPerFrame)),
            ("bits_per_channel", String(format.bitsPerChannel)),
            ("frames_per_packet", String(format.framesPerPacket)),
            ("bytes_per_packet", String(format.bytesPerPacket)),
            ("bytes_per_frame", String(format.bytesPerFrame)),
            ("packet_count", String(packetCount)),
            ("total_frames", String(totalFrames)),
            ("priming_frames", String(primingFrames)),
            ("remainder_frames", String(remainderFrames)),
            ("valid_frames", String(validFrames)),
            ("duration_seconds", jsonNumber(durationSeconds)),
            ("duration_is_estimated", durationIsEstimated ? "true" : "false"),
            ("bit_rate", String(bitRate)),
            ("data_offset", String(dataOffset)),
            ("audio_data_byte_count", String(audioDataByteCount)),
            ("maximum_packet_size", String(maximumPacketSize)),
            ("packet_size_upper_bound", String(packetSizeUpperBound)),
            ("magic_cookie_size", String(magicCookieSize)),
            ("channel_layout", channelLayout.map(jsonString) ?? "null"),
        ]
        let tagText = tags.keys.sorted().map { "\(jsonString($0)): \(jsonString(tags[$0]!))" }.joined(separator: ", ")
        fields.append(("tags", "{\(tagText)}"))
        fields.append(("warning", warning.map(jsonString) ?? "null"))
        if let decodedFrames { fields.append(("decoded_frames", String(decodedFrames))) }
        return "{" + fields.map { "\(jsonString($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }
}

/// A JSON string literal for `s`. Besides what JSON requires, the characters a terminal acts on
/// or that reorder text are escaped (DEL and C1 controls such as CSI U+009B, bidirectional
/// overrides and isolates such as U+202E, line and paragraph separators): valid JSON either way,
/// but text from a file's tags cannot steer the terminal that shows `afinfo --json`.
public func jsonString(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            let v = u.value
            if isTerminalControl(v) || v == 0x2028 || v == 0x2029 || v == 0x200E || v == 0x200F || v == 0x061C {
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(u)
            }
        }
    }
    return out + "\""
}

func jsonNumber(_ d: Double) -> String {
    guard d.isFinite else { return "null" }
    if d == d.rounded() && abs(d) < 1e15 { return String(Int64(d)) }
    return String(d)
}

/// `value` with exactly `digits` digits after the point.
func formatFixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return String(value) }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    // A crafted file's duration (2^62 frames) scaled past Int64: whole units only, or Swift's own
    // notation past Int64 itself; never a trapping conversion.
    guard abs(value) * scale < 9.0e18 else {
        guard abs(value) < 9.0e18 else { return String(value) }
        return (value < 0 ? "-" : "") + "\(Int64(abs(value).rounded(.down)))" + (digits > 0 ? "." + String(repeating: "0", count: digits) : "")
    }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int64(scaled / scale)
    let frac = Int64(scaled) - whole * Int64(scale)
    var f = String(frac)
    while f.count < digits { f = "0" + f }
    return (value < 0 ? "-" : "") + "\(whole)" + (digits > 0 ? "." + f : "")
}
