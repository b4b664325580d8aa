/// A run of packets with their descriptions: what a file stream delivers (Apple's packets
/// callback arguments), what a file reader returns, what a converter consumes.
public struct AudioPacketBatch: Hashable, Sendable {
    /// The packets' bytes, back to back.
    public var data: [UInt8]
    /// One description per packet, offsets into ``data``; empty for constant-bit-rate formats
    /// (every packet is `bytesPerPacket` long).
    public var packetDescriptions: [AudioStreamPacketDescription]
    /// Number of packets in the batch.
    public var packetCount: Int
    /// Index of the first packet in the stream.
    public var firstPacketIndex: Int64
    /// File offset of each packet's first byte, parallel to the packets; `-1` for a packet whose
    /// bytes are not contiguous in the file (an Ogg packet spanning pages). Empty for
    /// constant-bit-rate batches, whose bytes are contiguous from ``fileOffset``.
    public var packetFileOffsets: [Int64]
    /// File offset of the first byte of the batch (of its first packet).
    public var fileOffset: Int64
    /// True for the first batch after a discontinuity (seek or lost data).
    public var isDiscontinuous: Bool

    /// Creates a batch.
    public init(data: [UInt8] = [], packetDescriptions: [AudioStreamPacketDescription] = [], packetCount: Int = 0,
                firstPacketIndex: Int64 = 0, packetFileOffsets: [Int64] = [], fileOffset: Int64 = 0,
                isDiscontinuous: Bool = false) {
        self.data = data
        self.packetDescriptions = packetDescriptions
        self.packetCount = packetCount
        self.firstPacketIndex = firstPacketIndex
        self.packetFileOffsets = packetFileOffsets
        self.fileOffset = fileOffset
        self.isDiscontinuous = isDiscontinuous
    }
}

