import OATConversion
import OATCore
import OATNetwork
import OATDevices
import OATFiles
import OATQueueEngine
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Seeking inside an item: in the retained bytes, in the network buffer, by a new range request,
/// or (HLS) by reopening the presentation at a segment.
extension DecoderThread {
    func seek(_ item: ItemDecoder, to seconds: Double, reportEvent: Bool = true) throws {
        guard let parser = item.parser, let format = parser.dataFormat, parser.isReadyToProducePackets else {
            item.pendingSeek = seconds
            return
        }
        if item.isLive {
            throw AudioError(.invalidState, component: "StreamingPlayer", "\(item.url) is a live stream: it cannot seek (pause keeps a timeshift buffer instead)")
        }
        if item.isHLS {
            try seekHLS(item, to: seconds, reportEvent: reportEvent)
            return
        }
        if item.converter == nil { try prepareDecoder(item, parser) }
        guard let converter = item.converter else { return }
        let rate = format.sampleRate
        let priming = Int64(max(0, parser.packetTableInfo?.primingFrames ?? 0))
        var target = Int64(max(0, seconds) * rate)
        if let valid = parser.packetTableInfo?.numberValidFrames { target = min(target, max(0, valid - 1)) }
        let withPriming = target + priming
        let fpp = Int64(format.framesPerPacket)
        let averageFrames: Double = fpp > 0 ? Double(fpp)
            : (parser.packetsDelivered > 0 ? Double(parser.framesDelivered) / Double(parser.packetsDelivered) : 1024)
        var packet = Int64(Double(withPriming) / max(1, averageFrames))
        // Start early enough for the decoder to settle (MP3's bit reservoir, overlapped transforms).
        switch format.formatID {
        case .linearPCM, .ulaw, .alaw, .flac, .appleLossless: break
        case .opus: packet -= Int64((0.08 * rate / max(1, averageFrames)).rounded(.up))
        default: packet -= 2
        }
        packet = max(0, packet)
        let result = try parser.seek(toPacket: packet)
        let startFrame = parser.frame(forPacket: result.packetIndex) ?? Int64(Double(result.packetIndex) * averageFrames)
        let discard = max(0, withPriming - startFrame)
        // Where do the bytes come from?
        var newRequest = false
        var replay: [UInt8] = []
        // A seek while a chunk is being parsed: its unparsed rest is still ours.
        if let bytes = item.retained.replay(from: result.byteOffset, unfed: item.unfed) {
            replay = bytes
        } else if let range = item.reader.pendingByteRange, result.byteOffset >= range.start, result.byteOffset < range.end,
                  result.byteOffset >= item.fedOffset {
            item.reader.drop(before: result.byteOffset)
            item.fedOffset = result.byteOffset
        } else {
            guard item.info?.isSeekable ?? false else {
                throw AudioError(.invalidState, component: "StreamingPlayer",
                                 "\(item.url) cannot seek to \(seconds) s: the server does not accept range requests and the audio is not buffered")
            }
            retire(item)
            let source = try makeSource(for: item.url)
            item.reader = SourceReader(url: item.url, source: source, at: result.byteOffset, maximumBytes: policy.maximumBufferedBytes, data: engine.wake)
            item.fedOffset = result.byteOffset
            item.retained.reset(at: result.byteOffset)
            newRequest = true
        }
        // The reader's end was already taken: replayed bytes are followed by it again.
        let endTaken = item.inputEnded && !newRequest
        item.inputEnded = false
        item.drained = false
        item.finishMarked = false
        item.pendingMetadata.removeAll()
        converter.reset(discardingFrames: discard)
        converter.limitRemainingFrames(parser.packetTableInfo.map { $0.numberValidFrames - target })
        let landed = Double(target) / rate
        restartTimeline(item, at: landed)
        if reportEvent {
            engine.emit(.seeked(index: item.index, seconds: landed, isEstimated: result.isEstimated, newRequest: newRequest))
        }
        item.discontinuityNext = true
        item.seekGeneration += 1
        if !replay.isEmpty {
            // Parse the retained bytes again: they go back to the front of the network
            // thread's buffer, which continues after them.
            item.fedOffset = result.byteOffset
            item.retained.reset(at: result.byteOffset)
            if endTaken { item.reader.pushBack(.end) }
            item.reader.pushBack(.bytes(replay, offset: result.byteOffset))
        }
    }

    /// Seeks in an on-demand HLS presentation: a new ``HLSByteSource`` opens at the segment
    /// holding `seconds` (its playlist fetched again: one playlist and one segment request), a
    /// new parser and decoder start there, and the audio before `seconds` is decoded and dropped,
    /// so the position is exact to the frame within the segment timeline the playlist gives.
    func seekHLS(_ item: ItemDecoder, to seconds: Double, reportEvent: Bool) throws {
        var target = max(0, seconds)
        if let duration = engine.control.withLock({ $0.duration }) { target = min(target, duration) }
        retire(item)
        let source = try makeSource(for: item.url, startTime: target)
        item.reader = SourceReader(url: item.url, source: source, at: 0, maximumBytes: policy.maximumBufferedBytes, data: engine.wake)
        item.parser = nil
        item.converter = nil
        item.hlsSeekTarget = target
        item.hlsDiscardSeconds = nil
        item.fedOffset = 0
        item.retained.reset(at: 0)
        item.inputEnded = false
        item.drained = false
        item.finishMarked = false
        item.discontinuityNext = false
        item.pendingMetadata.removeAll()
        restartTimeline(item, at: target)
        if reportEvent {
            engine.emit(.seeked(index: item.index, seconds: target, isEstimated: false, newRequest: true))
        }
        item.seekGeneration += 1
    }

    /// After a seek: drops the queued audio and starts the timeline again with output frame 0
    /// at `seconds` of the item.
    func restartTimeline(_ item: ItemDecoder, at seconds: Double) {
        resetQueue()
        item.outputFrames = 0
        item.bytesWithoutAudio = 0
        item.skipRequestsWithoutAudio = 0
        item.baseSeconds = seconds
        timeline.restart(index: item.index, seconds: seconds)
        buffering.phase = .starting
        engine.control.withLock { $0.position = seconds }
    }
}
