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

/// Per-item decoding state (decoder thread only).
final class ItemDecoder {
    let index: Int
    let url: String
    var reader: SourceReader
    var info: ByteSourceInfo?
    var parser: AudioFileStream?
    var converter: AudioConverter?
    var sourceFormat: AudioStreamBasicDescription?
    var sourceCookie: [UInt8]?
    /// The format or cookie was reported again: compared before the next packets.
    var formatCheckPending = false
    /// A magic cookie was reported while a decoder ran: in Ogg, a new link of a chain.
    var cookieReported = false
    /// The data format and cookie as of the parser event being handled.
    var eventFormat: AudioStreamBasicDescription?
    var eventCookie: [UInt8]?
    /// A later link of a chained stream (another format or cookie report) follows the event
    /// being handled in the same parse call: the parser's packet table may be that link's.
    var laterLinkInCall = false
    /// Audio byte offset of the next byte to parse.
    var fedOffset: Int64 = 0
    /// Bytes already parsed, kept for seeks inside them.
    var retained: RetainedBytes
    var pendingMetadata: [StreamMetadata] = []
    var discontinuityNext = false
    /// Device-rate frames taken from the converter since the item began or was seeked.
    var outputFrames: Int64 = 0
    /// The item position (seconds) of output frame 0.
    var baseSeconds: Double = 0
    /// A seek to carry out once the parser is ready.
    var pendingSeek: Double?
    var inputEnded = false
    var drained = false
    var startedMarked = false
    var finishMarked = false
    /// Rejoins of a live stream since audio last came (bounded).
    var liveRejoins = 0
    /// When the recent rejoins happened (host time; ``BufferingPolicy/maximumLiveRejoinsInWindow``).
    var recentRejoins: [UInt64] = []
    /// Bytes parsed or skipped since the last decoded frame (bounded by
    /// ``BufferingPolicy/maximumBytesWithoutAudio``), and skip requests meanwhile.
    var bytesWithoutAudio: Int64 = 0
    var skipRequestsWithoutAudio = 0
    /// Bumped by every seek: bytes of a chunk being fed when a seek happens are stale.
    var seekGeneration = 0
    /// The rest of the chunk being fed (after the part being parsed), if any.
    var unfed: (bytes: [UInt8], offset: Int64)?
    var notOptimizedHandled = false
    /// True when the source is an ``HLSByteSource`` (seeks reopen it at a time, not a byte).
    var isHLS = false
    /// An HLS seek's target while its new source opens; then the audio to drop (seconds) from
    /// the start of the segment it opened at, applied when the new decoder is made.
    var hlsSeekTarget: Double?
    var hlsDiscardSeconds: Double?

    init(index: Int, url: String, reader: SourceReader) {
        self.index = index
        self.url = url
        self.reader = reader
        fedOffset = reader.startOffset
        retained = RetainedBytes(at: reader.startOffset)
    }

    var isLive: Bool { info?.isLive ?? false }

    /// The input starts again at audio byte `offset` after a break (a new connection, a
    /// rejoined live stream): the parser resynchronises there, nothing is retained before it and
    /// titles pending from the old input are dropped.
    func restartInput(at offset: Int64) {
        discontinuityNext = true
        fedOffset = offset
        retained.reset(at: offset)
        pendingMetadata.removeAll()
    }
}
