import OATConversion
import OATCore
import OATFiles

/// Reads a file as PCM in a format of your choice: an `AudioFile` and an `AudioConverter`
/// together, Apple's `ExtAudioFile`. Priming and remainder frames are trimmed, so the frames
/// you read are exactly the file's valid frames; seeking is frame-exact.
///
/// Thread safety: not thread-safe; use from one thread (a feeder, never the render thread).
public final class ExtendedAudioFile {
    /// The file being read.
    public let file: AudioFile
    /// The PCM format reads deliver (Apple's client data format).
    public let clientFormat: AudioStreamBasicDescription
    private let converter: AudioConverter
    private var nextPacket: Int64 = 0
    /// Frames read so far, counted from the start of the valid audio (client rate).
    public private(set) var position: Int64 = 0

    /// Opens `path`; `clientFormat` defaults to non-interleaved Float32 at the file's rate and
    /// channel count.
    public convenience init(path: String, clientFormat: AudioStreamBasicDescription? = nil) throws(AudioError) {
        try self.init(file: AudioFile(path: path), clientFormat: clientFormat)
    }

    /// Reads an already opened `file` (not shared with other readers: reads move no state in
    /// it, but use it from one thread); `clientFormat` as in ``init(path:clientFormat:)``.
    public init(file: AudioFile, clientFormat: AudioStreamBasicDescription? = nil) throws(AudioError) {
        self.file = file
        let format = clientFormat ?? .canonicalFloat(sampleRate: file.dataFormat.sampleRate, channels: file.dataFormat.channelsPerFrame)
        self.clientFormat = format
        converter = try AudioConverter(from: file.dataFormat, to: format, magicCookie: file.magicCookie)
        if let info = file.packetTableInfo {
            converter.primeInfo = AudioConverterPrimeInfo(leadingFrames: UInt32(max(0, info.primingFrames)), trailingFrames: UInt32(max(0, info.remainderFrames)))
            converter.validFrameCount = info.numberValidFrames
        }
    }

    /// Resampling quality when the client rate differs from the file's; set before the first read.
    public var sampleRateConverterQuality: SampleRateConverterQuality {
        get { converter.sampleRateConverterQuality }
        set { converter.sampleRateConverterQuality = newValue }
    }

    /// Valid frames in the file, at the file's rate.
    public var frameCount: Int64 { file.validFrames }

    /// Reads up to the buffer's capacity; returns frames read, 0 at the end.
    public func read(into buffer: AudioPCMBuffer) throws(AudioError) -> Int {
        let file = self.file
        let n = try converter.fillComplexBuffer(buffer) { [self] (wanted: Int) throws(AudioError) -> AudioPacketBatch? in
            guard nextPacket < file.packetCount else { return nil }
            let batch = try file.readPackets(nextPacket..<(nextPacket + Int64(max(wanted, 8))))
            nextPacket += Int64(batch.packetCount)
            return batch
        }
        position += Int64(n)
        return n
    }

    /// Moves to valid frame `frame` (file rate): the next read starts exactly there.
    public func seek(toFrame frame: Int64) throws(AudioError) {
        guard frame >= 0, frame <= frameCount else {
            throw AudioError(.invalidArgument, component: "ExtendedAudioFile", "frame \(frame) is outside 0...\(frameCount)")
        }
        let priming = Int64(max(0, file.packetTableInfo?.primingFrames ?? 0))
        let target = frame + priming
        // Find the packet holding the target and start a few packets earlier so the decoder
        // has settled (MP3's bit reservoir, overlapped transforms).
        var packet: Int64 = 0
        var packetStart: Int64 = 0
        let fpp = Int64(file.dataFormat.framesPerPacket)
        if fpp > 0 {
            packet = min(file.packetCount, target / fpp)
            packetStart = packet * fpp
        } else {
            while packet < file.packetCount {
                let f = Int64(file.framesInPacket(packet))
                if packetStart + f > target { break }
                packetStart += f
                packet += 1
            }
        }
        // Start early enough that the decoder has settled by the target: MP3's bit reservoir
        // reaches two frames back, overlapped transforms one packet, Opus needs 80 ms.
        var prerollFrames: Int64
        switch file.dataFormat.formatID {
        case .linearPCM, .ulaw, .alaw, .flac, .appleLossless: prerollFrames = 0
        case .opus: prerollFrames = Int64(0.08 * file.dataFormat.sampleRate)
        default: prerollFrames = 2 * max(1, fpp > 0 ? fpp : 1024)
        }
        prerollFrames = max(0, min(prerollFrames, packetStart))
        var start = packet
        var startFrame = packetStart
        while start > 0 && packetStart - startFrame < prerollFrames {
            start -= 1
            startFrame -= fpp > 0 ? fpp : Int64(file.framesInPacket(start))
        }
        if start < 0 || startFrame < 0 { start = 0; startFrame = 0 }
        converter.reset(discardingFrames: target - startFrame)
        converter.limitRemainingFrames(file.packetTableInfo.map { $0.numberValidFrames - frame })
        nextPacket = start
        position = frame
    }
}
