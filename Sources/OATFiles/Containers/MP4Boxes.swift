import OATCore

/// Shared helpers for reading ISO base media (MP4) boxes.
enum MP4 {
    static let component = "MP4 parser"

    /// A box header: type, total size (nil = runs to the end of the enclosing space) and header
    /// length (8, 16 with a 64-bit size; a `uuid` box's 16-byte user type is not included).
    struct BoxHeader {
        var type: FourCC
        var size: Int64?
        var headerSize: Int
    }

    /// Reads a box header at the reader's position. Validates only what the header itself says.
    static func readHeader(_ r: inout ByteReader) throws -> BoxHeader {
        let at = r.absoluteOffset
        let size32 = try r.u32be()
        let type = try r.fourCC()
        switch size32 {
        case 0:
            return BoxHeader(type: type, size: nil, headerSize: 8)
        case 1:
            let large = try r.u64be()
            guard large >= 16, large <= UInt64(Int64.max >> 2) else {
                throw invalidData(component, "box '\(type)' has an invalid 64-bit size \(large)", at: at)
            }
            return BoxHeader(type: type, size: Int64(large), headerSize: 16)
        default:
            guard size32 >= 8 else {
                throw invalidData(component, "box '\(type)' has size \(size32), smaller than its 8-byte header", at: at)
            }
            return BoxHeader(type: type, size: Int64(size32), headerSize: 8)
        }
    }

    /// A box fully inside a buffer: its type, payload (after the header) and the payload's
    /// absolute offset.
    struct Box {
        var type: FourCC
        var payload: UnsafeRawBufferPointer
        var payloadOffset: Int64
        /// Absolute offset of the box header.
        var offset: Int64

        /// A reader over the payload.
        var reader: ByteReader { ByteReader(payload, baseOffset: payloadOffset) }
    }

    /// The child boxes of `bytes` (a box payload at absolute offset `base`), in order. A child
    /// whose size runs past its parent is an error naming it; size 0 runs to the parent's end.
    /// With `lenient`, a child cut off by the end of `bytes` ends the list instead (a file
    /// truncated inside its `moov`).
    static func children(_ bytes: UnsafeRawBufferPointer, base: Int64, lenient: Bool = false) throws -> [Box] {
        var boxes: [Box] = []
        var r = ByteReader(bytes, baseOffset: base)
        while r.remaining >= 8 {
            let start = r.position
            let header: BoxHeader
            do { header = try readHeader(&r) } catch is NeedMoreData {
                if lenient { break }
                throw invalidData(component, "box header cut off inside its parent", at: base + Int64(start))
            }
            let size = header.size ?? Int64(bytes.count - start)
            if lenient && size > Int64(bytes.count - start) { break }
            guard size >= Int64(header.headerSize), size <= Int64(bytes.count - start) else {
                throw invalidData(component, "box '\(header.type)' of \(size) bytes runs past the end of its parent (\(bytes.count - start) bytes left)", at: base + Int64(start))
            }
            let payload = UnsafeRawBufferPointer(rebasing: bytes[(start + header.headerSize)..<(start + Int(size))])
            boxes.append(Box(type: header.type, payload: payload, payloadOffset: base + Int64(start + header.headerSize), offset: base + Int64(start)))
            r.position = start + Int(size)
        }
        return boxes
    }

    /// The first child of type `type`, if any.
    static func child(_ bytes: UnsafeRawBufferPointer, base: Int64, _ type: FourCC) throws -> Box? {
        try children(bytes, base: base).first { $0.type == type }
    }

    /// Runs `body` on a reader over the box payload; running out of bytes inside a complete box
    /// is reported as the box being too short.
    static func read<T>(_ box: Box, _ body: (inout ByteReader) throws -> T) throws -> T {
        var r = box.reader
        do { return try body(&r) } catch is NeedMoreData {
            throw invalidData(component, "box '\(box.type)' (\(box.payload.count) bytes) is shorter than its contents", at: box.offset)
        }
    }

    /// Checks a table's entry count against the limits and the bytes present, before any
    /// allocation sized by it.
    static func checkEntries(_ count: UInt32, entryBytes: Int, in r: ByteReader, box: String, limits: ParserLimits) throws -> Int {
        try InputArithmetic(component, at: r.absoluteOffset)
            .allocationCount(count, bytesEach: entryBytes, available: r.remaining, limit: limits.maximumTableEntries, "'\(box)' entry count")
    }
}
