// AVAudioTime: Apple's time object over an AudioTimeStamp (sample time at a rate, host time).
import Foundation
import OpenAudioToolbox

/// Host-time ticks per second: the host clock counts nanoseconds here.
let hostTicksPerSecond: Double = 1e9

/// A moment in audio time (Apple's `AVAudioTime`): a sample time at a sample rate, a host
/// time (``AudioGetCurrentHostTime()``'s clock, nanoseconds here), or both. Immutable.
open class AVAudioTime: NSObject, @unchecked Sendable {
    /// The time as an `AudioTimeStamp` (its flags say which fields are valid).
    public let audioTimeStamp: AudioTimeStamp
    /// The sample rate of ``sampleTime`` (0 when the time has none).
    public let sampleRate: Double

    /// A time from an `AudioTimeStamp` whose sample time is at `sampleRate`.
    public init(audioTimeStamp ts: UnsafePointer<AudioTimeStamp>, sampleRate: Double) {
        audioTimeStamp = ts.pointee
        self.sampleRate = sampleRate
        super.init()
    }

    /// A host time.
    public init(hostTime: UInt64) {
        var ts = AudioTimeStamp()
        ts.mHostTime = hostTime
        ts.mFlags = kAudioTimeStampHostTimeValid
        audioTimeStamp = ts
        sampleRate = 0
        super.init()
    }

    /// A sample time at a rate.
    public init(sampleTime: AVAudioFramePosition, atRate sampleRate: Double) {
        var ts = AudioTimeStamp()
        ts.mSampleTime = Float64(sampleTime)
        ts.mFlags = kAudioTimeStampSampleTimeValid
        audioTimeStamp = ts
        self.sampleRate = sampleRate
        super.init()
    }

    /// A host time and the sample time at a rate that corresponds to it.
    public init(hostTime: UInt64, sampleTime: AVAudioFramePosition, atRate sampleRate: Double) {
        var ts = AudioTimeStamp()
        ts.mHostTime = hostTime
        ts.mSampleTime = Float64(sampleTime)
        ts.mFlags = kAudioTimeStampSampleHostTimeValid
        audioTimeStamp = ts
        self.sampleRate = sampleRate
        super.init()
    }

    /// True when ``hostTime`` is valid.
    public var isHostTimeValid: Bool { audioTimeStamp.mFlags.contains(kAudioTimeStampHostTimeValid) }
    /// The host time (valid when ``isHostTimeValid``).
    public var hostTime: UInt64 { audioTimeStamp.mHostTime }
    /// True when ``sampleTime`` is valid.
    public var isSampleTimeValid: Bool { audioTimeStamp.mFlags.contains(kAudioTimeStampSampleTimeValid) }
    /// The sample time (valid when ``isSampleTimeValid``), in frames at ``sampleRate``.
    public var sampleTime: AVAudioFramePosition { AVAudioFramePosition(audioTimeStamp.mSampleTime) }

    /// Host-time ticks in `seconds`.
    open class func hostTime(forSeconds seconds: TimeInterval) -> UInt64 {
        UInt64((max(0, seconds) * hostTicksPerSecond).rounded())
    }

    /// Seconds in `hostTime` ticks.
    open class func seconds(forHostTime hostTime: UInt64) -> TimeInterval {
        Double(hostTime) / hostTicksPerSecond
    }

    /// Fills in what this time lacks (sample time from host time, or the reverse) from an
    /// anchor that has both; nil when the anchor cannot provide it.
    open func extrapolateTime(fromAnchor anchorTime: AVAudioTime) -> AVAudioTime? {
        guard anchorTime.isSampleTimeValid, anchorTime.isHostTimeValid, anchorTime.sampleRate > 0 else { return nil }
        let rate = sampleRate > 0 ? sampleRate : anchorTime.sampleRate
        if isSampleTimeValid && isHostTimeValid { return self }
        if isHostTimeValid {
            let dt = (Double(hostTime) - Double(anchorTime.hostTime)) / hostTicksPerSecond
            let sample = Double(anchorTime.sampleTime) * rate / anchorTime.sampleRate + dt * rate
            return AVAudioTime(hostTime: hostTime, sampleTime: AVAudioFramePosition(sample.rounded()), atRate: rate)
        }
        if isSampleTimeValid {
            let anchorSeconds = Double(anchorTime.sampleTime) / anchorTime.sampleRate
            let dt = Double(sampleTime) / rate - anchorSeconds
            let host = Double(anchorTime.hostTime) + dt * hostTicksPerSecond
            return AVAudioTime(hostTime: UInt64(max(0, host)), sampleTime: sampleTime, atRate: rate)
        }
        return nil
    }

    open override var description: String {
        "<AVAudioTime: host \(isHostTimeValid ? String(hostTime) : "-"), sample \(isSampleTimeValid ? "\(sampleTime) @ \(sampleRate)" : "-")>"
    }
}
