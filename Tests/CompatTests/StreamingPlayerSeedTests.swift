// Seeds 002-004: the AudioFileStream -> AudioQueue streaming player, written as it would be on
// macOS. Only the import differs.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Dispatch
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The local-file streaming player of seed 004 (LocalAudioPlayer), with seed 002's buffer
/// bookkeeping: file bytes go to an AudioFileStream; when it is ready to produce packets an
/// output queue is created with the data format and magic cookie; parsed packets are copied into
/// queue buffers with their packet descriptions, enqueued, and the queue started.
final class StreamingPlayer {
    static let kNumberOfBuffers = 3
    static let kAQBufSize: UInt32 = 128 * 1024
    static let kAudioFileBufferSize = 2048
    static let kMaxPacketDesc = 512

    var audioFileStream: AudioFileStreamID?
    var audioQueue: AudioQueueRef?
    var format = AudioStreamBasicDescription()
    var buffers: [AudioQueueBufferRef?] = Array(repeating: nil, count: kNumberOfBuffers)
    var packetDescs = [AudioStreamPacketDescription](repeating: AudioStreamPacketDescription(), count: kMaxPacketDesc)
    var currentBuffer = 0
    var bytesFilled: UInt32 = 0
    var packetsFilled = 0
    var isPlaying = false
    var failure: OSStatus = noErr
    var propertiesSeen: [AudioFileStreamPropertyID] = []
    var packetsParsed = 0
    var descriptionsWereNil = false
    let inUse = Locked<[Bool]>(Array(repeating: false, count: kNumberOfBuffers))
    let bufferFreed = DispatchSemaphore(value: 0)
    let stopped = DispatchSemaphore(value: 0)
    let runningChanges = Locked<[UInt32]>([])

    var selfPointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    func play(path: String) -> OSStatus {
        var status = AudioFileStreamOpen(selfPointer, propertyListenerProc, packetsProc, 0, &audioFileStream)
        guard status == noErr, let stream = audioFileStream else { return status }
        guard let file = fopen(path, "rb") else { return -43 }
        defer { fclose(file) }
        var chunk = [UInt8](repeating: 0, count: StreamingPlayer.kAudioFileBufferSize)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n == 0 { break }
            status = AudioFileStreamParseBytes(stream, UInt32(n), chunk, [])
            if status != noErr { return status }
            if failure != noErr { return failure }
        }
        // OpenAudioToolbox: a zero-byte parse marks the end and delivers the last packet.
        status = AudioFileStreamParseBytes(stream, 0, nil, [])
        if status != noErr { return status }
        guard let queue = audioQueue else { return kAudioFileStreamError_UnsupportedFileType }
        if bytesFilled > 0 { enqueueCurrentBuffer() }
        if !isPlaying {
            AudioQueueStart(queue, nil)
            isPlaying = true
        }
        AudioQueueFlush(queue)
        AudioQueueStop(queue, false)
        // Wait for kAudioQueueProperty_IsRunning to become 0 (the listener signals).
        if stopped.wait(timeout: .now() + 60) == .timedOut { return kAudioQueueErr_InvalidRunState }
        return noErr
    }

    func cleanUp() {
        if let q = audioQueue {
            AudioQueueRemovePropertyListener(q, kAudioQueueProperty_IsRunning, isRunningProc, selfPointer)
            AudioQueueReset(q)
            for case let b? in buffers { AudioQueueFreeBuffer(q, b) }
            AudioQueueDispose(q, true)
            audioQueue = nil
        }
        if let s = audioFileStream { AudioFileStreamClose(s) }
        audioFileStream = nil
    }

    func handleProperty(_ stream: AudioFileStreamID, _ propertyID: AudioFileStreamPropertyID) {
        propertiesSeen.append(propertyID)
        switch propertyID {
        case kAudioFileStreamProperty_DataFormat:
            var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
            failure = AudioFileStreamGetProperty(stream, propertyID, &size, &format)
        case kAudioFileStreamProperty_ReadyToProducePackets:
            createQueue(stream)
        default:
            break
        }
    }

    func createQueue(_ stream: AudioFileStreamID) {
        var status = AudioQueueNewOutput(&format, outputCallback, selfPointer, nil, nil, 0, &audioQueue)
        guard status == noErr, let queue = audioQueue else { failure = status; return }
        // Magic cookie: ask its size (and writability), then copy it to the queue.
        var cookieSize: UInt32 = 0
        var writable: DarwinBoolean = false
        if AudioFileStreamGetPropertyInfo(stream, kAudioFileStreamProperty_MagicCookieData, &cookieSize, &writable) == noErr, cookieSize > 0 {
            let cookie = UnsafeMutableRawPointer.allocate(byteCount: Int(cookieSize), alignment: 8)
            defer { cookie.deallocate() }
            if AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_MagicCookieData, &cookieSize, cookie) == noErr {
                status = AudioQueueSetProperty(queue, kAudioQueueProperty_MagicCookie, cookie, cookieSize)
                if status != noErr { failure = status; return }
            }
        }
        for i in 0..<StreamingPlayer.kNumberOfBuffers {
            status = AudioQueueAllocateBuffer(queue, StreamingPlayer.kAQBufSize, &buffers[i])
            if status != noErr { failure = status; return }
        }
        status = AudioQueueAddPropertyListener(queue, kAudioQueueProperty_IsRunning, isRunningProc, selfPointer)
        if status != noErr { failure = status }
    }

    func handlePackets(_ numberBytes: UInt32, _ numberPackets: UInt32, _ inputData: UnsafeRawPointer,
                       _ descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
        guard audioQueue != nil, failure == noErr else { return }
        packetsParsed += Int(numberPackets)
        if let descriptions {
            for i in 0..<Int(numberPackets) {
                let offset = Int(descriptions[i].mStartOffset)
                let size = descriptions[i].mDataByteSize
                copyPacket(inputData + offset, size, frames: descriptions[i].mVariableFramesInPacket, described: true)
            }
        } else {
            // Constant-size packets (PCM): copy as many whole packets as fit, buffer by buffer.
            descriptionsWereNil = true
            let packetSize = max(1, format.mBytesPerPacket)
            var offset: UInt32 = 0
            while offset < numberBytes {
                let room = (StreamingPlayer.kAQBufSize - bytesFilled) / packetSize * packetSize
                if room == 0 { enqueueCurrentBuffer(); continue }
                let n = min(room, numberBytes - offset)
                memcpy(buffers[currentBuffer]!.pointee.mAudioData + Int(bytesFilled), inputData + Int(offset), Int(n))
                bytesFilled += n
                offset += n
            }
        }
    }

    func copyPacket(_ data: UnsafeRawPointer, _ size: UInt32, frames: UInt32, described: Bool) {
        if StreamingPlayer.kAQBufSize - bytesFilled < size || packetsFilled == StreamingPlayer.kMaxPacketDesc {
            enqueueCurrentBuffer()
        }
        let buffer = buffers[currentBuffer]!
        memcpy(buffer.pointee.mAudioData + Int(bytesFilled), data, Int(size))
        packetDescs[packetsFilled] = AudioStreamPacketDescription(mStartOffset: Int64(bytesFilled), mVariableFramesInPacket: frames, mDataByteSize: size)
        bytesFilled += size
        packetsFilled += 1
    }

    func enqueueCurrentBuffer() {
        guard let queue = audioQueue, let buffer = buffers[currentBuffer] else { return }
        inUse.withLock { $0[currentBuffer] = true }
        buffer.pointee.mAudioDataByteSize = bytesFilled
        let status = packetsFilled > 0
            ? AudioQueueEnqueueBuffer(queue, buffer, UInt32(packetsFilled), packetDescs)
            : AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
        if status != noErr { failure = status }
        if !isPlaying {
            let started = AudioQueueStart(queue, nil)
            if started != noErr { failure = started }
            isPlaying = true
        }
        currentBuffer = (currentBuffer + 1) % StreamingPlayer.kNumberOfBuffers
        bytesFilled = 0
        packetsFilled = 0
        // Wait until the queue hands the next buffer back.
        while inUse.withLock({ $0[currentBuffer] }) {
            _ = bufferFreed.wait(timeout: .now() + 0.05)
        }
    }

    func bufferDone(_ buffer: AudioQueueBufferRef) {
        inUse.withLock { flags in
            for i in 0..<StreamingPlayer.kNumberOfBuffers where buffers[i] == buffer { flags[i] = false }
        }
        bufferFreed.signal()
    }

    func runningChanged(_ queue: AudioQueueRef) {
        var running: UInt32 = 0
        var size = UInt32(MemoryLayout<UInt32>.size)
        AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &size)
        runningChanges.withLock { $0.append(running) }
        if running == 0 { stopped.signal() }
    }
}

private func propertyListenerProc(_ clientData: UnsafeMutableRawPointer, _ stream: AudioFileStreamID,
                                  _ propertyID: AudioFileStreamPropertyID, _ flags: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    let player = Unmanaged<StreamingPlayer>.fromOpaque(clientData).takeUnretainedValue()
    player.handleProperty(stream, propertyID)
}

private func packetsProc(_ clientData: UnsafeMutableRawPointer, _ numberBytes: UInt32, _ numberPackets: UInt32,
                         _ inputData: UnsafeRawPointer, _ packetDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
    let player = Unmanaged<StreamingPlayer>.fromOpaque(clientData).takeUnretainedValue()
    player.handlePackets(numberBytes, numberPackets, inputData, packetDescriptions)
}

private func outputCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let player = Unmanaged<StreamingPlayer>.fromOpaque(userData!).takeUnretainedValue()
    player.bufferDone(buffer)
}

private func isRunningProc(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ propertyID: AudioQueuePropertyID) {
    let player = Unmanaged<StreamingPlayer>.fromOpaque(userData!).takeUnretainedValue()
    player.runningChanged(queue)
}

extension CompatSeedTests {
    @Test("seeds 002-004: AudioFileStream -> AudioQueue streaming player", .requires(corpusMissing), arguments: [
        "ffmpeg-generated/mp3/l3_cbr128_44k_st_info.mp3",
        "ffmpeg-generated/adts/aac_lc_44k_st.aac",
        "ffmpeg-generated/m4a/aac_faststart.m4a",
        "ffmpeg-generated/caf/lpcm_s16be_st.caf",
        "python-stdlib-audiodata/pluck-pcm16.wav",
    ])
    func streamingPlayer(_ relative: String) throws {
        let path = try corpusFile(relative)
        let wav = temporaryWAV("stream")
        defer { remove(wav) }
        setenv("OAT_OUTPUT", "wav:" + wav, 1)
        defer { unsetenv("OAT_OUTPUT") }

        let player = StreamingPlayer()
        let t0 = DispatchTime.now().uptimeNanoseconds
        let status = player.play(path: path)
        let t1 = DispatchTime.now().uptimeNanoseconds
        player.cleanUp()
        print("\(relative): played in \(Double(t1 - t0) / 1e9) s, cleanup \(Double(DispatchTime.now().uptimeNanoseconds - t1) / 1e9) s")
        #expect(status == noErr, "\(relative): status \(status)")
        #expect(player.propertiesSeen.contains(kAudioFileStreamProperty_DataFormat))
        #expect(player.propertiesSeen.last == kAudioFileStreamProperty_ReadyToProducePackets || player.propertiesSeen.contains(kAudioFileStreamProperty_ReadyToProducePackets))
        #expect(player.runningChanges.withLock { $0 } == [1, 0], "IsRunning went \(player.runningChanges.withLock { $0 })")
        #expect(player.descriptionsWereNil == (player.format.mBytesPerPacket != 0), "descriptions nil only for constant-size packets")

        let recorded = readFloatWAV(wav)
        let result = try compare(recording: recorded.samples, channels: recorded.channels, with: path)
        print("\(relative): \(player.packetsParsed) packets, \(result)")
        #expect(result.lag == 0, "\(relative): \(result)")
        #expect(result.snr > 90, "\(relative): \(result)")
        #expect(abs(result.playedFrames - result.referenceFrames) <= 0, "\(relative): \(result)")
    }
}
