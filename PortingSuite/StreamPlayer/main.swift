// An AudioFileStream → AudioQueue streamer in the shape of the classic Swift streaming players:
// a class instance passed to the parser as `Unmanaged.passUnretained(self).toOpaque()`, global
// callbacks with Apple's non-optional client data, the queue created once the parser is ready
// to produce packets, packets copied into queue buffers (with packet descriptions for VBR
// data), and the bytes fed in network-sized chunks. Written for macOS; only the import differs.
//
// usage: porting-stream-player FILE [CHUNK_BYTES]
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import Foundation

private let bufferCount = 3
private let bufferSize: UInt32 = 32 * 1024
private let maxPacketDescriptions = 512

final class Streamer {
    var parser: AudioFileStreamID?
    var queue: AudioQueueRef?
    var format = AudioStreamBasicDescription()
    var buffers: [AudioQueueBufferRef] = []
    var freeBuffers: [AudioQueueBufferRef] = []
    var fill: AudioQueueBufferRef?
    var descriptions: [AudioStreamPacketDescription] = []
    var started = false
    var failure: OSStatus = noErr
    let condition = NSCondition()
    var finished = false

    init() {
        let status = AudioFileStreamOpen(Unmanaged.passUnretained(self).toOpaque(), propertyListener, packetsCallback, 0, &parser)
        guard status == noErr else { fatalError("AudioFileStreamOpen: \(status)") }
    }

    func parse(_ data: Data) -> OSStatus {
        data.withUnsafeBytes { raw in
            AudioFileStreamParseBytes(parser!, UInt32(raw.count), raw.baseAddress, [])
        }
    }

    func createQueue() {
        var status = AudioQueueNewOutput(&format, outputCallback, Unmanaged.passUnretained(self).toOpaque(), nil, nil, 0, &queue)
        guard status == noErr, let queue else { failure = status; return }
        // The magic cookie, when the stream has one.
        var cookieSize: UInt32 = 0
        var writable: DarwinBoolean = false
        if AudioFileStreamGetPropertyInfo(parser!, kAudioFileStreamProperty_MagicCookieData, &cookieSize, &writable) == noErr, cookieSize > 0 {
            var cookie = [UInt8](repeating: 0, count: Int(cookieSize))
            status = AudioFileStreamGetProperty(parser!, kAudioFileStreamProperty_MagicCookieData, &cookieSize, &cookie)
            if status == noErr { AudioQueueSetProperty(queue, kAudioQueueProperty_MagicCookie, cookie, cookieSize) }
        }
        for _ in 0..<bufferCount {
            var buffer: AudioQueueBufferRef?
            status = AudioQueueAllocateBufferWithPacketDescriptions(queue, bufferSize, UInt32(maxPacketDescriptions), &buffer)
            guard status == noErr, let buffer else { failure = status; return }
            buffers.append(buffer)
            freeBuffers.append(buffer)
        }
        AudioQueueAddPropertyListener(queue, kAudioQueueProperty_IsRunning, isRunningListener, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A buffer to fill: waits until the queue hands one back.
    func nextBuffer() -> AudioQueueBufferRef {
        condition.lock()
        while freeBuffers.isEmpty { condition.wait() }
        let b = freeBuffers.removeFirst()
        condition.unlock()
        b.pointee.mAudioDataByteSize = 0
        return b
    }

    func enqueueFill() {
        guard let queue, let buffer = fill else { return }
        let count = UInt32(descriptions.count)
        let status = descriptions.withUnsafeBufferPointer { d in
            AudioQueueEnqueueBuffer(queue, buffer, count, count > 0 ? d.baseAddress : nil)
        }
        if status != noErr { failure = status }
        descriptions.removeAll()
        fill = nil
        if !started {
            started = true
            let s = AudioQueueStart(queue, nil)
            if s != noErr { failure = s }
        }
    }

    func handle(bytes: UInt32, packets: UInt32, data: UnsafeRawPointer, packetDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
        if queue == nil { createQueue() }
        if let packetDescriptions {
            for i in 0..<Int(packets) {
                let d = packetDescriptions[i]
                let size = d.mDataByteSize
                if let f = fill, f.pointee.mAudioDataByteSize + size > f.pointee.mAudioDataBytesCapacity || descriptions.count == maxPacketDescriptions {
                    enqueueFill()
                }
                if fill == nil { fill = nextBuffer() }
                let f = fill!
                memcpy(f.pointee.mAudioData + Int(f.pointee.mAudioDataByteSize), data + Int(d.mStartOffset), Int(size))
                descriptions.append(AudioStreamPacketDescription(mStartOffset: Int64(f.pointee.mAudioDataByteSize),
                                                                 mVariableFramesInPacket: d.mVariableFramesInPacket, mDataByteSize: size))
                f.pointee.mAudioDataByteSize += size
            }
        } else {
            var offset = 0
            let total = Int(bytes)
            while offset < total {
                if fill == nil { fill = nextBuffer() }
                let f = fill!
                let room = Int(f.pointee.mAudioDataBytesCapacity - f.pointee.mAudioDataByteSize)
                // Whole frames only.
                let frameBytes = max(1, Int(format.mBytesPerPacket))
                let n = min(room, total - offset) / frameBytes * frameBytes
                if n == 0 { enqueueFill(); continue }
                memcpy(f.pointee.mAudioData + Int(f.pointee.mAudioDataByteSize), data + offset, n)
                f.pointee.mAudioDataByteSize += UInt32(n)
                offset += n
                if f.pointee.mAudioDataByteSize == f.pointee.mAudioDataBytesCapacity { enqueueFill() }
            }
        }
    }

    func bufferCompleted(_ buffer: AudioQueueBufferRef) {
        condition.lock()
        freeBuffers.append(buffer)
        condition.signal()
        condition.unlock()
    }

    func runningChanged() {
        var running: UInt32 = 0
        var size = UInt32(MemoryLayout<UInt32>.size)
        AudioQueueGetProperty(queue!, kAudioQueueProperty_IsRunning, &running, &size)
        if running == 0 {
            condition.lock()
            finished = true
            condition.broadcast()
            condition.unlock()
        }
    }

    /// After the last bytes: queue what is buffered, let the queue play it out.
    func finish() {
        if fill != nil { enqueueFill() }
        guard let queue else { return }
        AudioQueueFlush(queue)
        AudioQueueStop(queue, false)
        condition.lock()
        let deadline = Date().addingTimeInterval(120)
        while !finished && Date() < deadline { _ = condition.wait(until: deadline) }
        condition.unlock()
    }
}

func propertyListener(_ clientData: UnsafeMutableRawPointer, _ stream: AudioFileStreamID, _ propertyID: AudioFileStreamPropertyID,
                      _ flags: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    let streamer = Unmanaged<Streamer>.fromOpaque(clientData).takeUnretainedValue()
    switch propertyID {
    case kAudioFileStreamProperty_DataFormat:
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        AudioFileStreamGetProperty(stream, kAudioFileStreamProperty_DataFormat, &size, &streamer.format)
    case kAudioFileStreamProperty_ReadyToProducePackets:
        if streamer.queue == nil { streamer.createQueue() }
    default:
        break
    }
}

func packetsCallback(_ clientData: UnsafeMutableRawPointer, _ numberBytes: UInt32, _ numberPackets: UInt32, _ data: UnsafeRawPointer,
                     _ packetDescriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
    let streamer = Unmanaged<Streamer>.fromOpaque(clientData).takeUnretainedValue()
    streamer.handle(bytes: numberBytes, packets: numberPackets, data: data, packetDescriptions: packetDescriptions)
}

func outputCallback(_ clientData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let streamer = Unmanaged<Streamer>.fromOpaque(clientData!).takeUnretainedValue()
    streamer.bufferCompleted(buffer)
}

func isRunningListener(_ clientData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ propertyID: AudioQueuePropertyID) {
    let streamer = Unmanaged<Streamer>.fromOpaque(clientData!).takeUnretainedValue()
    streamer.runningChanged()
}

let args = CommandLine.arguments
guard args.count >= 2, let handle = FileHandle(forReadingAtPath: args[1]) else {
    fputs("usage: porting-stream-player FILE [CHUNK_BYTES]\n", stderr)
    exit(2)
}
let chunk = args.count > 2 ? Int(args[2]) ?? 4096 : 4096
let streamer = Streamer()
while true {
    let data = handle.readData(ofLength: chunk)
    if data.isEmpty { break }
    let status = streamer.parse(data)
    if status != noErr { fputs("AudioFileStreamParseBytes: \(status)\n", stderr); exit(1) }
    if streamer.failure != noErr { fputs("queue: \(streamer.failure)\n", stderr); exit(1) }
}
streamer.finish()
if streamer.failure != noErr { fputs("queue: \(streamer.failure)\n", stderr); exit(1) }
AudioQueueDispose(streamer.queue!, true)
AudioFileStreamClose(streamer.parser!)
exit(streamer.finished ? 0 : 1)
