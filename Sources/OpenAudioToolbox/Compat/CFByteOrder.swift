// Audio Toolbox–compatible C-style API: Core Foundation's byte-order helpers (CFByteOrder.h) as
// Swift sees Apple's SDK. macOS code uses them around four-character codes, most often the
// `CheckError` helper that prints an `OSStatus` as `'fmt?'` with `CFSwapInt32HostToBig`.
// Foundation on Linux does not export them, so these names do not collide with it.

/// The host's byte order (Apple's `CFByteOrder`, a `CFIndex`).
public typealias CFByteOrder = CFIndex

/// A byte-order constant (Apple's `__CFByteOrder`, the C enum behind `CFByteOrder`'s values).
public struct __CFByteOrder: RawRepresentable, Equatable, Hashable, Sendable {
    /// The C enum value.
    public var rawValue: UInt32
    /// Creates a constant from its C value.
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    /// Creates a constant from its C value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
}

/// The byte order is not known (Apple's `CFByteOrderUnknown`).
public let CFByteOrderUnknown = __CFByteOrder(0)
/// Little-endian byte order (Apple's `CFByteOrderLittleEndian`).
public let CFByteOrderLittleEndian = __CFByteOrder(1)
/// Big-endian byte order (Apple's `CFByteOrderBigEndian`).
public let CFByteOrderBigEndian = __CFByteOrder(2)

/// The host's byte order: `CFByteOrderLittleEndian.rawValue` or `CFByteOrderBigEndian.rawValue`
/// as a `CFByteOrder` (Apple's `CFByteOrderGetCurrent`).
@inlinable public func CFByteOrderGetCurrent() -> CFByteOrder {
    1.littleEndian == 1 ? CFByteOrder(CFByteOrderLittleEndian.rawValue) : CFByteOrder(CFByteOrderBigEndian.rawValue)
}

/// Swaps the bytes of a 16-bit integer (Apple's `CFSwapInt16`).
@inlinable public func CFSwapInt16(_ arg: UInt16) -> UInt16 { arg.byteSwapped }
/// Swaps the bytes of a 32-bit integer (Apple's `CFSwapInt32`).
@inlinable public func CFSwapInt32(_ arg: UInt32) -> UInt32 { arg.byteSwapped }
/// Swaps the bytes of a 64-bit integer (Apple's `CFSwapInt64`).
@inlinable public func CFSwapInt64(_ arg: UInt64) -> UInt64 { arg.byteSwapped }

/// Converts a 16-bit integer from big-endian to host byte order (Apple's `CFSwapInt16BigToHost`).
@inlinable public func CFSwapInt16BigToHost(_ arg: UInt16) -> UInt16 { UInt16(bigEndian: arg) }
/// Converts a 32-bit integer from big-endian to host byte order (Apple's `CFSwapInt32BigToHost`).
@inlinable public func CFSwapInt32BigToHost(_ arg: UInt32) -> UInt32 { UInt32(bigEndian: arg) }
/// Converts a 64-bit integer from big-endian to host byte order (Apple's `CFSwapInt64BigToHost`).
@inlinable public func CFSwapInt64BigToHost(_ arg: UInt64) -> UInt64 { UInt64(bigEndian: arg) }

/// Converts a 16-bit integer from host to big-endian byte order (Apple's `CFSwapInt16HostToBig`).
@inlinable public func CFSwapInt16HostToBig(_ arg: UInt16) -> UInt16 { arg.bigEndian }
/// Converts a 32-bit integer from host to big-endian byte order (Apple's `CFSwapInt32HostToBig`).
@inlinable public func CFSwapInt32HostToBig(_ arg: UInt32) -> UInt32 { arg.bigEndian }
/// Converts a 64-bit integer from host to big-endian byte order (Apple's `CFSwapInt64HostToBig`).
@inlinable public func CFSwapInt64HostToBig(_ arg: UInt64) -> UInt64 { arg.bigEndian }

/// Converts a 16-bit integer from little-endian to host byte order (Apple's `CFSwapInt16LittleToHost`).
@inlinable public func CFSwapInt16LittleToHost(_ arg: UInt16) -> UInt16 { UInt16(littleEndian: arg) }
/// Converts a 32-bit integer from little-endian to host byte order (Apple's `CFSwapInt32LittleToHost`).
@inlinable public func CFSwapInt32LittleToHost(_ arg: UInt32) -> UInt32 { UInt32(littleEndian: arg) }
/// Converts a 64-bit integer from little-endian to host byte order (Apple's `CFSwapInt64LittleToHost`).
@inlinable public func CFSwapInt64LittleToHost(_ arg: UInt64) -> UInt64 { UInt64(littleEndian: arg) }

/// Converts a 16-bit integer from host to little-endian byte order (Apple's `CFSwapInt16HostToLittle`).
@inlinable public func CFSwapInt16HostToLittle(_ arg: UInt16) -> UInt16 { arg.littleEndian }
/// Converts a 32-bit integer from host to little-endian byte order (Apple's `CFSwapInt32HostToLittle`).
@inlinable public func CFSwapInt32HostToLittle(_ arg: UInt32) -> UInt32 { arg.littleEndian }
/// Converts a 64-bit integer from host to little-endian byte order (Apple's `CFSwapInt64HostToLittle`).
@inlinable public func CFSwapInt64HostToLittle(_ arg: UInt64) -> UInt64 { arg.littleEndian }
