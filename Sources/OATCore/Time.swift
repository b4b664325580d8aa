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

// `AudioTimeStamp`, `AudioTimeStampFlags` and `SMPTETime` are Apple's C structs (COATCoreAudioTypes,
// re-exported by OATCore) so that C callback types can point at them; the Swift API's names are
// added here.

extension AudioTimeStamp: @retroactive Equatable, @retroactive Hashable {
    /// Position in frames on the stream's timeline (`mSampleTime`).
    public var sampleTime: Double {
        get { mSampleTime }
        set { mSampleTime = newValue }
    }
    /// The host time (``HostTime``, nanoseconds) that corresponds to ``sampleTime`` (`mHostTime`).
    public var hostTime: UInt64 {
        get { mHostTime }
        set { mHostTime = newValue }
    }
    /// Ratio of actual to nominal sample rate (`mRateScalar`).
    public var rateScalar: Double {
        get { mRateScalar }
        set { mRateScalar = newValue }
    }
    /// Which fields are valid (`mFlags`).
    public var flags: AudioTimeStampFlags {
        get { mFlags }
        set { mFlags = newValue }
    }

    /// Creates a time stamp (no word-clock or SMPTE time). `AudioTimeStamp()` is Apple's zeroed
    /// value (rate scalar 0).
    public init(sampleTime: Double = 0, hostTime: UInt64 = 0, rateScalar: Double = 1, flags: AudioTimeStampFlags = []) {
        self.init(mSampleTime: sampleTime, mHostTime: hostTime, mRateScalar: rateScalar, mWordClockTime: 0,
                  mSMPTETime: SMPTETime(), mFlags: flags, mReserved: 0)
    }

    /// Equal when every field is.
    public static func == (lhs: AudioTimeStamp, rhs: AudioTimeStamp) -> Bool {
        lhs.mSampleTime == rhs.mSampleTime && lhs.mHostTime == rhs.mHostTime && lhs.mRateScalar == rhs.mRateScalar
            && lhs.mWordClockTime == rhs.mWordClockTime && lhs.mSMPTETime == rhs.mSMPTETime && lhs.mFlags == rhs.mFlags
            && lhs.mReserved == rhs.mReserved
    }
    /// Hashes every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(mSampleTime)
        hasher.combine(mHostTime)
        hasher.combine(mRateScalar)
        hasher.combine(mWordClockTime)
        hasher.combine(mSMPTETime)
        hasher.combine(mFlags.rawValue)
        hasher.combine(mReserved)
    }

    /// A time stamp with only the sample time valid.
    public static func sample(_ time: Double) -> AudioTimeStamp { AudioTimeStamp(sampleTime: time, flags: .sampleTimeValid) }
    /// A time stamp with only the host time valid.
    public static func host(_ time: UInt64) -> AudioTimeStamp { AudioTimeStamp(hostTime: time, flags: .hostTimeValid) }
}

extension SMPTETime: @retroactive Equatable, @retroactive Hashable {
    /// Equal when every field is.
    public static func == (lhs: SMPTETime, rhs: SMPTETime) -> Bool {
        lhs.mSubframes == rhs.mSubframes && lhs.mSubframeDivisor == rhs.mSubframeDivisor && lhs.mCounter == rhs.mCounter
            && lhs.mType == rhs.mType && lhs.mFlags == rhs.mFlags && lhs.mHours == rhs.mHours && lhs.mMinutes == rhs.mMinutes
            && lhs.mSeconds == rhs.mSeconds && lhs.mFrames == rhs.mFrames
    }
    /// Hashes every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(mSubframes)
        hasher.combine(mSubframeDivisor)
        hasher.combine(mCounter)
        hasher.combine(mType.rawValue)
        hasher.combine(mFlags.rawValue)
        hasher.combine(mHours)
        hasher.combine(mMinutes)
        hasher.combine(mSeconds)
        hasher.combine(mFrames)
    }
}
