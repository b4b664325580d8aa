// Streams a file the way AVAudioEngine-era streaming libraries for Apple drive their own output
// unit: the bytes arrive in chunks and go to an AudioFileStream parser (opened with a file type
// hint, which such libraries pass for every stream whatever it holds); the AudioConverter is made
// when the parser notifies its FormatList (the format it states there is the one decoded), or at
// ReadyToProducePackets when no list came; decoded buffers are scheduled on an AVAudioPlayerNode
// in an AVAudioEngine that renders in real-time manual rendering mode, and an I/O unit made with
// AVAudioUnit.instantiate(with:) plays it: its AUAudioUnit's input bus 0 takes the engine's
// format, its outputProvider calls the engine's manualRenderingBlock, allocateRenderResources()
// and startHardware() start it, and stopHardware() right after the last buffer was rendered ends
// it. Written for macOS/iOS; only the import differs.
//
// With --pause-at S the hardware is stopped S seconds after it started and started again half a
// second later, as a player's pause and resume do.
//
// With --buffer-frames N the default output device's I/O buffer (kAudioDevicePropertyBufferFrameSize)
// is set to N frames first, as macOS players set it for lower or safer latency.
//
// usage: porting-auaudiounit-streamer FILE [CHUNK_BYTES] [--hint mp3|m4a|adts|none] [--pause-at SECONDS] [--buffer-frames N]
#if canImport(AVFoundation)
import AVFoundation
#else
import OpenAVFAudio
#endif

let needsMoreData: OSStatus = 0x6E_6D_6F_72 // 'nmor'

struct StreamFailure: Error, CustomStringConvertible {
    let status: OSStatus
    let operation: String
    var description: String { "\(operation) failed (\(status))" }
}

func check(_ status: OSStatus, _ operation: String) throws {
    if status != noErr { throw StreamFailure(status: status, operation: operation) }
}

final class UnitStreamer {
    let framesPerBuffer: AVAudioFrameCount = 4096
    let maximumScheduledBuffers = 24

    private var fileStream: AudioFileStreamID?
    private var converter: AudioConverterRef?
    private var sourceFormat = AudioStreamBasicDescription()
    private var cookie: [UInt8]?
    private(set) var formatListItems = 0
    private(set) var converterMadeOn = ""
    private(set) var outputFormat: AVAudioFormat?
    private(set) var failure: Error?

    let engine = AVAudioEngine()
    let player = AVAudioPlayerNode()
    private(set) var output: AVAudioUnit?

    private var packetBytes = [UInt8]()
    private var packetDescriptions = [AudioStreamPacketDescription]()
    private var nextPacket = 0
    private var ended = false
    private var handed: UnsafeMutableRawPointer?
    private var handedCapacity = 0
    private var handedDescriptions = UnsafeMutablePointer<AudioStreamPacketDescription>.allocate(capacity: 4096)

    private var held: AVAudioPCMBuffer?
    private let scheduled = NSCondition()
    private var scheduledCount = 0
    private let lastRendered = DispatchSemaphore(value: 0)
    private(set) var framesScheduled: AVAudioFramePosition = 0
    private(set) var packetsParsed = 0

    init(hint: AudioFileTypeID) throws {
        try check(AudioFileStreamOpen(Unmanaged.passUnretained(self).toOpaque(), unitStreamerListener, unitStreamerPackets, hint, &fileStream),
                  "AudioFileStreamOpen")
    }

    deinit {
        if let converter { AudioConverterDispose(converter) }
        if let fileStream { AudioFileStreamClose(fileStream) }
        handed?.deallocate()
        handedDescriptions.deallocate()
    }

    func receive(_ data: Data) throws {
        let status = data.withUnsafeBytes { AudioFileStreamParseBytes(fileStream!, UInt32($0.count), $0.baseAddress, []) }
        try check(status, "AudioFileStreamParseBytes")
        if let failure { throw failure }
        try decode()
    }

    func finish() throws {
        ended = true
        try decode()
        guard outputFormat != nil else { return }
        if let last = held {
            held = nil
            schedule(last, last: true)
        } else {
            lastRendered.signal()
        }
        if !player.isPlaying { player.play() }
    }

    func waitForLastBuffer() { lastRendered.wait() }

    /// What such libraries do at the end: stop the hardware as soon as the engine has rendered
    /// the last frame.
    func stop() {
        output?.auAudioUnit.stopHardware()
        player.stop()
        engine.stop()
    }

    // MARK: Parser

    func propertyChanged(_ property: AudioFileStreamPropertyID) {
        guard let fileStream else { return }
        do {
            switch property {
            case kAudioFileStreamProperty_DataFormat:
                var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
                try check(AudioFileStreamGetProperty(fileStream, kAudioFileStreamProperty_DataFormat, &size, &sourceFormat), "GetProperty(DataFormat)")
            case kAudioFileStreamProperty_MagicCookieData:
                var size: UInt32 = 0
                guard AudioFileStreamGetPropertyInfo(fileStream, kAudioFileStreamProperty_MagicCookieData, &size, nil) == noErr, size > 0 else { return }
                var bytes = [UInt8](repeating: 0, count: Int(size))
                try check(AudioFileStreamGetProperty(fileStream, kAudioFileStreamProperty_MagicCookieData, &size, &bytes), "GetProperty(MagicCookieData)")
                cookie = bytes
            case kAudioFileStreamProperty_FormatList:
                // The list's last entry is the layer a decoder gives (HE-AAC's SBR rate); the
                // converter is made here, from it.
                var size: UInt32 = 0
                try check(AudioFileStreamGetPropertyInfo(fileStream, kAudioFileStreamProperty_FormatList, &size, nil), "GetPropertyInfo(FormatList)")
                let count = Int(size) / MemoryLayout<AudioFormatListItem>.size
                var items = [AudioFormatListItem](repeating: AudioFormatListItem(), count: count)
                try check(AudioFileStreamGetProperty(fileStream, kAudioFileStreamProperty_FormatList, &size, &items), "GetProperty(FormatList)")
                formatListItems = count
                if let item = items.last {
                    sourceFormat = item.mASBD
                    try makeConverter(on: "FormatList")
                }
            case kAudioFileStreamProperty_ReadyToProducePackets:
                try makeConverter(on: "ReadyToProducePackets")
                try startOutput()
            default:
                break
            }
        } catch {
            failure = error
        }
    }

    func packets(_ count: UInt32, bytes: UInt32, data: UnsafeRawPointer, descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
        let base = packetBytes.count
        packetBytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: Int(bytes)))
        for i in 0..<Int(count) {
            if let descriptions {
                var d = descriptions[i]
                d.mStartOffset += Int64(base)
                packetDescriptions.append(d)
            } else {
                let size = sourceFormat.mBytesPerPacket > 0 ? sourceFormat.mBytesPerPacket : bytes / max(1, count)
                packetDescriptions.append(AudioStreamPacketDescription(mStartOffset: Int64(base + i * Int(size)), mVariableFramesInPacket: 0, mDataByteSize: size))
            }
        }
        packetsParsed += Int(count)
    }

    // MARK: Converter

    private func makeConverter(on notice: String) throws {
        guard converter == nil else { return }
        guard let format = AVAudioFormat(standardFormatWithSampleRate: sourceFormat.mSampleRate, channels: AVAudioChannelCount(sourceFormat.mChannelsPerFrame)) else {
            throw StreamFailure(status: kAudioConverterErr_FormatNotSupported, operation: "a standard format for the stream")
        }
        try check(AudioConverterNew(&sourceFormat, format.streamDescription, &converter), "AudioConverterNew (on \(notice))")
        if let cookie, let converter {
            try cookie.withUnsafeBytes {
                try check(AudioConverterSetProperty(converter, kAudioConverterDecompressionMagicCookie, UInt32($0.count), $0.baseAddress!), "SetProperty(DecompressionMagicCookie)")
            }
        }
        outputFormat = format
        converterMadeOn = notice
    }

    func input(_ count: UnsafeMutablePointer<UInt32>, _ data: UnsafeMutablePointer<AudioBufferList>,
               _ descriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?) -> OSStatus {
        let available = packetDescriptions.count - nextPacket
        guard available > 0 else {
            count.pointee = 0
            data.pointee.mBuffers.mData = nil
            data.pointee.mBuffers.mDataByteSize = 0
            return ended ? noErr : needsMoreData
        }
        let n = min(Int(count.pointee), available, 4096)
        let start = Int(packetDescriptions[nextPacket].mStartOffset)
        let lastPacket = packetDescriptions[nextPacket + n - 1]
        let byteCount = Int(lastPacket.mStartOffset) + Int(lastPacket.mDataByteSize) - start
        if byteCount > handedCapacity {
            handed?.deallocate()
            handedCapacity = max(byteCount, handedCapacity * 2)
            handed = UnsafeMutableRawPointer.allocate(byteCount: handedCapacity, alignment: 16)
        }
        packetBytes.withUnsafeBytes { handed!.copyMemory(from: $0.baseAddress! + start, byteCount: byteCount) }
        for i in 0..<n {
            var d = packetDescriptions[nextPacket + i]
            d.mStartOffset -= Int64(start)
            handedDescriptions[i] = d
        }
        nextPacket += n
        count.pointee = UInt32(n)
        data.pointee.mNumberBuffers = 1
        data.pointee.mBuffers.mNumberChannels = sourceFormat.mChannelsPerFrame
        data.pointee.mBuffers.mData = handed
        data.pointee.mBuffers.mDataByteSize = UInt32(byteCount)
        descriptions?.pointee = handedDescriptions
        if nextPacket > 512 && nextPacket * 2 > packetDescriptions.count {
            let cut = nextPacket < packetDescriptions.count ? Int(packetDescriptions[nextPacket].mStartOffset) : packetBytes.count
            packetBytes.removeFirst(cut)
            packetDescriptions.removeFirst(nextPacket)
            for i in packetDescriptions.indices { packetDescriptions[i].mStartOffset -= Int64(cut) }
            nextPacket = 0
        }
        return noErr
    }

    private func decode() throws {
        guard let converter, let outputFormat else { return }
        while true {
            guard let buffer = AVAudioPCMBuffer(pcmFormat: outputFormat, frameCapacity: framesPerBuffer) else { return }
            buffer.frameLength = buffer.frameCapacity
            var frames = buffer.frameCapacity
            let status = AudioConverterFillComplexBuffer(converter, unitStreamerInput, Unmanaged.passUnretained(self).toOpaque(), &frames, buffer.mutableAudioBufferList, nil)
            buffer.frameLength = frames
            if frames > 0 {
                if let previous = held { schedule(previous, last: false) }
                held = buffer
            }
            if status == needsMoreData { return }
            try check(status, "AudioConverterFillComplexBuffer")
            if frames < buffer.frameCapacity && ended { return }
        }
    }

    // MARK: Output unit and engine

    /// Pauses the hardware `after` seconds from its start for half a second (a player's pause
    /// button: stopHardware, then startHardware).
    var pauseAt: Double?

    private func schedulePause(_ au: AUAudioUnit) {
        guard let pauseAt else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + pauseAt) {
            au.stopHardware()
            usleep(500_000)
            do { try au.startHardware() } catch { FileHandle.standardError.write("error: resume: \(error)\n".data(using: .utf8)!) }
        }
    }

    private func startOutput() throws {
        guard let format = outputFormat, output == nil else { return }
        try engine.enableManualRenderingMode(.realtime, format: format, maximumFrameCount: 4096)
        engine.attach(player)
        engine.connect(player, to: engine.mainMixerNode, format: format)
        try engine.start()

        var description = AudioComponentDescription(componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_DefaultOutput,
                                                    componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0)
        #if os(iOS)
        description.componentSubType = kAudioUnitSubType_RemoteIO
        #endif
        let made = Instantiation()
        AVAudioUnit.instantiate(with: description, options: []) { au, error in
            made.finish(au, error)
        }
        made.done.wait()
        guard let unit = made.unit else { throw made.error ?? StreamFailure(status: -1, operation: "AVAudioUnit.instantiate") }
        output = unit
        let au = unit.auAudioUnit
        try au.inputBusses[0].setFormat(format)
        let render = engine.manualRenderingBlock
        au.outputProvider = { _, _, frameCount, _, data in
            var status: OSStatus = noErr
            _ = render(frameCount, data, &status)
            return status
        }
        try au.allocateRenderResources()
        try au.startHardware()
        schedulePause(au)
    }

    private func schedule(_ buffer: AVAudioPCMBuffer, last: Bool) {
        scheduled.lock()
        while scheduledCount >= maximumScheduledBuffers { scheduled.wait() }
        scheduledCount += 1
        scheduled.unlock()
        framesScheduled += AVAudioFramePosition(buffer.frameLength)
        player.scheduleBuffer(buffer, at: nil, options: [], completionCallbackType: .dataRendered) { [weak self] _ in
            guard let self else { return }
            self.scheduled.lock()
            self.scheduledCount -= 1
            self.scheduled.signal()
            self.scheduled.unlock()
            if last { self.lastRendered.signal() }
        }
        if !player.isPlaying && (scheduledCount >= 4 || last) { player.play() }
    }
}

/// The result of an asynchronous instantiation, handed back from the completion handler.
final class Instantiation: @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    private(set) var unit: AVAudioUnit?
    private(set) var error: Error?
    func finish(_ unit: AVAudioUnit?, _ error: Error?) {
        self.unit = unit
        self.error = error
        done.signal()
    }
}

func unitStreamerListener(_ client: UnsafeMutableRawPointer, _ stream: AudioFileStreamID, _ property: AudioFileStreamPropertyID,
                          _ flags: UnsafeMutablePointer<AudioFileStreamPropertyFlags>) {
    Unmanaged<UnitStreamer>.fromOpaque(client).takeUnretainedValue().propertyChanged(property)
}

func unitStreamerPackets(_ client: UnsafeMutableRawPointer, _ bytes: UInt32, _ packets: UInt32, _ data: UnsafeRawPointer,
                         _ descriptions: UnsafeMutablePointer<AudioStreamPacketDescription>?) {
    Unmanaged<UnitStreamer>.fromOpaque(client).takeUnretainedValue().packets(packets, bytes: bytes, data: data, descriptions: descriptions)
}

func unitStreamerInput(_ converter: AudioConverterRef, _ count: UnsafeMutablePointer<UInt32>, _ data: UnsafeMutablePointer<AudioBufferList>,
                       _ descriptions: UnsafeMutablePointer<UnsafeMutablePointer<AudioStreamPacketDescription>?>?,
                       _ user: UnsafeMutableRawPointer?) -> OSStatus {
    Unmanaged<UnitStreamer>.fromOpaque(user!).takeUnretainedValue().input(count, data, descriptions)
}

// MARK: Main

var arguments = Array(CommandLine.arguments.dropFirst())
var hint: AudioFileTypeID = 0
if let i = arguments.firstIndex(of: "--hint"), i + 1 < arguments.count {
    switch arguments[i + 1] {
    case "mp3": hint = kAudioFileMP3Type
    case "m4a": hint = kAudioFileM4AType
    case "adts": hint = kAudioFileAAC_ADTSType
    default: hint = 0
    }
    arguments.removeSubrange(i...(i + 1))
}
var pauseAt: Double?
if let i = arguments.firstIndex(of: "--pause-at"), i + 1 < arguments.count {
    pauseAt = Double(arguments[i + 1])
    arguments.removeSubrange(i...(i + 1))
}
if let i = arguments.firstIndex(of: "--buffer-frames"), i + 1 < arguments.count, var frames = UInt32(arguments[i + 1]) {
    arguments.removeSubrange(i...(i + 1))
    var device = AudioObjectID(0)
    var size = UInt32(MemoryLayout<AudioObjectID>.size)
    var address = AudioObjectPropertyAddress(mSelector: kAudioHardwarePropertyDefaultOutputDevice, mScope: kAudioObjectPropertyScopeGlobal,
                                             mElement: kAudioObjectPropertyElementMain)
    var status = AudioObjectGetPropertyData(AudioObjectID(kAudioObjectSystemObject), &address, 0, nil, &size, &device)
    if status == noErr {
        address.mSelector = kAudioDevicePropertyBufferFrameSize
        status = AudioObjectSetPropertyData(device, &address, 0, nil, UInt32(MemoryLayout<UInt32>.size), &frames)
    }
    if status != noErr { FileHandle.standardError.write("error: BufferFrameSize \(frames): \(status)\n".data(using: .utf8)!); exit(1) }
}
guard let path = arguments.first, let file = FileHandle(forReadingAtPath: path) else {
    FileHandle.standardError.write("usage: porting-auaudiounit-streamer FILE [CHUNK_BYTES] [--hint mp3|m4a|adts|none] [--pause-at SECONDS] [--buffer-frames N]\n".data(using: .utf8)!)
    exit(2)
}
let chunk = arguments.count > 1 ? Int(arguments[1]) ?? 4096 : 4096

do {
    let streamer = try UnitStreamer(hint: hint)
    streamer.pauseAt = pauseAt
    while true {
        let data = file.readData(ofLength: chunk)
        if data.isEmpty { break }
        try streamer.receive(data)
    }
    try streamer.finish()
    guard let format = streamer.outputFormat else {
        FileHandle.standardError.write("error: the stream gave no format (no FormatList, no ReadyToProducePackets)\n".data(using: .utf8)!)
        exit(1)
    }
    streamer.waitForLastBuffer()
    streamer.stop()
    print("streamed \(streamer.packetsParsed) packets, rendered \(streamer.framesScheduled) frames of \(format.sampleRate) Hz audio; converter made on \(streamer.converterMadeOn); format list of \(streamer.formatListItems)")
} catch {
    FileHandle.standardError.write("error: \(error)\n".data(using: .utf8)!)
    exit(1)
}
