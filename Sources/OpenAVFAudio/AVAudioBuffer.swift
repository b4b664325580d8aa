// AVAudioBuffer, AVAudioPCMBuffer and AVAudioCompressedBuffer: Apple's buffer objects over an
// AudioBufferList they own.
import Foundation
import OpenAudioToolbox
#if canImport(Glibc)
import Glibc
#endif

/// A buffer of audio in a format (Apple's `AVAudioBuffer`): the base of ``AVAudioPCMBuffer``
/// and ``AVAudioCompressedBuffer``. It owns an `AudioBufferList` for the lower-level APIs.
open class AVAudioBuffer: NSObject, @unchecked Sendable {
    /// The format of the audio in the buffer.
    public let format: AVAudioFormat
    let list: UnsafeMutableAudioBufferListPointer
    let storage: UnsafeMutableRawPointer?
    let deallocator: ((UnsafePointer<AudioBufferList>) -> Void)?

    init(format: AVAudioFormat, buffers: Int, bytesPerBuffer: Int, channelsPerBuffer: UInt32) {
        self.format = format
        list = AudioBufferList.allocate(maximumBuffers: buffers)
        let total = max(1, buffers * bytesPerBuffer)
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: total, alignment: 16)
        bytes.initializeMemory(as: UInt8.self, repeating: 0, count: total)
        storage = bytes
        deallocator = nil
        for i in 0..<buffers {
            list[i] = AudioBuffer(mNumberChannels: channelsPerBuffer, mDataByteSize: UInt32(bytesPerBuffer),
                                  mData: bytes.advanced(by: i * bytesPerBuffer))
        }
        super.init()
    }

    init(format: AVAudioFormat, noCopy: UnsafePointer<AudioBufferList>, deallocator: ((UnsafePointer<AudioBufferList>) -> Void)?) {
        self.format = format
        let source = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: noCopy))
        list = AudioBufferList.allocate(maximumBuffers: source.count)
        for i in 0..<source.count { list[i] = source[i] }
        storage = nil
        self.deallocator = deallocator
        self.noCopySource = noCopy
        super.init()
    }

    private var noCopySource: UnsafePointer<AudioBufferList>?

    deinit {
        if let noCopySource { deallocator?(noCopySource) }
        storage?.deallocate()
        free(list.unsafeMutablePointer)
    }

    /// The buffer list, to read.
    public var audioBufferList: UnsafePointer<AudioBufferList> { list.unsafePointer }
    /// The buffer list, to fill (for example by `AudioConverterFillComplexBuffer`); set the
    /// frame or byte length afterwards.
    public var mutableAudioBufferList: UnsafeMutablePointer<AudioBufferList> { list.unsafeMutablePointer }
}

/// A buffer of PCM audio (Apple's `AVAudioPCMBuffer`): ``frameCapacity`` frames allocated,
/// ``frameLength`` of them valid; the samples through ``floatChannelData`` (and the integer
/// variants) as one pointer per buffer: per channel when deinterleaved, one when interleaved
/// (``stride`` apart).
open class AVAudioPCMBuffer: AVAudioBuffer, @unchecked Sendable {
    /// Frames the buffer can hold.
    public let frameCapacity: AVAudioFrameCount
    private var length: AVAudioFrameCount = 0
    private let channelPointers: UnsafeMutablePointer<UnsafeMutableRawPointer>

    /// A buffer for `frameCapacity` frames of `format`; nil when the format is not PCM, has no
    /// bytes per frame, or the byte size does not fit in 32 bits.
    public init?(pcmFormat format: AVAudioFormat, frameCapacity: AVAudioFrameCount) {
        let d = format.streamDescription.pointee
        guard d.mFormatID == kAudioFormatLinearPCM, d.mBytesPerFrame > 0, d.mChannelsPerFrame > 0 else { return nil }
        let bytes = UInt64(frameCapacity) * UInt64(d.mBytesPerFrame)
        guard bytes <= UInt64(UInt32.max) else { return nil }
        self.frameCapacity = frameCapacity
        let buffers = format.isInterleaved ? 1 : Int(d.mChannelsPerFrame)
        channelPointers = .allocate(capacity: buffers)
        super.init(format: format, buffers: buffers, bytesPerBuffer: Int(bytes), channelsPerBuffer: format.isInterleaved ? d.mChannelsPerFrame : 1)
        for i in 0..<buffers { channelPointers[i] = list[i].mData! }
        setByteSizes()
    }

    /// A buffer over an existing buffer list, without copying; `deallocator` is called with it
    /// when the buffer goes away. Its frame length is taken from the list's byte sizes.
    public init?(pcmFormat format: AVAudioFormat, bufferListNoCopy bufferList: UnsafePointer<AudioBufferList>,
                 deallocator: ((UnsafePointer<AudioBufferList>) -> Void)? = nil) {
        let d = format.streamDescription.pointee
        let source = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: bufferList))
        let buffers = format.isInterleaved ? 1 : Int(d.mChannelsPerFrame)
        guard d.mFormatID == kAudioFormatLinearPCM, d.mBytesPerFrame > 0, source.count == buffers,
              source.allSatisfy({ $0.mData != nil }) else { return nil }
        let frames = source.map { $0.mDataByteSize / d.mBytesPerFrame }.min() ?? 0
        frameCapacity = frames
        channelPointers = .allocate(capacity: buffers)
        super.init(format: format, noCopy: bufferList, deallocator: deallocator)
        for i in 0..<buffers { channelPointers[i] = list[i].mData! }
        length = frames
    }

    deinit { channelPointers.deallocate() }

    /// Valid frames; setting it updates every buffer's `mDataByteSize`. It cannot exceed
    /// ``frameCapacity`` (larger values are clamped).
    public var frameLength: AVAudioFrameCount {
        get { length }
        set {
            length = min(newValue, frameCapacity)
            setByteSizes()
        }
    }

    private func setByteSizes() {
        let size = length * format.streamDescription.pointee.mBytesPerFrame
        for i in 0..<list.count { list[i].mDataByteSize = size }
    }

    /// Samples between one frame and the next in a channel's data: the channel count when
    /// interleaved, else 1.
    public var stride: Int { format.isInterleaved ? Int(format.channelCount) : 1 }

    /// The samples as 32-bit floats, one pointer per buffer; nil unless the format is
    /// ``AVAudioCommonFormat/pcmFormatFloat32``.
    public var floatChannelData: UnsafePointer<UnsafeMutablePointer<Float>>? { channels(.pcmFormatFloat32) }
    /// The samples as 16-bit integers; nil unless the format is ``AVAudioCommonFormat/pcmFormatInt16``.
    public var int16ChannelData: UnsafePointer<UnsafeMutablePointer<Int16>>? { channels(.pcmFormatInt16) }
    /// The samples as 32-bit integers; nil unless the format is ``AVAudioCommonFormat/pcmFormatInt32``.
    public var int32ChannelData: UnsafePointer<UnsafeMutablePointer<Int32>>? { channels(.pcmFormatInt32) }

    private func channels<T>(_ common: AVAudioCommonFormat) -> UnsafePointer<UnsafeMutablePointer<T>>? {
        guard format.commonFormat == common else { return nil }
        return UnsafeRawPointer(channelPointers).assumingMemoryBound(to: UnsafeMutablePointer<T>.self)
    }
}

/// A buffer of compressed packets (Apple's `AVAudioCompressedBuffer`): the packets' bytes in
/// ``data`` and, for variable-size formats, their ``packetDescriptions``.
open class AVAudioCompressedBuffer: AVAudioBuffer, @unchecked Sendable {
    /// Packets the buffer can hold.
    public let packetCapacity: AVAudioPacketCount
    /// The largest packet, in bytes.
    public let maximumPacketSize: Int
    private let descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?
    private var packets: AVAudioPacketCount = 0

    /// A buffer for `packetCapacity` packets of at most `maximumPacketSize` bytes each.
    public init(format: AVAudioFormat, packetCapacity: AVAudioPacketCount, maximumPacketSize: Int) {
        self.packetCapacity = packetCapacity
        self.maximumPacketSize = max(0, maximumPacketSize)
        let variable = format.streamDescription.pointee.mBytesPerPacket == 0 || format.streamDescription.pointee.mFramesPerPacket == 0
        if variable {
            descriptions = .allocate(capacity: max(1, Int(packetCapacity)))
            descriptions!.initialize(repeating: AudioStreamPacketDescription(), count: max(1, Int(packetCapacity)))
        } else {
            descriptions = nil
        }
        super.init(format: format, buffers: 1, bytesPerBuffer: Int(packetCapacity) * self.maximumPacketSize,
                   channelsPerBuffer: format.channelCount)
        list[0].mDataByteSize = 0
    }

    /// A buffer for `packetCapacity` packets of a constant-size format (its bytes per packet).
    public convenience init(format: AVAudioFormat, packetCapacity: AVAudioPacketCount) {
        let size = Int(format.streamDescription.pointee.mBytesPerPacket)
        self.init(format: format, packetCapacity: packetCapacity, maximumPacketSize: size > 0 ? size : 1536 * Int(max(1, format.channelCount)))
    }

    deinit { descriptions?.deallocate() }

    /// Packets in the buffer.
    public var packetCount: AVAudioPacketCount {
        get { packets }
        set { packets = min(newValue, packetCapacity) }
    }
    /// The bytes the buffer can hold.
    public var byteCapacity: UInt32 { UInt32(Int(packetCapacity) * maximumPacketSize) }
    /// Valid bytes.
    public var byteLength: UInt32 {
        get { list[0].mDataByteSize }
        set { list[0].mDataByteSize = min(newValue, byteCapacity) }
    }
    /// The packets' bytes.
    public var data: UnsafeMutableRawPointer { list[0].mData! }
    /// One description per packet for variable-size formats, nil for constant-size ones.
    public var packetDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>? { descriptions }
}
