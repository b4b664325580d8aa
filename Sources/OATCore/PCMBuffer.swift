/// A buffer of linear PCM audio in a given `AudioStreamBasicDescription`, with storage
/// allocated once at creation (Apple's `AudioBufferList` with an owner).
///
/// Interleaved formats use one buffer; non-interleaved formats one buffer per channel.
/// Thread safety: not thread-safe. The render path may read and write a buffer it was handed
/// (no allocation happens after `init`).
public final class AudioPCMBuffer {
    /// The format of the samples.
    public let format: AudioStreamBasicDescription
    /// The number of frames the buffer can hold.
    public let frameCapacity: Int
    /// The number of valid frames, at most ``frameCapacity``.
    public var frameLength: Int {
        didSet { if frameLength > frameCapacity || frameLength < 0 { frameLength = max(0, min(frameLength, frameCapacity)) } }
    }
    private let storage: [UnsafeMutableRawPointer]
    private let bytesPerFrame: Int

    /// Creates a buffer; fails for non-PCM or inconsistent formats.
    public init(format: AudioStreamBasicDescription, frameCapacity: Int) throws(AudioError) {
        if !format.isPCM || format.validationFailure != nil {
            throw AudioError(.invalidArgument, component: "AudioPCMBuffer",
                             "a PCM buffer needs a valid linear PCM format (\(format.validationFailure ?? "format \(format.formatID)"))")
        }
        guard frameCapacity >= 0, frameCapacity <= 1 << 28 else {
            throw AudioError(.invalidArgument, component: "AudioPCMBuffer", "frame capacity \(frameCapacity) out of range")
        }
        self.format = format
        self.frameCapacity = frameCapacity
        self.frameLength = 0
        bytesPerFrame = Int(format.bytesPerFrame)
        storage = (0..<format.bufferCount).map { _ in
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(1, frameCapacity * Int(format.bytesPerFrame)), alignment: 16)
            p.initializeMemory(as: UInt8.self, repeating: 0, count: max(1, frameCapacity * Int(format.bytesPerFrame)))
            return p
        }
    }

    deinit { for p in storage { p.deallocate() } }

    /// Number of separate buffers (1 when interleaved, else one per channel).
    public var bufferCount: Int { storage.count }

    /// Raw bytes of buffer `index`, covering ``frameCapacity`` frames.
    public func mutableBytes(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage[index], count: frameCapacity * bytesPerFrame)
    }

    /// The samples of buffer `index` as `Float32`, when the format is 32-bit float.
    public func floatChannel(_ index: Int) -> UnsafeMutableBufferPointer<Float>? {
        guard format.isFloat, format.bitsPerChannel == 32 else { return nil }
        let count = frameCapacity * (format.isInterleaved ? Int(format.channelsPerFrame) : 1)
        return UnsafeMutableBufferPointer(start: storage[index].assumingMemoryBound(to: Float.self), count: count)
    }
}
