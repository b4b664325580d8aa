/// MD5 (RFC 1321), for checking decodes against FLAC STREAMINFO signatures. Tests only.
public struct MD5 {
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    private static let shifts: [UInt32] = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                           5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
                                           4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                           6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21]
    private static let constants: [UInt32] = (0..<64).map { i in
        var x = Double(i + 1).sine
        if x < 0 { x = -x }
        return UInt32(truncatingIfNeeded: Int64(x * 4_294_967_296.0))
    }

    /// A new digest.
    public init() {}

    /// Adds bytes.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        for b in bytes {
            pending.append(b)
            length &+= 1
            if pending.count == 64 { block(pending); pending.removeAll(keepingCapacity: true) }
        }
    }

    /// The digest as 32 lowercase hex digits.
    public mutating func hexDigest() -> String {
        let bitLength = length &* 8
        update([0x80])
        length &-= 1
        while pending.count != 56 { pending.append(0); if pending.count == 64 { block(pending); pending.removeAll() } }
        for i in 0..<8 { pending.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(i)))) }
        block(pending)
        pending.removeAll()
        var out = ""
        for word in [state.0, state.1, state.2, state.3] {
            for i in 0..<4 {
                let byte = UInt8(truncatingIfNeeded: word >> (8 * UInt32(i)))
                let hex = String(byte, radix: 16)
                out += hex.count == 1 ? "0" + hex : hex
            }
        }
        return out
    }

    private mutating func block(_ b: [UInt8]) {
        var m = [UInt32](repeating: 0, count: 16)
        for i in 0..<16 {
            m[i] = UInt32(b[4 * i]) | UInt32(b[4 * i + 1]) << 8 | UInt32(b[4 * i + 2]) << 16 | UInt32(b[4 * i + 3]) << 24
        }
        var (a, bb, c, d) = state
        for i in 0..<64 {
            var f: UInt32
            let g: Int
            switch i {
            case 0..<16: f = (bb & c) | (~bb & d); g = i
            case 16..<32: f = (d & bb) | (~d & c); g = (5 * i + 1) % 16
            case 32..<48: f = bb ^ c ^ d; g = (3 * i + 5) % 16
            default: f = c ^ (bb | ~d); g = (7 * i) % 16
            }
            f = f &+ a &+ Self.constants[i] &+ m[g]
            a = d
            d = c
            c = bb
            bb = bb &+ (f << Self.shifts[i] | f >> (32 - Self.shifts[i]))
        }
        state = (state.0 &+ a, state.1 &+ bb, state.2 &+ c, state.3 &+ d)
    }
}

extension Double {
    /// sin(self), computed without Foundation.
    fileprivate var sine: Double {
        // Reduce to [-pi, pi] and use a Taylor series; accurate far beyond what MD5's
        // constants (floor(|sin(i)| * 2^32)) need for i <= 64.
        var x = self
        let twoPi = 6.283185307179586
        x -= (x / twoPi).rounded() * twoPi
        var term = x, sum = x
        for n in 1..<30 {
            term *= -x * x / Double((2 * n) * (2 * n + 1))
            sum += term
        }
        return sum
    }
}
