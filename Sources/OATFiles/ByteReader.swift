import OATCore

/// Thrown by ``ByteReader`` when the bytes at hand end before a read completes: the parse step
/// is retried once at least `needed` bytes (counted from the start of the step's input) are
/// buffered. This is not an error the user sees unless the input ends there.
struct NeedMoreData: Error {
    /// Bytes the step needs, counted from the start of its input.
    var needed: Int
}

/// A bounds-checked cursor over bytes; every read checks the remaining length and throws
/// ``NeedMoreData`` instead of trapping. Integers are read without alignment requirements.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    /// Index of the next byte to read, relative to `bytes`.
    var position: Int
    /// Offset of `bytes[0]` in the whole input (for error messages and file offsets).
    let baseOffset: Int64

    init(_ bytes: UnsafeRawBufferPointer, baseOffset: Int64 = 0, position: Int = 0) {
        self.bytes = bytes
        self.baseOffset = baseOffset
        self.position = position
    }

    var remaining: Int { bytes.count - position }
    var isAtEnd: Bool { position >= bytes.count }
    /// Absolute offset of the next byte.
    var absoluteOffset: Int64 { baseOffset + Int64(position) }

    /// Throws ``NeedMoreData`` unless `count` more bytes are available.
    func require(_ count: Int) throws(NeedMoreData) {
        if count < 0 || count > remaining {
            throw NeedMoreData(needed: position + max(0, count))
        }
    }

    func peekU8(at offset: Int = 0) throws(NeedMoreData) -> UInt8 {
        try require(offset + 1)
        return bytes[position + offset]
    }

    mutating func u8() throws(NeedMoreData) -> UInt8 {
        try require(1)
        defer { position += 1 }
        return bytes[position]
    }

    mutating func skip(_ count: Int) throws(NeedMoreData) {
        try require(count)
        position += count
    }

    /// Reads an unsigned integer of `T`'s size in the given byte order (no alignment needed).
    @inline(__always)
    mutating func integer<T: FixedWidthInteger & UnsignedInteger>(_: T.Type, bigEndian: Bool) throws(NeedMoreData) -> T {
        let size = MemoryLayout<T>.size
        try require(size)
        defer { position += size }
        let raw = bytes.loadUnaligned(fromByteOffset: position, as: T.self)
        return bigEndian ? T(bigEndian: raw) : T(littleEndian: raw)
    }

    mutating func u16be() throws(NeedMoreData) -> UInt16 { try integer(UInt16.self, bigEndian: true) }
    mutating func u16le() throws(NeedMoreData) -> UInt16 { try integer(UInt16.self, bigEndian: false) }

    mutating func u24be() throws(NeedMoreData) -> UInt32 {
        try require(3)
        defer { position += 3 }
        return UInt32(bytes[position]) << 16 | UInt32(bytes[position + 1]) << 8 | UInt32(bytes[position + 2])
    }

    mutating func u32be() throws(NeedMoreData) -> UInt32 { try integer(UInt32.self, bigEndian: true) }
    mutating func u32le() throws(NeedMoreData) -> UInt32 { try integer(UInt32.self, bigEndian: false) }
    mutating func u64be() throws(NeedMoreData) -> UInt64 { try integer(UInt64.self, bigEndian: true) }
    mutating func u64le() throws(NeedMoreData) -> UInt64 { try integer(UInt64.self, bigEndian: false) }

    mutating func fourCC() throws(NeedMoreData) -> FourCC { FourCC(try u32be()) }

    /// Reads `count` bytes as an array (count must be validated against limits by the caller).
    mutating func array(_ count: Int) throws(NeedMoreData) -> [UInt8] {
        try require(count)
        defer { position += count }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[position..<position + count]))
    }

    /// A view of the next `count` bytes, advancing past them.
    mutating func slice(_ count: Int) throws(NeedMoreData) -> UnsafeRawBufferPointer {
        try require(count)
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: bytes[position..<position + count])
    }

    /// Reads `count` bytes as text: UTF-8 if valid, else Latin-1; stops at the first NUL.
    mutating func string(_ count: Int) throws(NeedMoreData) -> String {
        let raw = try slice(count)
        return decodeText(raw)
    }
}

/// Decodes tag text: stops at NUL, tries UTF-8, falls back to Latin-1, trims spaces.
func decodeText(_ raw: UnsafeRawBufferPointer) -> String {
    let end = raw.firstIndex(of: 0) ?? raw.count
    let bytes = UnsafeRawBufferPointer(rebasing: raw[0..<end])
    let s: String
    if let utf8 = String(validating: bytes, as: UTF8.self) { s = utf8 }
    else { s = String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) })) }
    return s.trimmingSpaces()
}

func decodeText(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { decodeText($0) } }

extension String {
    /// The string without leading and trailing spaces, tabs and line breaks.
    func trimmingSpaces() -> String {
        let scalars = unicodeScalars
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\0" }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !isSpace($0) })!
        return String(scalars[first...last])
    }
}

/// Converts an 80-bit IEEE 754 extended float (AIFF sample rates) to Double; nil if not finite.
func float80ToDouble(_ b: [UInt8]) -> Double? {
    guard b.count == 10 else { return nil }
    let sign = b[0] & 0x80 != 0
    let exponent = Int(UInt16(b[0] & 0x7F) << 8 | UInt16(b[1]))
    var mantissa: UInt64 = 0
    for i in 2..<10 { mantissa = mantissa << 8 | UInt64(b[i]) }
    if exponent == 0x7FFF { return nil }
    if exponent == 0 && mantissa == 0 { return 0 }
    let value = Double(sign: .plus, exponent: exponent - 16383 - 63, significand: Double(mantissa))
    return sign ? -value : value
}

/// Runs `body` over the bytes of `array`, keeping the typed error.
func withRawBytes<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(AudioError) -> R) throws(AudioError) -> R {
    let result: Result<R, AudioError> = array.withUnsafeBytes { raw in
        Result { () throws(AudioError) -> R in try body(raw) }
    }
    return try result.get()
}

/// Runs `body` over the mutable bytes of `array`, keeping the typed error.
func withMutableRawBytes<R>(_ array: inout [UInt8], _ body: (UnsafeMutableRawBufferPointer) throws(AudioError) -> R) throws(AudioError) -> R {
    let result: Result<R, AudioError> = array.withUnsafeMutableBytes { raw in
        Result { () throws(AudioError) -> R in try body(raw) }
    }
    return try result.get()
}

/// `value` rounded and clamped to `0...UInt32.max` (0 for NaN): for rates computed from
/// untrusted sizes and sample rates, which must never trap on conversion.
func clampedUInt32(_ value: Double) -> UInt32 {
    guard value.isFinite, value > 0 else { return 0 }
    let r = value.rounded()
    return r >= Double(UInt32.max) ? UInt32.max : UInt32(r)
}

/// `value` rounded and clamped to `Int64`'s range (0 for NaN), for frame counts computed from
/// untrusted durations and rates.
func clampedInt64(_ value: Double) -> Int64 {
    guard value.isFinite else { return 0 }
    let r = value.rounded()
    if r >= 9.2e18 { return Int64.max >> 1 }
    if r <= -9.2e18 { return Int64.min >> 1 }
    return Int64(r)
}
