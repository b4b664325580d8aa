// Streams a file the way the modern Swift streaming players for Apple do: the bytes arrive in
// chunks (as from a URLSession data task) and go to an AudioFileStream parser opened with
// `Unmanaged` client data; the property listener takes the data format and the magic cookie
// and, once the parser is ready to produce packets, creates an AudioConverter to the standard
// format (deinterleaved Float32) and starts an AVAudioEngine with an AVAudioPlayerNode; parsed
// packets wait in a packet store until AudioConverterFillComplexBuffer's input proc hands them
// out with their descriptions; each decoded AVAudioPCMBuffer is scheduled on the player, the
// last one with a `.dataPlayedBack` completion that ends the program once it has been heard.
// The feeder waits while more than a few seconds of audio are scheduled, as a streamer's
// buffering does. Written for macOS/iOS; only the import differs.
//
// usage: porting-avaudioengine-streamer FILE [CHUNK_BYTES]
#if canImport(AVFoundation)
import AVFoundation
#else
import OpenAVFAudio
#endif

/// What the input proc returns when the packet store is empty but the stream has not ended:
/// the converter returns the frames it decoded so far and keeps its state for the next call.
let streamerNeedsMoreDataError: OSStatus = 0x6E_6D_6F_72 // 'nmor'

enum StreamerError: Error, CustomStringConvertible {
    case osStatus(OSStatus, String)
    case noOutputFormat(AudioStreamBasicDescription)

    var description: String {
        switch self {
        case let .osStatus(status, operation): return "\(operation) failed (\(status))"
        case let .noOutputFormat(format): return "no standard format for \(format.mSampleRate) Hz, \(format.mChannelsPerFrame) channels"
        }
    }
}

final class AudioStreamer {
    /// Frames per decoded buffer (about 93 ms at 44.1 kHz).
    let framesPerBuffer: AVAudioFrameCount = 4096
    /// Decoded buffers that may wait at the player before the feeder blocks.
    let maximumScheduledBuffers = 32

    private(set) var fileStream: AudioFileStreamID?
    private var converter: AudioConverterRef?
    private var sourceFormat = AudioStreamBasicDescription()
    private var magicCookie: [UInt8]?
    private(set) var outputFormat: AVAudioFormat?
    private(set) var failure: Error?

    let engine = AVAudioEngine()
    let playerNode = AVAudioPlayerNode()

    // The packet store: parsed packets, back to back, with their descriptions.
    private var storedBytes = [UInt8]()
    private var storedDescriptions = [AudioStreamPacketDescription]()
    private var nextPacket = 0
    private var endOfStream = false

    // What the input proc handed out last: it must stay valid until the proc's next call.
    private var handedBytes: UnsafeMutableRawPointer?
    private var handedCapacity = 0
    private var handedDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?
    private var handedDescriptionsCapacity = 0

    // Scheduling: the newest decoded buffer is held back until the next one (or the end) shows
    // whether it is the last.
    private var heldBuffer: AVAudioPCMBuffer?
    private var scheduledBuffers = 0
    private let scheduleCondition = NSCondition()
    private let playedBack = DispatchSemaphore(value: 0)
    private(set) var framesScheduled: AVAudioFramePosition = 0
    private(set) var packetsParsed = 0

    init() throws {
        let status = AudioFileStreamOpen(Unmanaged.passUnretained(self).toOpaque(), streamPropertyListener, streamPacketsProc, 0, &fileStream)
        guard status == noErr else { throw StreamerError.osStatus(status, "AudioFileStreamOpen") }
    }

    deinit {
        if let converter { AudioConverterDispose(converter) }
        if let fileStream { AudioFileStreamClose(fileStream) }
        handedBytes?.deallocate()
        handedDescriptions?.deallocate()
    }

    // MARK: Feeding

    /// Parses a chunk of the stream, then decodes and schedules what it completed.
    func didReceive(_ data: Data) throws {
        let status = data.withUnsafeBytes { raw in
            AudioFileStreamParseBytes(fileStream!, UInt32(raw.count), raw.baseAddress, [])
        }
        guard status == noErr else { throw StreamerError.osStatus(status, "AudioFileStreamParseBytes") }
        if let failure { throw failure }
        try decodeAvailablePackets()
    }

    /// The stream ended: drains the decoder and schedules the last buffer.
    func didFinishReceiving() throws {
        endOfStream = true
        try decodeAvailablePackets()
        guard outputFormat != nil else { return }
        if let last = heldBuffer {
            heldBuffer = nil
            schedule(last, isLast: true)
        } else {
            // Nothing decoded: nothing will be played back.
            playedBack.signal()
        }
        if !playerNode.isPlaying { playerNode.play() }
    }

    /// Blocks until the last buffer has been played back by the output.
    func waitUntilPlayedBack() {
        playedBack.wait()
    }

    func stop() {
        playerNode.stop()
        engine.stop()
    }

    // MARK: Parser callbacks

    func parser(didChange property: AudioFileStreamPropertyID) {
        guard let fileStream else { return }
        switch property {
        case kAudioFileStreamProperty_DataFormat:
            var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
            let status = AudioFileStreamGetProperty(fileStream, kAudioFileStreamProperty_DataFormat, &size, &sourceFormat)
            if status != noErr { failure = StreamerError.osStatus(status, "AudioFileStreamGetProperty(DataFormat)") }
        case kAudioFileStreamProperty_MagicCookieData:
            var size: UInt32 = 0
            var writable: DarwinBoolean = false
            guard AudioFileStreamGetPropertyInfo(fileStream, kAudioFileStreamProperty_MagicCookieData, &size, &writable) == noErr, size > 0 else { return }
            var cookie = [UInt8](repeating: 0, count: Int(size))
            if AudioFileStreamGetProperty(fileStream, kAudioFileStreamProperty_MagicCookieData, &size, &cookie) == noErr {
                magicCookie = cookie
            }
        case kAudioFileStreamProperty_ReadyToProducePackets:
            do {
                try createConverter()
                try startEngine()
            } catch {
                failure = error
            }
        default:
            break
        }
    }

    func parser(didProduce packetCount: UInt32, bytes: UInt32, data: UnsafeRawPointer, descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
        let base = storedBytes.count
        storedBytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: Int(bytes)))
        if let descriptions {
            for i in 0..<Int(packetCount) {
                var d = descriptions[i]
                d.mStartOffset += Int64(base)
                storedDescriptions.append(d)
            }
        } else {
            // Constant-size packets (PCM): one description each, so the store reads alike.
            let size = sourceFormat.mBytesPerPacket > 0 ? sourceFormat.mBytesPerPacket : bytes / max(1, packetCount)
            for i in 0..<Int(packetCount) {
                storedDescriptions.append(AudioStreamPacketDescription(mStartOffset: Int64(base + i * Int(size)),
                                                                       mVariableFramesInPacket: 0, mDataByteSize: size))
            }
        }
        packetsParsed += Int(packetCount)
    }

    // MARK: Converter

    private func createConverter() throws {
        guard converter == nil else { return }
        guard let format = AVAudioFormat(standardFormatWithSampleRate: sourceFormat.mSampleRate,
                                         channels: AVAudioChannelCount(sourceFormat.mChannelsPerFrame)) else {
            throw StreamerError.noOutputFormat(sourceFormat)
        }
        var status = AudioConverterNew(&sourceFormat, format.streamDescription, &converter)
        guard status == noErr, let converter else { throw StreamerError.osStatus(status, "AudioConverterNew") }
        if let cookie = magicCookie {
            status = cookie.withUnsafeBytes { raw in
                AudioConverterSetProperty(converter, kAudioConverterDecompressionMagicCookie, UInt32(raw.count), raw.baseAddress!)
            }
            guard status == noErr else { throw StreamerError.osStatus(status, "AudioConverterSetProperty(DecompressionMagicCookie)") }
        }
        outputFormat = format
    }

    /// Hands the converter up to `packetCount` stored packets (called from its input proc).
    func provideInput(packetCount: UnsafeMutablePointer<UInt32>, data: UnsafeMutablePointer<AudioBufferList>,
                      descriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?) -> OSStatus {
        let available = storedDescriptions.count - nextPacket
        guard available > 0 else {
            packetCount.pointee = 0
            data.pointee.mBuffers.mData = nil
            data.pointee.mBuffers.mDataByteSize = 0
            // At the end of the stream 0 packets drain the decoder; before it, ask for more.
            return endOfStream ? noErr : streamerNeedsMoreDataError
        }
        let count = min(Int(packetCount.pointee), available)
        let first = storedDescriptions[nextPacket]
        let last = storedDescriptions[nextPacket + count - 1]
        let start = Int(first.mStartOffset)
        let byteCount = Int(last.mStartOffset) + Int(last.mDataByteSize) - start

        if byteCount > handedCapacity {
            handedBytes?.deallocate()
            handedCapacity = max(byteCount, 2 * handedCapacity)
            handedBytes = UnsafeMutableRawPointer.allocate(byteCount: handedCapacity, alignment: 16)
        }
        if count > handedDescriptionsCapacity {
            handedDescriptions?.deallocate()
            handedDescriptionsCapacity = max(count, 2 * handedDescriptionsCapacity)
            handedDescriptions = .allocate(capacity: handedDescriptionsCapacity)
        }
        storedBytes.withUnsafeBytes { raw in
            handedBytes!.copyMemory(from: raw.baseAddress! + start, byteCount: byteCount)
        }
        for i in 0..<count {
            var d = storedDescriptions[nextPacket + i]
            d.mStartOffset -= Int64(start)
            handedDescriptions![i] = d
        }
        nextPacket += count

        packetCount.pointee = UInt32(count)
        data.pointee.mNumberBuffers = 1
        data.pointee.mBuffers.mNumberChannels = sourceFormat.mChannelsPerFrame
        data.pointee.mBuffers.mData = handedBytes
        data.pointee.mBuffers.mDataByteSize = UInt32(byteCount)
        descriptions?.pointee = handedDescriptions
        compactStoreIfNeeded()
        return noErr
    }

    /// Drops consumed packets from the store once they are most of it.
    private func compactStoreIfNeeded() {
        guard nextPacket > 256, nextPacket * 2 > storedDescriptions.count else { return }
        let cut = nextPacket < storedDescriptions.count ? Int(storedDescriptions[nextPacket].mStartOffset) : storedBytes.count
        storedBytes.removeFirst(cut)
        storedDescriptions.removeFirst(nextPacket)
        for i in storedDescriptions.indices { storedDescriptions[i].mStartOffset -= Int64(cut) }
        nextPacket = 0
    }

    /// Decodes every stored packet (all of the decoder's output too at the end of the stream)
    /// into buffers and schedules them.
    private func decodeAvailablePackets() throws {
        guard let converter, let outputFormat else { return }
        while true {
            guard let buffer = AVAudioPCMBuffer(pcmFormat: outputFormat, frameCapacity: framesPerBuffer) else { return }
            buffer.frameLength = buffer.frameCapacity
            var frames = buffer.frameCapacity
            let status = AudioConverterFillComplexBuffer(converter, converterInputProc, Unmanaged.passUnretained(self).toOpaque(),
                                                         &frames, buffer.mutableAudioBufferList, nil)
            buffer.frameLength = frames
            if frames > 0 { enqueue(buffer) }
            if status == streamerNeedsMoreDataError { return }
            guard status == noErr else { throw StreamerError.osStatus(status, "AudioConverterFillComplexBuffer") }
            // At the end of the stream a short (or empty) fill means the decoder is drained.
            if frames < buffer.frameCapacity && endOfStream { return }
        }
    }

    // MARK: Engine

    private func startEngine() throws {
        guard let outputFormat, !engine.isRunning else { return }
        engine.attach(playerNode)
        engine.connect(playerNode, to: engine.mainMixerNode, format: outputFormat)
        engine.prepare()
        try engine.start()
    }

    private func enqueue(_ buffer: AVAudioPCMBuffer) {
        if let previous = heldBuffer { schedule(previous, isLast: false) }
        heldBuffer = buffer
    }

    private func schedule(_ buffer: AVAudioPCMBuffer, isLast: Bool) {
        // Wait while enough is scheduled, as a streamer's buffering does.
        scheduleCondition.lock()
        while scheduledBuffers >= maximumScheduledBuffers { scheduleCondition.wait() }
        scheduledBuffers += 1
        scheduleCondition.unlock()
        framesScheduled += AVAudioFramePosition(buffer.frameLength)
        if isLast {
            playerNode.scheduleBuffer(buffer, at: nil, options: [], completionCallbackType: .dataPlayedBack) { [weak self] _ in
                self?.bufferFinished()
                self?.playedBack.signal()
            }
        } else {
            playerNode.scheduleBuffer(buffer) { [weak self] in
                self?.bufferFinished()
            }
        }
        // Start once a few buffers are waiting, so the first ones do not underrun.
        if !playerNode.isPlaying && (scheduledBuffers >= 4 || isLast) { playerNode.play() }
    }

    private func bufferFinished() {
        scheduleCondition.lock()
        scheduledBuffers -= 1
        scheduleCondition.signal()
        scheduleCondition.unlock()
    }
}

// MARK: C callbacks

func streamPropertyListener(_ clientData: UnsafeMutableRawPointer, _ fileStream: AudioFileStreamID, _ propertyID: AudioFileStreamPropertyID,
                            _ flags: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    let streamer = Unmanaged<AudioStreamer>.fromOpaque(clientData).takeUnretainedValue()
    streamer.parser(didChange: propertyID)
}

func streamPacketsProc(_ clientData: UnsafeMutableRawPointer, _ numberBytes: UInt32, _ numberPackets: UInt32, _ data: UnsafeRawPointer,
                       _ packetDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
    let streamer = Unmanaged<AudioStreamer>.fromOpaque(clientData).takeUnretainedValue()
    streamer.parser(didProduce: numberPackets, bytes: numberBytes, data: data, descriptions: packetDescriptions)
}

func converterInputProc(_ converter: AudioConverterRef, _ ioNumberDataPackets: UnsafeMutablePointer<UInt32>, _ ioData: UnsafeMutablePointer<AudioBufferList>,
                        _ outDataPacketDescription: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                        _ inUserData: UnsafeMutableRawPointer?) -> OSStatus {
    let streamer = Unmanaged<AudioStreamer>.fromOpaque(inUserData!).takeUnretainedValue()
    return streamer.provideInput(packetCount: ioNumberDataPackets, data: ioData, descriptions: outDataPacketDescription)
}

// MARK: Main

let arguments = CommandLine.arguments
guard arguments.count >= 2, let file = FileHandle(forReadingAtPath: arguments[1]) else {
    FileHandle.standardError.write("usage: porting-avaudioengine-streamer FILE [CHUNK_BYTES]\n".data(using: .utf8)!)
    exit(2)
}
let chunkSize = arguments.count > 2 ? Int(arguments[2]) ?? 4096 : 4096

do {
    let streamer = try AudioStreamer()
    while true {
        let chunk = file.readData(ofLength: chunkSize)
        if chunk.isEmpty { break }
        try streamer.didReceive(chunk)
    }
    try streamer.didFinishReceiving()
    guard let format = streamer.outputFormat else {
        FileHandle.standardError.write("error: the stream never became ready to produce packets\n".data(using: .utf8)!)
        exit(1)
    }
    streamer.waitUntilPlayedBack()
    streamer.stop()
    print("streamed \(streamer.packetsParsed) packets, played \(streamer.framesScheduled) frames of \(format.sampleRate) Hz audio")
} catch {
    FileHandle.standardError.write("error: \(error)\n".data(using: .utf8)!)
    exit(1)
}
