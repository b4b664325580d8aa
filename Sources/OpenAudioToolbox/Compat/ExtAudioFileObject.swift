// The object behind an ExtAudioFileRef (CompatExtAudioFile), its PCM helpers and the
// ExtAudioFileWriteAsync writer thread.

import OATConversion
import OATCore
import OATDevices
import OATFiles
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: - PCM helpers

/// The native-endian twin of a PCM format, and whether samples need byte swapping to reach it
/// (with ``reverseSamples(_:bytes:width:)``, which AudioConverter uses too).
func nativePCM(_ f: AudioStreamBasicDescription) -> (format: AudioStreamBasicDescription, swap: Bool) {
    var n = f
    let swap = f.formatFlags.contains(.isBigEndian) && f.bitsPerChannel > 8
    n.formatFlags.remove(.isBigEndian)
    if n.channelsPerFrame > 0 {
        let perSample = n.isInterleaved ? n.bytesPerFrame / n.channelsPerFrame : n.bytesPerFrame
        if perSample * 8 == n.bitsPerChannel { n.formatFlags.insert(.isPacked) }
    }
    return (n, swap)
}

/// Bytes per sample of a PCM format.
func sampleWidth(_ f: AudioStreamBasicDescription) -> Int {
    guard f.channelsPerFrame > 0 else { return 0 }
    return Int(f.isInterleaved ? f.bytesPerFrame / f.channelsPerFrame : f.bytesPerFrame)
}

/// Copies `frames` frames from a client buffer list into interleaved bytes at `out` (no
/// allocation: usable on a render thread).
private func gatherInterleaved(_ list: UnsafeMutableAudioBufferListPointer, frames: Int, channels: Int, width: Int, interleaved: Bool,
                               into out: UnsafeMutableRawPointer) {
    if interleaved || channels <= 1 {
        if list.count > 0, let p = list[0].mData {
            out.copyMemory(from: p, byteCount: min(frames * width * max(1, channels), Int(list[0].mDataByteSize)))
        }
    } else {
        for ch in 0..<min(channels, list.count) {
            guard let p = list[ch].mData else { continue }
            let n = min(Int(list[ch].mDataByteSize), frames * width) / width
            for f in 0..<n { (out + (f * channels + ch) * width).copyMemory(from: p + f * width, byteCount: width) }
        }
    }
}

/// ExtAudioFileWriteAsync's side: a lock-free ring the caller (a render thread) copies into,
/// and a writer thread that encodes and writes what arrives.
final class CompatAsyncWriter: @unchecked Sendable {
    let ring: SPSCRingBuffer<UInt8>
    let frameBytes: Int
    let channels: Int
    let width: Int
    let interleaved: Bool
    private let scratch: UnsafeMutableRawPointer
    private let scratchFrames = 1024
    private let stopping = Atomic<Bool>(false)
    private let status = Locked<OSStatus>(noErr)
    private var thread: JoinableThread?

    init(_ ext: CompatExtAudioFile, capacityBytes: Int) throws(AudioError) {
        frameBytes = Int(ext.interleavedNative.bytesPerFrame)
        channels = Int(ext.clientFormat.channelsPerFrame)
        width = sampleWidth(ext.clientFormat)
        interleaved = ext.clientFormat.isInterleaved
        ring = SPSCRingBuffer(minimumCapacity: max(capacityBytes, frameBytes * 4096), zero: 0)
        scratch = .allocate(byteCount: scratchFrames * frameBytes, alignment: 16)
        let box = UncheckedSendable(ext)
        thread = try JoinableThread(name: "oat-extaudiofile-writer") { [self] in drain(box.value) }
    }

    deinit { scratch.deallocate() }

    /// Producer (any one thread, also a render thread): copies the frames in, or reports that
    /// they do not fit. No allocation, no locks.
    func push(frames: Int, list: UnsafeMutableAudioBufferListPointer) -> OSStatus {
        let bytes = frames * frameBytes
        guard bytes <= ring.capacity else { return kExtAudioFileError_AsyncWriteTooLarge }
        guard bytes <= ring.availableToWrite else { return kExtAudioFileError_AsyncWriteBufferOverflow }
        if interleaved || channels <= 1 {
            guard list.count > 0, let p = list[0].mData, Int(list[0].mDataByteSize) >= bytes else { return kAudio_ParamError }
            _ = ring.write(UnsafeBufferPointer(start: p.assumingMemoryBound(to: UInt8.self), count: bytes))
            return noErr
        }
        for ch in 0..<channels where ch >= list.count || list[ch].mData == nil || Int(list[ch].mDataByteSize) < frames * width {
            return kAudio_ParamError
        }
        var done = 0
        while done < frames {
            let n = min(scratchFrames, frames - done)
            for ch in 0..<channels {
                let p = list[ch].mData!
                for f in 0..<n { (scratch + (f * channels + ch) * width).copyMemory(from: p + (done + f) * width, byteCount: width) }
            }
            _ = ring.write(UnsafeBufferPointer(start: scratch.assumingMemoryBound(to: UInt8.self), count: n * frameBytes))
            done += n
        }
        return noErr
    }

    /// The writer thread: encodes and writes what the ring holds until stopped and empty.
    private func drain(_ ext: CompatExtAudioFile) {
        var buffer = [UInt8](repeating: 0, count: 8192 * frameBytes)
        while true {
            let available = ring.availableToRead / frameBytes
            if available == 0 {
                if stopping.load(ordering: .acquiring) && ring.availableToRead < frameBytes { break }
                usleep(2000)
                continue
            }
            let frames = min(available, 8192)
            _ = buffer.withUnsafeMutableBufferPointer { ring.read(into: UnsafeMutableBufferPointer(rebasing: $0[0..<(frames * frameBytes)])) }
            do throws(AudioError) {
                try ext.writeInterleaved(&buffer, frames: frames)
            } catch {
                let s = extStatus(error, kAudioFileUnspecifiedError)
                status.withLock { if $0 == noErr { $0 = s } }
            }
        }
    }

    /// Stops the thread once everything queued is written; the first error it met.
    func finish() -> OSStatus {
        stopping.store(true, ordering: .releasing)
        thread?.join()
        thread = nil
        return status.withLock { $0 }
    }
}

// MARK: - The object behind an ExtAudioFileRef

final class CompatExtAudioFile {
    // Reading.
    var file: AudioFile?
    var reader: ExtendedAudioFile?
    var readBuffer: AudioPCMBuffer?
    /// File frames at the last seek, and client frames read since then.
    var seekBase: Int64 = 0
    var readSinceSeek: Int64 = 0
    // Writing.
    var sink: AudioFileID?
    var encoder: AudioEncoder?
    var clientConverter: AudioConverter?
    var encodeBuffer: AudioPCMBuffer?
    var started = false
    var framesWritten: Int64 = 0
    // Both.
    /// The AudioFileID given out (or wrapped), and whether Dispose closes it.
    var fileID: AudioFileID?
    var ownsFileID = false
    var fileFormat: AudioStreamBasicDescription
    var clientFormat: AudioStreamBasicDescription
    var fileLayout: OATCore.ChannelLayout?
    var clientLayout: [UInt8]?
    var ioBufferSize: UInt32 = 32768
    /// The converter handed out through kExtAudioFileProperty_AudioConverter.
    var converterRef: AudioConverterRef?
    var quality: SampleRateConverterQuality = .medium
    var encodeBitRate: UInt32?

    var isWriter: Bool { sink != nil }

    init(reading file: AudioFile, id: AudioFileID?, owns: Bool) {
        self.file = file
        fileFormat = file.dataFormat
        clientFormat = file.dataFormat
        fileLayout = file.channelLayout
        fileID = id
        ownsFileID = owns
    }

    init(writing sink: AudioFileID, format: AudioStreamBasicDescription, owns: Bool) {
        self.sink = sink
        fileFormat = format
        clientFormat = format
        fileID = sink
        ownsFileID = owns
    }

    static func from(_ ref: ExtAudioFileRef?) -> CompatExtAudioFile? {
        CompatHandles.object(ref, as: CompatExtAudioFile.self)
    }

    /// File frames per client frame.
    var rateRatio: Double { clientFormat.sampleRate > 0 ? fileFormat.sampleRate / clientFormat.sampleRate : 1 }

    /// (Re)creates the reader for the client format at the current position.
    func makeReader() throws(AudioError) -> ExtendedAudioFile {
        if let reader { return reader }
        guard let file else { throw AudioError(.invalidState, component: "ExtAudioFile", "not open for reading", osStatus: kExtAudioFileError_InvalidOperationOrder) }
        guard clientFormat.isPCM else {
            throw AudioError(.unsupportedFormat, component: "ExtAudioFile", "set a PCM client data format to read \(file.dataFormat)",
                             osStatus: kExtAudioFileError_NonPCMClientFormat)
        }
        let r = try ExtendedAudioFile(file: file, clientFormat: nativePCM(clientFormat).format)
        r.sampleRateConverterQuality = quality
        let position = seekBase + Int64((Double(readSinceSeek) * rateRatio).rounded())
        if position != 0 { try r.seek(toFrame: min(position, r.frameCount)) }
        seekBase = min(position, r.frameCount)
        readSinceSeek = 0
        reader = r
        return r
    }

    /// (Re)creates the encoder and the client converter in front of it (before the first write).
    func makeEncoder() throws(AudioError) -> AudioEncoder {
        if let encoder { return encoder }
        guard clientFormat.isPCM else {
            throw AudioError(.unsupportedFormat, component: "ExtAudioFile", "the client data format must be PCM", osStatus: kExtAudioFileError_NonPCMClientFormat)
        }
        var settings = AudioEncoderSettings()
        if let encodeBitRate, encodeBitRate > 0 { settings.bitRate = Int(encodeBitRate) }
        let depth = clientFormat.isFloat ? 24 : Int(min(max(clientFormat.bitsPerChannel, 16), 24))
        let e = try AudioEncoder(to: fileFormat, sourceBitDepth: depth, settings: settings)
        let source = interleavedNative
        if !e.inputFormat.isSameLayout(as: source) {
            let c = try AudioConverter(from: source, to: e.inputFormat)
            c.sampleRateConverterQuality = quality
            clientConverter = c
        } else {
            clientConverter = nil
        }
        encodeBuffer = try AudioPCMBuffer(format: e.inputFormat, frameCapacity: 4096)
        encoder = e
        return e
    }

    /// The client format, native-endian and interleaved: what writes are gathered into.
    var interleavedNative: AudioStreamBasicDescription {
        var f = nativePCM(clientFormat).format
        if !f.isInterleaved && f.channelsPerFrame > 1 {
            f.formatFlags.remove(.isNonInterleaved)
            f.bytesPerFrame *= f.channelsPerFrame
            f.bytesPerPacket = f.bytesPerFrame
        }
        return f
    }

    /// Runs `body` on the Swift writer behind the sink, created with the encoder's cookie and
    /// priming on first use.
    func withWriter<R>(_ body: (AudioFileWriter) throws(AudioError) -> R) throws(AudioError) -> R {
        guard let sink, let w = CompatFileWriter.from(sink) else {
            throw AudioError(.invalidState, component: "ExtAudioFile", "the file is closed", osStatus: kAudio_ParamError)
        }
        let encoder = try makeEncoder()
        var failure: AudioError?
        let result = w.lock.withLock { _ -> R? in
            do throws(AudioError) {
                if w.writer == nil {
                    if let cookie = encoder.magicCookie, w.cookie == nil { w.cookie = cookie }
                    let p = encoder.primeInfo.leadingFrames
                    if p > 0 && w.packetTableInfo == nil {
                        w.packetTableInfo = AudioFilePacketTableInfo(numberValidFrames: 0, primingFrames: Int32(p), remainderFrames: 0)
                    }
                }
                return try body(try w.openWriter())
            } catch {
                failure = error
                return nil
            }
        }
        if let failure { throw failure }
        return result!
    }

    /// Encodes `frames` client frames from `list` and writes the packets.
    func write(frames: Int, list: UnsafeMutableAudioBufferListPointer) throws(AudioError) {
        _ = try makeEncoder()
        started = true
        guard frames > 0 else { return }
        let width = sampleWidth(clientFormat)
        let channels = Int(clientFormat.channelsPerFrame)
        let frameBytes = Int(interleavedNative.bytesPerFrame)
        // Gather the client's buffers into interleaved bytes.
        var bytes = [UInt8](repeating: 0, count: frames * frameBytes)
        bytes.withUnsafeMutableBytes { out in
            gatherInterleaved(list, frames: frames, channels: channels, width: width, interleaved: clientFormat.isInterleaved, into: out.baseAddress!)
        }
        try writeInterleaved(&bytes, frames: frames)
    }

    /// Encodes `frames` frames of the client format, interleaved (byte order as the client's),
    /// and writes the packets.
    func writeInterleaved(_ bytes: inout [UInt8], frames: Int) throws(AudioError) {
        let encoder = try makeEncoder()
        started = true
        guard frames > 0 else { return }
        let native = nativePCM(clientFormat)
        let frameBytes = Int(interleavedNative.bytesPerFrame)
        if native.swap { bytes.withUnsafeMutableBytes { reverseSamples($0.baseAddress!, bytes: frames * frameBytes, width: sampleWidth(clientFormat)) } }
        let pcm = encodeBuffer!
        if let c = clientConverter {
            var failure: AudioError?
            bytes.withUnsafeBytes { raw in
                do throws(AudioError) { try c.decode(packet: UnsafeRawBufferPointer(rebasing: raw[0..<(frames * frameBytes)])) } catch { failure = error }
            }
            if let failure { throw failure }
            try drainConverter(c, into: pcm, encoder: encoder)
        } else {
            var offset = 0
            while offset < frames {
                let n = min(pcm.frameCapacity, frames - offset)
                bytes.withUnsafeBytes { raw in
                    pcm.mutableBytes(0).baseAddress!.copyMemory(from: raw.baseAddress! + offset * frameBytes, byteCount: n * frameBytes)
                }
                pcm.frameLength = n
                let batch = try encoder.encode(pcm)
                try withWriter { (w) throws(AudioError) in try w.writePackets(batch) }
                offset += n
            }
        }
        framesWritten += Int64(frames)
    }

    // MARK: Asynchronous writing

    var async: CompatAsyncWriter?

    /// Waits until everything queued by ExtAudioFileWriteAsync is written and stops its thread;
    /// returns the first error the thread met.
    func finishAsync() -> OSStatus {
        guard let a = async else { return noErr }
        async = nil
        return a.finish()
    }

    /// Moves converted frames through the encoder to the file.
    func drainConverter(_ c: AudioConverter, into pcm: AudioPCMBuffer, encoder: AudioEncoder) throws(AudioError) {
        while true {
            let got = c.read(into: pcm, maxFrames: pcm.frameCapacity)
            if got == 0 { break }
            let batch = try encoder.encode(pcm)
            try withWriter { (w) throws(AudioError) in try w.writePackets(batch) }
        }
    }

    /// Flushes the converter and encoder and finishes the packet table (Dispose on a writer).
    func finishWriting() throws(AudioError) {
        let encoder = try makeEncoder()
        if let c = clientConverter, let pcm = encodeBuffer {
            try c.endOfInput()
            try drainConverter(c, into: pcm, encoder: encoder)
        }
        let tail = try encoder.finish()
        try withWriter { (w) throws(AudioError) in
            try w.writePackets(tail)
            if let cookie = encoder.magicCookie, encoder.outputFormat.formatID == .flac { w.magicCookie = cookie }
            let id = encoder.outputFormat.formatID
            if !encoder.outputFormat.isPCM && id != .ulaw && id != .alaw { w.packetTableInfo = encoder.packetTableInfo }
        }
    }
}
