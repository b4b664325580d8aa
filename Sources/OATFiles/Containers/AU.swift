import OATCore

/// NeXT/Sun `.snd`/`.au` files: a 24-byte big-endian header, an annotation, then samples.
struct AUParser: ContainerParser {
    static let component = "AU parser"
    var data: CBRDataRegion?
    var dataStart: Int64 = 0

    mutating func parse(_ input: UnsafeRawBufferPointer, at offset: Int64, isEOF: Bool, _ out: inout ParseOutput) throws -> ParseStatus {
        if data != nil {
            if let status = data!.step(input, at: offset, isEOF: isEOF, &out) { return status }
            return .finished
        }
        var r = ByteReader(input, baseOffset: offset)
        guard try r.fourCC() == ".snd" else { throw invalidData(Self.component, "missing .snd magic", at: offset) }
        let headerSize = try r.u32be()
        let dataSize = try r.u32be()
        let encoding = try r.u32be()
        let rate = try r.u32be()
        let channels = try r.u32be()
        guard headerSize >= 24, headerSize <= 1 << 20 else {
            throw invalidData(Self.component, "header size \(headerSize) is not between 24 and 1 MiB", at: offset + 4)
        }
        guard channels > 0, channels <= 1024 else { throw invalidData(Self.component, "channel count \(channels) out of range", at: offset + 20) }
        guard rate > 0 else { throw invalidData(Self.component, "sample rate is 0", at: offset + 16) }
        let format: AudioStreamBasicDescription
        switch encoding {
        case 1: format = .init(sampleRate: Double(rate), formatID: .ulaw, bytesPerPacket: channels, framesPerPacket: 1, bytesPerFrame: channels, channelsPerFrame: channels, bitsPerChannel: 8)
        case 27: format = .init(sampleRate: Double(rate), formatID: .alaw, bytesPerPacket: channels, framesPerPacket: 1, bytesPerFrame: channels, channelsPerFrame: channels, bitsPerChannel: 8)
        case 2, 3, 4, 5: format = .linearPCM(sampleRate: Double(rate), channels: channels, bitsPerChannel: 8 * (encoding - 1), isBigEndian: true)
        case 6: format = .linearPCM(sampleRate: Double(rate), channels: channels, bitsPerChannel: 32, isFloat: true, isBigEndian: true)
        case 7: format = .linearPCM(sampleRate: Double(rate), channels: channels, bitsPerChannel: 64, isFloat: true, isBigEndian: true)
        default: throw unsupported(Self.component, "encoding \(encoding) is not supported", at: offset + 12)
        }
        // The annotation (often text) runs from byte 24 to the data.
        let annotationLength = Int(headerSize) - 24
        var tags: [String: String] = [:]
        if annotationLength > 0 && annotationLength <= out.limits.maximumTagBytes {
            let text = try r.string(annotationLength)
            if !text.isEmpty { tags[InfoKey.comments] = text }
        }
        let start = offset + Int64(headerSize)
        out.set(\.fileFormat, .next, .fileFormat)
        out.set(\.dataFormat, format, .dataFormat)
        if dataSize != 0xFFFF_FFFF {
            out.set(\.audioDataByteCount, Int64(dataSize), .audioDataByteCount)
            out.set(\.audioDataPacketCount, Int64(dataSize) / Int64(format.bytesPerPacket), .audioDataPacketCount)
        }
        out.set(\.dataOffset, start, .dataOffset)
        if !tags.isEmpty { out.setTags(tags) }
        out.ready()
        dataStart = start
        data = CBRDataRegion(bytesPerPacket: Int(format.bytesPerPacket), remaining: dataSize == 0xFFFF_FFFF ? nil : Int64(dataSize))
        if annotationLength > out.limits.maximumTagBytes { return .skip(Int64(headerSize)) }
        return .consumed(Int(headerSize))
    }

    mutating func resume(at offset: Int64, packetIndex: Int64?, _ out: inout ParseOutput) {
        guard let d = data else { return }
        let total = out.info.audioDataByteCount
        data = CBRDataRegion(bytesPerPacket: d.bytesPerPacket, remaining: total.map { max(0, $0 - (offset - dataStart)) })
    }
}
