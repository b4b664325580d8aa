/// A four-character code, the 32-bit tag Core Audio uses for formats, file types, chunks and
/// properties (`'lpcm'`, `'caff'`, `'data'`).
///
/// The first character is the most significant byte, as in Apple's headers.
public struct FourCC: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible,
    ExpressibleByStringLiteral, ExpressibleByIntegerLiteral
{
    /// The code as a big-endian packed 32-bit integer.
    public var rawValue: UInt32

    /// Creates a code from its packed integer value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Creates a code from its packed integer value.
    public init(_ value: UInt32) { self.rawValue = value }

    /// Creates a code from an integer literal.
    public init(integerLiteral value: UInt32) { self.rawValue = value }

    /// Creates a code from four bytes, most significant first.
    public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        rawValue = UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
    }

    /// Creates a code from a string of up to four ASCII characters (padded with spaces).
    /// Characters outside ASCII become `?`.
    public init(_ text: String) {
        var bytes = Array(text.utf8.prefix(4)).map { $0 < 0x80 ? $0 : UInt8(ascii: "?") }
        while bytes.count < 4 { bytes.append(0x20) }
        self.init(bytes[0], bytes[1], bytes[2], bytes[3])
    }

    /// Creates a code from a string literal such as `"lpcm"`.
    public init(stringLiteral value: String) { self.init(value) }

    /// The four bytes, most significant first.
    public var bytes: [UInt8] {
        [UInt8(rawValue >> 24), UInt8(truncatingIfNeeded: rawValue >> 16),
         UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)]
    }

    /// The code as text. Printable ASCII characters appear as themselves; any other byte is
    /// written as `\xNN` so the text is always unambiguous.
    public var description: String {
        var s = ""
        for b in bytes {
            if b >= 0x20 && b < 0x7F { s.unicodeScalars.append(Unicode.Scalar(b)) }
            else {
                let hex = String(b, radix: 16)
                s += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return s
    }

    /// True when all four bytes are printable ASCII.
    public var isPrintable: Bool { bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F } }

    public static func < (lhs: FourCC, rhs: FourCC) -> Bool { lhs.rawValue < rhs.rawValue }
}
