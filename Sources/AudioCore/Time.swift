#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Host time: a monotonic clock in nanoseconds, the clock queues and devices share.
public enum HostTime {
    /// The current host time in nanoseconds (CLOCK_MONOTONIC).
    /// Thread safety: safe on any thread, including the render thread (no allocation, no lock).
    @inline(__always)
    public static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Converts seconds to host-time ticks (nanoseconds).
    public static func ticks(seconds: Double) -> UInt64 { UInt64(max(0, seconds * 1e9)) }

    /// Converts host-time ticks (nanoseconds) to seconds.
    public static func seconds(ticks: UInt64) -> Double { Double(ticks) / 1e9 }
}

/// Which fields of an ``AudioTimeStamp`` are valid (Apple's `AudioTimeStampFlags`).
public struct AudioTimeStampFlags: OptionSet, Hashable, Sendable {
    /// The packed bits.
    public var rawValue: UInt32
    /// Creates flags from their bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// ``AudioTimeStamp/sampleTime`` is valid.
    public static let sampleTimeValid = AudioTimeStampFlags(rawValue: 1 << 0)
    /// ``AudioTimeStamp/hostTime`` is valid.
    public static let hostTimeValid = AudioTimeStampFlags(rawValue: 1 << 1)
    /// ``AudioTimeStamp/rateScalar`` is valid.
    public static let rateScalarValid = AudioTimeStampFlags(rawValue: 1 << 2)
    /// Sample and host time are valid.
    public static let sampleHostTimeValid: AudioTimeStampFlags = [.sampleTimeValid, .hostTimeValid]
}

/// A point in time on a stream's sample timeline and on the host clock (Apple's
/// `AudioTimeStamp`).
public struct AudioTimeStamp: Hashable, Sendable {
    /// Position in frames on the stream's timeline.
    public var sampleTime: Double
    /// The host time (``HostTime``, nanoseconds) that corresponds to ``sampleTime``.
    public var hostTime: UInt64
    /// Ratio of actual to nominal sample rate.
    public var rateScalar: Double
    /// Which fields are valid.
    public var flags: AudioTimeStampFlags

    /// Creates a time stamp.
    public init(sampleTime: Double = 0, hostTime: UInt64 = 0, rateScalar: Double = 1, flags: AudioTimeStampFlags = []) {
        self.sampleTime = sampleTime
        self.hostTime = hostTime
        self.rateScalar = rateScalar
        self.flags = flags
    }

    /// A time stamp with only the sample time valid.
    public static func sample(_ time: Double) -> AudioTimeStamp { AudioTimeStamp(sampleTime: time, flags: .sampleTimeValid) }
    /// A time stamp with only the host time valid.
    public static func host(_ time: UInt64) -> AudioTimeStamp { AudioTimeStamp(hostTime: time, flags: .hostTimeValid) }
}
