#if canImport(Glibc)
import Glibc
#endif
import OATCore

/// A buffer owned by an audio queue (Apple's `AudioQueueBuffer`, as a Swift class of ours): you fill ``audioData`` with
/// PCM frames or compressed packets (plus their ``packetDescriptions``), set
/// ``audioDataByteSize`` and enqueue it; the queue hands it back through the output callback
/// once it has used the contents. Between enqueue and the callback the buffer belongs to the
/// queue: do not touch it.
///
/// Thread safety: owned by one thread at a time, as described above.
public final class QueueBuffer: @unchecked Sendable {
    /// Bytes the buffer can hold.
    public let audioDataBytesCapacity: Int
    /// The buffer's memory (``audioDataBytesCapacity`` bytes).
    public let audioData: UnsafeMutableRawBufferPointer
    /// Bytes of valid data in ``audioData``.
    public var audioDataByteSize: Int = 0
    /// Descriptions of the packets in the buffer (compressed formats), at most
    /// ``packetDescriptionCapacity``.
    public var packetDescriptions: [AudioStreamPacketDescription] = []
    /// How many packet descriptions the buffer was created for.
    public let packetDescriptionCapacity: Int
    /// Free for the caller's use (Apple's `mUserData`).
    public var userData: Int = 0
    let id: Int

    init(capacity: Int, packetDescriptionCapacity: Int, id: Int) {
        audioDataBytesCapacity = capacity
        audioData = .allocate(byteCount: max(1, capacity), alignment: 16)
        audioData.initializeMemory(as: UInt8.self, repeating: 0)
        self.packetDescriptionCapacity = packetDescriptionCapacity
        packetDescriptions.reserveCapacity(packetDescriptionCapacity)
        self.id = id
    }

    deinit { audioData.deallocate() }

    /// Copies `bytes` into the buffer (at most its capacity) and sets ``audioDataByteSize``;
    /// returns the bytes copied.
    @discardableResult
    public func fill(_ bytes: UnsafeRawBufferPointer, packetDescriptions: [AudioStreamPacketDescription] = []) -> Int {
        let n = min(bytes.count, audioDataBytesCapacity)
        if n > 0 { audioData.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: n) }
        audioDataByteSize = n
        self.packetDescriptions = Array(packetDescriptions.prefix(packetDescriptionCapacity))
        return n
    }
}

/// Per-buffer playback parameters (Apple's `AudioQueueEnqueueBufferWithParameters`).
public struct AudioQueueEnqueueOptions: Hashable, Sendable {
    /// Frames to drop from the start of the buffer's audio.
    public var trimFramesAtStart: Int = 0
    /// Frames to drop from the end of the buffer's audio.
    public var trimFramesAtEnd: Int = 0
    /// Sample time on the queue timeline at which the buffer should start (silence is inserted
    /// before it if it comes early); nil plays it right after the previous buffer.
    public var startSampleTime: Double?
    /// Creates options.
    public init(trimFramesAtStart: Int = 0, trimFramesAtEnd: Int = 0, startSampleTime: Double? = nil) {
        self.trimFramesAtStart = trimFramesAtStart
        self.trimFramesAtEnd = trimFramesAtEnd
        self.startSampleTime = startSampleTime
    }
}

// `AudioQueueLevelMeterState` (the level of one channel over the last render period) is Apple's C
// struct, declared in COATCoreAudioTypes with Apple's fields (`mAveragePower`, `mPeakPower`); the
// Swift API's names are added here.
extension AudioQueueLevelMeterState: @retroactive Equatable, @retroactive Hashable {
    /// RMS level, linear 0...1 or dB when asked for dB (`mAveragePower`).
    public var averagePower: Float {
        get { mAveragePower }
        set { mAveragePower = newValue }
    }
    /// Peak level, linear 0...1 or dB (`mPeakPower`).
    public var peakPower: Float {
        get { mPeakPower }
        set { mPeakPower = newValue }
    }
    /// Creates a level.
    public init(averagePower: Float, peakPower: Float) { self.init(mAveragePower: averagePower, mPeakPower: peakPower) }
    /// Equal when both levels are.
    public static func == (lhs: AudioQueueLevelMeterState, rhs: AudioQueueLevelMeterState) -> Bool {
        lhs.mAveragePower == rhs.mAveragePower && lhs.mPeakPower == rhs.mPeakPower
    }
    /// Hashes both levels.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(mAveragePower)
        hasher.combine(mPeakPower)
    }
}

/// Parameters of a queue (Apple's `AudioQueueParameterID`).
public enum AudioQueueParameter: UInt32, Sendable, CaseIterable {
    /// Gain 0...1 (`kAudioQueueParam_Volume`).
    case volume = 1
    /// Playback rate 0.5...2.0, pitch unchanged; needs time-pitch enabled (`kAudioQueueParam_PlayRate`).
    case playRate = 2
    /// Pitch shift in cents, -2400...2400; needs time-pitch enabled (`kAudioQueueParam_Pitch`).
    case pitch = 3
    /// Seconds over which volume changes are ramped (`kAudioQueueParam_VolumeRampTime`).
    case volumeRampTime = 4
    /// -1 (left) ... 0 (centre) ... 1 (right) (`kAudioQueueParam_Pan`).
    case pan = 13
}

/// Properties whose changes can be listened to (Apple's `AudioQueuePropertyID`).
public enum AudioQueueProperty: UInt32, Sendable, CaseIterable {
    /// Whether the queue is running (`'aqrn'`).
    case isRunning = 0x6171_726E
    /// The last converter (decoder) error (`'qcve'`).
    case converterError = 0x7163_7665
    /// The current device (`'aqcd'`).
    case currentDevice = 0x6171_6364
}

/// A recursive mutex (pthread), for the queue's transport operations: start, pause, stop and
/// dispose run one at a time, and a callback may call back into the queue on the same thread.
final class RecursiveLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = .allocate(capacity: 1)

    init() {
        var attr = pthread_mutexattr_t()
        pthread_mutexattr_init(&attr)
        pthread_mutexattr_settype(&attr, Int32(PTHREAD_MUTEX_RECURSIVE))
        pthread_mutex_init(mutex, &attr)
        pthread_mutexattr_destroy(&attr)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// What both queue directions keep about their buffers, under their control lock.
protocol QueueBufferRegistry {
    var disposed: Bool { get }
    var nextBufferID: Int { get set }
    var buffers: [Int: QueueBuffer] { get set }
}

extension QueueBufferRegistry {
    /// Apple's `AudioQueueAllocateBuffer(WithPacketDescriptions)` for either direction: checks
    /// the request (at most 256 MiB, `maximumDescriptions` packet descriptions), then numbers
    /// and registers the new buffer; throws once the queue is disposed.
    mutating func allocateBuffer(byteCapacity: Int, packetDescriptionCapacity: Int, maximumDescriptions: Int,
                                 component: String) throws(AudioError) -> QueueBuffer {
        guard byteCapacity > 0, byteCapacity <= 1 << 28, packetDescriptionCapacity >= 0, packetDescriptionCapacity <= maximumDescriptions else {
            throw AudioError(.invalidArgument, component: component, "buffer size \(byteCapacity) is out of range", osStatus: -50)
        }
        guard !disposed else { throw AudioError(.invalidState, component: component, "the queue is disposed", osStatus: -66671) }
        nextBufferID += 1
        let b = QueueBuffer(capacity: byteCapacity, packetDescriptionCapacity: packetDescriptionCapacity, id: nextBufferID)
        buffers[b.id] = b
        return b
    }
}
