// Seed 000's recording listing (Audio Queue Services Programming Guide, "Recording Audio"),
// translated to Swift as it would be written on macOS: only the import differs.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import Dispatch
import Testing

// MARK: - The listing

private let kNumberBuffers = 3                                 // 1

struct AQRecorderState {
    var mDataFormat = AudioStreamBasicDescription()            // 2
    var mQueue: AudioQueueRef?                                 // 3
    var mBuffers = [AudioQueueBufferRef?](repeating: nil, count: kNumberBuffers) // 4
    var mAudioFile: AudioFileID?                               // 5
    var bufferByteSize: UInt32 = 0                             // 6
    var mCurrentPacket: Int64 = 0                              // 7
    var mIsRunning = false                                     // 8
}

func HandleInputBuffer(_ aqData: UnsafeMutableRawPointer?, _ inAQ: AudioQueueRef, _ inBuffer: AudioQueueBufferRef,
                       _ inStartTime: UnsafePointer<AudioTimeStamp>, _ inNumPackets: UInt32,
                       _ inPacketDesc: UnsafePointer<AudioStreamPacketDescription>?) {
    let pAqData = aqData!.assumingMemoryBound(to: AQRecorderState.self)             // 1
    var inNumPackets = inNumPackets
    if inNumPackets == 0 && pAqData.pointee.mDataFormat.mBytesPerPacket != 0 {     // 2
        inNumPackets = inBuffer.pointee.mAudioDataByteSize / pAqData.pointee.mDataFormat.mBytesPerPacket
    }
    if AudioFileWritePackets(pAqData.pointee.mAudioFile!, false, inBuffer.pointee.mAudioDataByteSize, // 3
                             inPacketDesc, pAqData.pointee.mCurrentPacket, &inNumPackets,
                             inBuffer.pointee.mAudioData) == noErr {
        pAqData.pointee.mCurrentPacket += Int64(inNumPackets)                       // 4
    }
    if !pAqData.pointee.mIsRunning { return }                                       // 5
    AudioQueueEnqueueBuffer(pAqData.pointee.mQueue!, inBuffer, 0, nil)              // 6
}

func DeriveBufferSize(_ audioQueue: AudioQueueRef, _ ASBDescription: inout AudioStreamBasicDescription,
                      _ seconds: Float64, _ outBufferSize: UnsafeMutablePointer<UInt32>) {
    let maxBufferSize = 0x50000                                                      // 5
    var maxPacketSize = ASBDescription.mBytesPerPacket                               // 6
    if maxPacketSize == 0 {                                                          // 7
        var maxVBRPacketSize = UInt32(MemoryLayout<UInt32>.size)
        AudioQueueGetProperty(audioQueue, kAudioQueueProperty_MaximumOutputPacketSize, &maxPacketSize, &maxVBRPacketSize)
    }
    let numBytesForTime = ASBDescription.mSampleRate * Float64(maxPacketSize) * seconds // 8
    outBufferSize.pointee = UInt32(numBytesForTime < Float64(maxBufferSize) ? numBytesForTime : Float64(maxBufferSize)) // 9
}

@discardableResult
func SetMagicCookieForFile(_ inQueue: AudioQueueRef, _ inFile: AudioFileID) -> OSStatus {
    var result = noErr                                                               // 3
    var cookieSize: UInt32 = 0                                                       // 4
    if AudioQueueGetPropertySize(inQueue, kAudioQueueProperty_MagicCookie, &cookieSize) == noErr { // 5
        let magicCookie = UnsafeMutableRawPointer.allocate(byteCount: Int(max(cookieSize, 1)), alignment: 1) // 6
        if AudioQueueGetProperty(inQueue, kAudioQueueProperty_MagicCookie, magicCookie, &cookieSize) == noErr { // 7
            result = AudioFileSetProperty(inFile, kAudioFilePropertyMagicCookieData, cookieSize, magicCookie) // 8
        }
        magicCookie.deallocate()                                                     // 9
    }
    return result                                                                    // 10
}

/// The listing's main part: set up the format, create the queue and the file, record for
/// `duration` seconds (running `whileRecording` once started), stop and clean up. Returns the
/// packets written. The listing records 16-bit AIFF; `compressed` (with its file type) records
/// that format instead, set up as Apple's guide does for compressed formats (ID, rate, channels;
/// the queue completes the rest).
func recordLikeSeed000(to filePath: String, duration: Double, compressed: (AudioFormatID, AudioFileTypeID)? = nil,
                       whileRecording: () throws -> Void) throws -> Int64 {
    let aqData = UnsafeMutablePointer<AQRecorderState>.allocate(capacity: 1)         // 1
    aqData.initialize(to: AQRecorderState())
    defer { aqData.deinitialize(count: 1); aqData.deallocate() }
    aqData.pointee.mDataFormat.mFormatID = kAudioFormatLinearPCM                     // 2
    aqData.pointee.mDataFormat.mSampleRate = 44100.0                                 // 3
    aqData.pointee.mDataFormat.mChannelsPerFrame = 2                                 // 4
    aqData.pointee.mDataFormat.mBitsPerChannel = 16                                  // 5
    aqData.pointee.mDataFormat.mBytesPerPacket =                                     // 6
        aqData.pointee.mDataFormat.mChannelsPerFrame * UInt32(MemoryLayout<Int16>.size)
    aqData.pointee.mDataFormat.mBytesPerFrame = aqData.pointee.mDataFormat.mBytesPerPacket
    aqData.pointee.mDataFormat.mFramesPerPacket = 1                                  // 7
    let fileType: AudioFileTypeID = kAudioFileAIFFType                               // 8
    aqData.pointee.mDataFormat.mFormatFlags =                                        // 9
        kLinearPCMFormatFlagIsBigEndian | kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked
    var fileTypeUsed = fileType
    if let (formatID, type) = compressed {
        aqData.pointee.mDataFormat = AudioStreamBasicDescription()
        aqData.pointee.mDataFormat.mFormatID = formatID
        aqData.pointee.mDataFormat.mSampleRate = 44100.0
        aqData.pointee.mDataFormat.mChannelsPerFrame = 2
        fileTypeUsed = type
    }

    var status = AudioQueueNewInput(&aqData.pointee.mDataFormat, HandleInputBuffer, aqData, nil,
                                    CFRunLoopMode.commonModes.rawValue, 0, &aqData.pointee.mQueue)
    try #require(status == noErr, "AudioQueueNewInput: \(status)")
    let queue = aqData.pointee.mQueue!

    var dataFormatSize = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    AudioQueueGetProperty(queue, kAudioQueueProperty_StreamDescription, &aqData.pointee.mDataFormat, &dataFormatSize)

    let bytes = Array(filePath.utf8)
    let audioFileURL = CFURLCreateFromFileSystemRepresentation(nil, bytes, bytes.count, false)!
    status = AudioFileCreateWithURL(audioFileURL, fileTypeUsed, &aqData.pointee.mDataFormat, .eraseFile, &aqData.pointee.mAudioFile)
    try #require(status == noErr, "AudioFileCreateWithURL: \(status)")

    DeriveBufferSize(queue, &aqData.pointee.mDataFormat, 0.5, &aqData.pointee.bufferByteSize)
    for i in 0..<kNumberBuffers {
        AudioQueueAllocateBuffer(queue, aqData.pointee.bufferByteSize, &aqData.pointee.mBuffers[i])
        AudioQueueEnqueueBuffer(queue, aqData.pointee.mBuffers[i]!, 0, nil)
    }
    SetMagicCookieForFile(queue, aqData.pointee.mAudioFile!)

    aqData.pointee.mCurrentPacket = 0
    aqData.pointee.mIsRunning = true
    status = AudioQueueStart(queue, nil)
    try #require(status == noErr, "AudioQueueStart: \(status)")
    let started = AudioGetCurrentHostTime()
    try whileRecording()
    let left = duration - Double(AudioGetCurrentHostTime() - started) / 1e9
    if left > 0 { usleep(UInt32(left * 1e6)) }
    AudioQueueStop(queue, true)
    aqData.pointee.mIsRunning = false

    SetMagicCookieForFile(queue, aqData.pointee.mAudioFile!)
    AudioQueueDispose(queue, true)
    AudioFileClose(aqData.pointee.mAudioFile!)
    return aqData.pointee.mCurrentPacket
}

// MARK: - The test

// In the recording suite, so it never runs beside the other real-time recording tests.
extension PlaybackRecordingTests {
    /// The translated listing records the null sink's monitor while the reference plays: the AIFF
    /// it writes holds the signal bit-exactly and as many packets as the callback counted.
    @Test func seed000RecorderRecordsTheMonitor() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let scratch = try ScratchDirectory("seed000")
        defer { scratch.remove() }
        #if !canImport(AudioToolbox)
        AudioQueueInputSelection.set(.pulse(source: daemon.monitorSource), options: AudioInput.Options(pulseServer: daemon.server))
        defer { AudioQueueInputSelection.set(nil) }
        #endif
        let path = "\(scratch.path)/seed000.aiff"
        let reference = recordingReference(rate: 44100, seconds: 1.5)
        let packets = try recordLikeSeed000(to: path, duration: 3.0) {
            usleep(200_000)
            try playIntoSink(reference, daemon: daemon)
        }
        let file = try AudioFile(path: path)
        #expect(file.fileFormat == .aiff)
        #expect(file.dataFormat.sampleRate == 44100 && file.dataFormat.channelsPerFrame == 2 && file.dataFormat.bitsPerChannel == 16)
        #expect(file.packetCount == packets && packets > 44100, "file has \(file.packetCount) packets, the callback wrote \(packets)")
        let decoded = try decodeWithToolbox(path)
        let alignment = alignSegments(recording: decoded.samples, reference: reference, channels: 2, tolerance: 0.5 / 32768)
        #expect(isCompleteInOrder(alignment, referenceFrames: reference.count / 2), "\(alignment)")
        #expect(ffprobeDuration(path) != nil, "ffprobe cannot read the seed's AIFF")
    }

    /// The same listing recording AAC into CAF and M4A: `DeriveBufferSize` takes the queue's
    /// `MaximumOutputPacketSize`, buffers are allocated without packet descriptions (the callback
    /// still gets them), the cookie is set before and after; the files hold the signal.
    @Test func seed000RecorderRecordsAAC() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let scratch = try ScratchDirectory("seed000-aac")
        defer { scratch.remove() }
        #if !canImport(AudioToolbox)
        AudioQueueInputSelection.set(.pulse(source: daemon.monitorSource), options: AudioInput.Options(pulseServer: daemon.server))
        defer { AudioQueueInputSelection.set(nil) }
        #endif
        let reference = recordingReference(rate: 44100, seconds: 1.5)
        for (name, type) in [("caf", kAudioFileCAFType), ("m4a", kAudioFileM4AType)] {
            let path = "\(scratch.path)/seed000.\(name)"
            let packets = try recordLikeSeed000(to: path, duration: 2.5, compressed: (kAudioFormatMPEG4AAC, type)) {
                usleep(200_000)
                try playIntoSink(reference, daemon: daemon)
            }
            let file = try AudioFile(path: path)
            #expect(file.dataFormat.formatID == .mpeg4AAC && file.magicCookie != nil)
            #expect(file.packetCount == packets && packets > 40, "\(name): file has \(file.packetCount) packets, the callback wrote \(packets)")
            let decoded = try decodeWithToolbox(path)
            let match = lossyMatch(decoded.samples, reference, channels: 2)
            print("seed 000 recorder, AAC in \(name): aligned SNR \(dB(match?.snr ?? -.infinity))")
            #expect((match?.snr ?? -.infinity) >= 30, "\(name): \(String(describing: match))")
            #expect(ffprobeDuration(path) != nil, "ffprobe cannot read the seed's \(name)")
        }
    }
}

extension PlaybackRecordingTests {
    /// The C-style input queue's properties and the dispatch-queue variant: the AAC stream
    /// description is completed (1024 frames per packet), the cookie is there before starting,
    /// IsRunning listeners fire, metering through CurrentLevelMeter(DB) sees the played signal,
    /// callbacks arrive on the dispatch queue with packet descriptions.
    @Test func cStyleInputQueuePropertiesAndDispatchQueue() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        #if !canImport(AudioToolbox)
        AudioQueueInputSelection.set(.pulse(source: daemon.monitorSource), options: AudioInput.Options(pulseServer: daemon.server))
        defer { AudioQueueInputSelection.set(nil) }
        #endif
        final class Counts: @unchecked Sendable {
            let lock = NSLockLike()
            var buffers = 0, packets = 0, descriptions = 0, running: [UInt32] = []
        }
        let counts = Counts()
        var format = AudioStreamBasicDescription()
        format.mFormatID = kAudioFormatMPEG4AAC
        format.mSampleRate = 44100
        format.mChannelsPerFrame = 2
        var queue: AudioQueueRef?
        let dq = DispatchQueue(label: "oat.test.input")
        var status = AudioQueueNewInputWithDispatchQueue(&queue, &format, 0, dq) { aq, buffer, _, packets, descs in
            counts.lock.withLock {
                counts.buffers += 1
                counts.packets += Int(packets)
                if descs != nil { counts.descriptions += Int(packets) }
            }
            AudioQueueEnqueueBuffer(aq, buffer, 0, nil)
        }
        try #require(status == noErr && queue != nil, "AudioQueueNewInputWithDispatchQueue: \(status)")
        let q = queue!
        var asbd = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_StreamDescription, &asbd, &size) == noErr)
        #expect(asbd.mFramesPerPacket == 1024 && asbd.mFormatID == kAudioFormatMPEG4AAC)
        var cookieSize: UInt32 = 0
        #expect(AudioQueueGetPropertySize(q, kAudioQueueProperty_MagicCookie, &cookieSize) == noErr && cookieSize >= 2)
        var maxPacket: UInt32 = 0
        size = 4
        #expect(AudioQueueGetProperty(q, kAudioQueueProperty_MaximumOutputPacketSize, &maxPacket, &size) == noErr && maxPacket >= 768)
        let user = Unmanaged.passUnretained(counts).toOpaque()
        AudioQueueAddPropertyListener(q, kAudioQueueProperty_IsRunning, { user, aq, id in
            let c = Unmanaged<Counts>.fromOpaque(user!).takeUnretainedValue()
            var running: UInt32 = 0
            var size = UInt32(4)
            AudioQueueGetProperty(aq, id, &running, &size)
            c.lock.withLock { c.running.append(running) }
        }, user)
        var on: UInt32 = 1
        #expect(AudioQueueSetProperty(q, kAudioQueueProperty_EnableLevelMetering, &on, 4) == noErr)
        for _ in 0..<3 {
            var b: AudioQueueBufferRef?
            AudioQueueAllocateBuffer(q, 8 * maxPacket, &b)
            AudioQueueEnqueueBuffer(q, b!, 0, nil)
        }
        status = AudioQueueStart(q, nil)
        try #require(status == noErr, "AudioQueueStart: \(status)")
        var peaks: [Float] = [0, 0], peaksDB: [Float] = [-200, -200]
        let player = try JoinableThread(name: "test-player") { try? playIntoSink(recordingReference(rate: 44100, seconds: 1), daemon: daemon) }
        for _ in 0..<25 {
            usleep(40_000)
            var levels = [AudioQueueLevelMeterState](repeating: AudioQueueLevelMeterState(), count: 2)
            var levelSize = UInt32(2 * MemoryLayout<AudioQueueLevelMeterState>.stride)
            AudioQueueGetProperty(q, kAudioQueueProperty_CurrentLevelMeter, &levels, &levelSize)
            for i in 0..<2 { peaks[i] = max(peaks[i], levels[i].mPeakPower) }
            AudioQueueGetProperty(q, kAudioQueueProperty_CurrentLevelMeterDB, &levels, &levelSize)
            for i in 0..<2 { peaksDB[i] = max(peaksDB[i], levels[i].mPeakPower) }
        }
        player.join()
        AudioQueueStop(q, false)
        AudioQueueDispose(q, true)
        dq.sync {}
        #expect(peaks[0] > 0.4 && peaks[1] > 0.25, "CurrentLevelMeter peaks \(peaks)")
        #expect(peaksDB[0] > -8 && peaksDB[0] < 0, "CurrentLevelMeterDB peaks \(peaksDB)")
        counts.lock.withLock {
            #expect(counts.buffers >= 2 && counts.packets > 30 && counts.descriptions == counts.packets,
                    "\(counts.buffers) buffers, \(counts.packets) packets, \(counts.descriptions) described")
            #expect(counts.running == [1, 0], "IsRunning listener saw \(counts.running)")
        }
    }
}

/// A tiny mutex for the test's counters (pthread), usable from C-style callbacks.
final class NSLockLike: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
    deinit { pthread_mutex_destroy(mutex); mutex.deallocate() }
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

extension PlaybackRecordingTests {
    /// The guide's recorder run for 2 s and stopped with `AudioQueueStop(queue, true)`: its file
    /// holds the 2 s. Apple's synchronous stop hands the partially filled buffers to the callback
    /// while it stops ("buffer callbacks are invoked during the stopping"), which is why the
    /// guide's callback writes its packets before it looks at `mIsRunning`. (It held 1.5 s when
    /// the stop dropped what had not been delivered.)
    @Test func seed000RecorderStoppedAfterTwoSecondsHoldsTwoSeconds() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let scratch = try ScratchDirectory("seed000-2s")
        defer { scratch.remove() }
        #if !canImport(AudioToolbox)
        AudioQueueInputSelection.set(.pulse(source: daemon.monitorSource), options: AudioInput.Options(pulseServer: daemon.server))
        defer { AudioQueueInputSelection.set(nil) }
        #endif
        for (name, compressed) in [("aiff", nil), ("caf", (kAudioFormatMPEG4AAC, kAudioFileCAFType))] as [(String, (AudioFormatID, AudioFileTypeID)?)] {
            let path = "\(scratch.path)/seed000.\(name)"
            let packets = try recordLikeSeed000(to: path, duration: 2.0, compressed: compressed) {}
            let file = try AudioFile(path: path)
            #expect(file.packetCount == packets)
            let decoded = try decodeWithToolbox(path)
            let seconds = Double(decoded.samples.count / 2) / 44100
            print("seed 000 recorder, 2 s then AudioQueueStop(true), \(name): \(String(format: "%.3f", seconds)) s recorded")
            #expect(seconds >= 1.85 && seconds <= 2.2, "\(name): \(seconds) s recorded of 2 s")
        }
    }
}
