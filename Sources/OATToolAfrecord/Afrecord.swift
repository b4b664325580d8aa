// afrecord: records audio from an input device into a file (the recording side of afconvert).
// The tool's code, run by the thin afrecord executable (Sources/afrecord) and by the multi-call
// binary oat-tools.
import AudioToolboxKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

let usage = """
usage: afrecord [options] OUTPUT
       afrecord --monitor [monitor options]      (input through effects to the output, live)
       afrecord --measure-latency [--input SPEC] [--output SPEC]
  -f, --file TYPE       file format: WAVE, RF64, AIFF, AIFC, caff, m4af, flac, Ogg (opus), adts, MPG3
                        (default: from OUTPUT's extension)
  -d, --data FORMAT[@RATE]
                        data format: LEI16 BEI16 LEI24 BEI24 LEI32 BEI32 LEF32 BEF32 UI8 I8
                        ulaw alaw aac alac flac opus .mp3, optionally @RATE (default rate 44100,
                        48000 for opus; default format: what the file type holds, 16-bit PCM
                        for WAVE/AIFF/CAF)
  -c, --channels N      channel count (default 2)
  -b, --bitrate BPS     bit rate in bits per second (aac, opus, .mp3)
  -q, --quality Q       codec quality 0...127
  -t, --time SECONDS    stop after this much audio (exact frame count)
  --input SPEC          auto (default), pulse, pulse:SOURCE (e.g. SINK.monitor), alsa, alsa:DEVICE
  --list                list input devices and exit
  --no-meter            no level meter
  -v, --verbose         say which device is used
  --version             print the version and exit
  -h, --help            this help
Monitor mode (no file is written; -c sets the input channels, -t the duration):
  --monitor             route the input through the effects below to the output until Ctrl-C
  --output SPEC         auto (default), pulse, pulse:SINK, alsa, alsa:DEVICE, null
  --gain DB             input gain in dB (-60...24, default 0)
  --eq PRESET|BANDS     flat, rock, pop, jazz, classical, bass, vocal, treble; bass+6,mid-2,treble-3;
                        or 10 comma-separated dB values for the graphic bands 31.25 Hz ... 16 kHz
  --reverb [ROOM]       small, medium, large (default), hall, cathedral, plate
  --compress            compressor (-24 dB, 3:1, +6 dB makeup) and a -1 dBFS limiter
  --voice               echo cancellation (against what the monitor plays) and noise suppression
  --rate HZ             the monitor's sample rate (default 48000)
  --measure-latency     play a click train on the output, find it in the input by
                        cross-correlation and print the round-trip latency
Ctrl-C (SIGINT), SIGTERM or SIGHUP stops recording and finishes the file. The input device is
opened before OUTPUT is touched; an existing OUTPUT is replaced only when the recording is
finished (until then it is recorded beside it, as .OUTPUT.XXXXXX.partial).
"""

func fail(_ message: String, code: Int32 = 2) -> Never {
    writeStandardError("afrecord: \(message)")
    if code == 2 { writeStandardError(usage) }
    exit(code)
}

// The state the queue's callbacks and the signal handlers share with the main thread.

/// The file and what the callback counts; used by the queue's thread while recording, by the
/// main thread after the queue has stopped.
final class Recording: @unchecked Sendable {
    let writer: AudioFileWriter
    var frames: Int64 = 0
    var error: AudioError?
    init(writer: AudioFileWriter) { self.writer = writer }
}

let interrupted = Atomic<Bool>(false)
let finished = Atomic<Bool>(false)
let lostReason = Locked<String?>(nil)
let box = Locked<Recording?>(nil)

/// The input device, opened before the output is created (so a missing device leaves an
/// existing OUTPUT untouched); the queue takes it when it starts.
let preopened = Locked<(any AudioInputDevice)?>(nil)

/// Runs afrecord with `arguments` (the command line without the program name); exits with its status.
@MainActor package func runAfrecord(arguments: [String]) -> Never {
    var fileType: AudioFileType?
    var dataFormat: AudioStreamBasicDescription?
    var channels: UInt32 = 2
    var encoderSettings = AudioEncoderSettings()
    var seconds: Double?
    var inputSpec = AudioInputSpec.auto
    var listOnly = false
    var showMeter = true
    var verbose = false
    var positional: [String] = []
    var monitorOptions = MonitorCommand()
    var args = ToolArguments(ArraySlice(arguments), fail: { fail($0) })
    func value(_ flag: String) -> String { args.value(flag) }
    func integer(_ flag: String, _ range: ClosedRange<Int>) -> Int { args.integer(flag, range) }

    while let arg = args.next() {
        switch arg {
        case "-f", "--file":
            fileType = args.fileType(arg)
        case "-d", "--data":
            let v = value(arg)
            guard let f = AudioFileConversion.dataFormat(named: v) else { fail("unknown data format '\(v)'") }
            if f.formatID == .mpeg4AAC_HE || f.formatID == .mpeg4AAC_HE_V2 {
                fail("HE-AAC ('\(f.formatID)') needs libfdk_aac, which this libavcodec does not have", code: 1)
            }
            dataFormat = f
        case "-c", "--channels": channels = UInt32(integer(arg, 1...8))
        case "-b", "--bitrate": encoderSettings.bitRate = integer(arg, 6000...1_536_000)
        case "-q", "--quality": encoderSettings.quality = integer(arg, 0...127)
        case "-t", "--time":
            let v = value(arg)
            guard let t = Double(v), t > 0, t < 1e7 else { fail("-t \(v): expected a positive number of seconds") }
            seconds = t
        case "--input":
            let v = value(arg)
            guard let spec = AudioInputSpec(parsing: v) else { fail("--input \(v): expected auto, pulse, pulse:SOURCE, alsa or alsa:DEVICE") }
            inputSpec = spec
        case "--list": listOnly = true
        case "--no-meter": showMeter = false
        case "-v", "--verbose": verbose = true
        case "--monitor": monitorOptions.monitor = true
        case "--measure-latency": monitorOptions.measureLatency = true
        case "--output":
            let v = value(arg)
            guard let spec = AudioOutputSpec(parsing: v) else { fail("--output \(v): expected auto, pulse, pulse:SINK, alsa, alsa:DEVICE or null") }
            monitorOptions.output = spec
        case "--gain":
            let v = value(arg)
            guard let db = Float(v), db >= -60, db <= 24 else { fail("--gain \(v): expected dB in -60...24") }
            monitorOptions.options.gainDB = db
        case "--eq":
            let v = value(arg)
            guard let bands = AUNBandEQNode.bands(parsing: v) else {
                fail("--eq \(v): expected a preset (\(AUNBandEQNode.presets.keys.sorted().joined(separator: ", "))), bands like bass+6,treble-3, or 10 dB values")
            }
            monitorOptions.options.eq = bands
        case "--reverb":
            if let next = args.peek(), AUReverbNode.rooms[next.lowercased()] != nil {
                monitorOptions.options.reverbRoom = args.value(arg).lowercased()
            } else {
                monitorOptions.options.reverbRoom = "large"
            }
        case "--compress": monitorOptions.options.compress = true
        case "--voice": monitorOptions.options.voiceProcessing = true
        case "--rate": monitorOptions.options.sampleRate = Double(integer(arg, 8000...192_000))
        case "-h", "--help": print(usage); exitTool(0, "afrecord")
        case "--version": print(OpenAudioToolboxVersion.line(tool: "afrecord"), terminator: ""); exitTool(0, "afrecord")
        default:
            if arg.hasPrefix("-") && arg.count > 1 { fail("unknown option \(arg)") }
            positional.append(arg)
        }
    }

    if listOnly {
        let devices = AudioInput.listDevices()
        if devices.isEmpty { print("no input devices found") }
        for d in devices {
            var notes: [String] = []
            if d.isDefault { notes.append("default") }
            if d.isMonitor { notes.append("monitor") }
            if let f = d.nativeFormat { notes.append("\(f)") }
            print("\(d.spec)\t\(d.description)\(notes.isEmpty ? "" : " (\(notes.joined(separator: ", ")))")")
        }
        exitTool(0, "afrecord")
    }

    if monitorOptions.monitor || monitorOptions.measureLatency {
        guard positional.isEmpty else { fail("--monitor and --measure-latency write no file (unexpected \(positional[0]))") }
        monitorOptions.options.inputChannels = Int(channels)
        exitTool(monitorOptions.run(input: inputSpec, seconds: seconds, verbose: verbose), "afrecord")
    }

    guard positional.count == 1 else { fail(positional.isEmpty ? "no output file" : "too many file arguments") }
    let output = positional[0]
    guard let type = fileType ?? AudioFileConversion.fileType(forExtension: output) else {
        fail("cannot tell the file format of \(output) from its name: give -f")
    }
    var target = dataFormat ?? AudioFileConversion.defaultFormat(for: type, sourceBits: 16, sourceFloat: false)
    if target.sampleRate == 0 { target.sampleRate = target.formatID == .opus ? 48000 : 44100 }
    target.channelsPerFrame = channels
    if target.isPCM {
        let bytes = (target.bitsPerChannel + 7) / 8
        target.bytesPerFrame = bytes * channels
        target.bytesPerPacket = target.bytesPerFrame
        target.framesPerPacket = 1
    }

    // MARK: The queue and the file

    let spec = inputSpec
    let queue: AudioInputQueue
    do {
        queue = try AudioInputQueue(format: target, encoderSettings: encoderSettings, input: { f throws(AudioError) in
            if let device = preopened.withLock({ d -> (any AudioInputDevice)? in defer { d = nil }; return d }) {
                if device.format == f { return device }
                device.close()
            }
            let opened = try AudioInput.open(spec, format: f)
            if let notice = opened.notice { writeStandardError("afrecord: \(notice)") }
            return opened.device
        }) { queue, delivery in
            guard let r = box.withLock({ $0 }) else { return }
            let b = delivery.buffer
            if r.error == nil {
                do throws(AudioError) {
                    try r.writer.writePackets(UnsafeRawBufferPointer(start: b.audioData.baseAddress, count: b.audioDataByteSize),
                                              descriptions: b.packetDescriptions, count: delivery.packetCount)
                    r.frames += Int64(delivery.frameCount)
                } catch {
                    r.error = error
                    interrupted.store(true, ordering: .relaxed)
                }
            }
            try? queue.enqueue(b)
        }
        try AudioFileWriter.check(queue.streamDescription, in: type)
    } catch {
        fail("\(AudioFileConversion.naming(output, error)) (nothing was recorded or created)", code: 1)
    }
    /// What a failure before recording says about OUTPUT.
    let untouched: String = {
        var st = stat()
        return lstat(output, &st) == 0 ? "\(output) was left as it was" : "\(output) was not created"
    }()
    do {
        let opened = try AudioInput.open(spec, format: AudioDeviceFormat(sampleRate: target.sampleRate, channels: Int(target.channelsPerFrame)))
        if let notice = opened.notice { writeStandardError("afrecord: \(notice)") }
        preopened.withLock { $0 = opened.device }
    } catch {
        fail("\(AudioFileConversion.naming(output, error)) (nothing was recorded; \(untouched))", code: 1)
    }
    queue.eventHandler = { event in
        switch event {
        case .finished: finished.store(true, ordering: .releasing)
        case .device(.lost(let reason)): lostReason.withLock { $0 = reason }
        case .encoderError(let e): writeStandardError("afrecord: \(e)")
        case .device(.underrun(let frames)): writeStandardError("afrecord: input overrun (\(frames) frames lost by the device)")
        case .droppedFrames(let total): writeStandardError("afrecord: \(total) captured frames dropped so far (the recorder fell behind)")
        default: break
        }
    }
    queue.isLevelMeteringEnabled = true
    let format = queue.streamDescription
    let rate = format.sampleRate

    let writer: AudioFileWriter
    do {
        // Crash safe: headers, Ogg pages, FLAC STREAMINFO, CAF packet table or MP4 fragment every
        // half second, so a killed afrecord leaves a readable file missing at most that much.
        var options = AudioFileWriterOptions()
        options.crashSafe = true
        options.checkpointSeconds = 0.5
        let destination = try SafeOutputFile(path: output, mode: .recording)
        writer = try AudioFileWriter(output: destination, fileType: type, dataFormat: format, magicCookie: queue.magicCookie, options: options)
        if let priming = queue.packetTableInfo?.primingFrames ?? queue.primingFrames, priming > 0 {
            writer.packetTableInfo = AudioFilePacketTableInfo(numberValidFrames: 0, primingFrames: priming, remainderFrames: 0)
        }
    } catch {
        fail("\(error)", code: 1)
    }
    let recording = Recording(writer: writer)
    box.withLock { $0 = recording }

    // Buffers of about a tenth of a second (seed 000's DeriveBufferSize).
    let framesPerBuffer = Int(rate / 10)
    let maxPacket = queue.maximumOutputPacketSize
    let packetsPerBuffer: Int
    let bufferBytes: Int
    if format.bytesPerPacket > 0 {
        packetsPerBuffer = max(1, framesPerBuffer / Int(max(1, format.framesPerPacket)))
        bufferBytes = packetsPerBuffer * Int(format.bytesPerPacket)
    } else {
        packetsPerBuffer = framesPerBuffer / Int(format.framesPerPacket > 0 ? format.framesPerPacket : 1152) + 2
        bufferBytes = packetsPerBuffer * maxPacket
    }
    do {
        for _ in 0..<4 {
            try queue.enqueue(try queue.allocateBuffer(byteCapacity: bufferBytes,
                                                       packetDescriptionCapacity: format.bytesPerPacket > 0 ? 0 : packetsPerBuffer))
        }
    } catch {
        writer.discard()
        fail("\(error) (nothing was recorded; \(untouched))", code: 1)
    }

    // A signal finishes the recording (it is kept, never removed).
    SafeOutputFile.installSignalHandler(SIGINT) { _ in interrupted.store(true, ordering: .relaxed) }
    SafeOutputFile.installSignalHandler(SIGTERM) { _ in interrupted.store(true, ordering: .relaxed) }
    SafeOutputFile.installSignalHandler(SIGHUP) { _ in interrupted.store(true, ordering: .relaxed) }

    if let seconds { queue.setFrameLimit(Int64((seconds * rate).rounded())) }
    do {
        try queue.start()
    } catch {
        writer.discard()
        fail("\(error) (nothing was recorded; \(untouched))", code: 1)
    }
    if verbose { writeStandardError("afrecord: recording from \(queue.currentDevice ?? "?") to \(output) (\(type.displayName), \(format))") }

    // MARK: Meter

    let isTerminal = isatty(2) != 0
    func meterBar(_ db: Float, width: Int) -> String {
        let fraction = max(0, min(1, (db + 60) / 60))
        let filled = Int(fraction * Float(width))
        return String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
    }
    func meterLine() -> String {
        let elapsed = Double(recording.frames) / rate
        let levels = queue.currentLevelsDB()
        let minutes = Int(elapsed) / 60
        let secs = elapsed - Double(minutes * 60)
        var text = leftPadded(String(minutes), 2, "0") + ":" + leftPadded(fixed(secs, 1), 4, "0")
        for (i, l) in levels.enumerated() {
            text += "  \(levels.count == 1 ? "M" : i == 0 ? "L" : i == 1 ? "R" : String(i + 1)) [\(meterBar(l.peakPower, width: 20))] \(leftPadded(fixed(Double(max(-120, l.peakPower)), 1), 6)) dB"
        }
        return text
    }

    var lastPlain = -1
    while !interrupted.load(ordering: .relaxed) && !finished.load(ordering: .acquiring) && queue.isRunning {
        usleep(50_000)
        guard showMeter else { continue }
        if isTerminal {
            writeRaw("\r" + meterLine() + "  ")
        } else {
            let second = Int(Double(recording.frames) / rate)
            if second != lastPlain { lastPlain = second; writeStandardError(meterLine()) }
        }
    }
    if showMeter && isTerminal { writeRaw("\n") }
    queue.stop(immediately: false)

    // MARK: Finish the file

    if let reason = lostReason.withLock({ $0 }) { writeStandardError("afrecord: the input device went away (\(reason)); finishing the file") }
    if let info = queue.packetTableInfo { writer.packetTableInfo = info }
    if format.formatID == .flac, let cookie = queue.magicCookie { writer.magicCookie = cookie }
    do {
        try writer.close()
    } catch {
        // Keep what was recorded: in place if this run created OUTPUT, else beside it.
        if let kept = writer.safeOutput?.keepUnfinished(), kept != output {
            fail("\(error) (the unfinished recording is in \(kept); \(output) was left as it was)", code: 1)
        }
        fail("\(error) (\(output) may be incomplete)", code: 1)
    }
    if let e = recording.error { fail("\(e) (\(output) holds what was written before)", code: 1) }
    if let e = queue.encoderError { fail("\(e) (\(output) holds what was written before)", code: 1) }
    let valid = writer.packetTableInfo.map { $0.numberValidFrames > 0 ? $0.numberValidFrames : writer.frameCount } ?? writer.frameCount
    print("\(terminalSafe(output)): \(type.displayName), \(format), \(valid) frames (\(fixed(Double(valid) / rate, 3)) s), \(writer.packetCount) packets, \(writer.audioDataByteCount) bytes of audio")
    exitTool(0, "afrecord")
}

func writeRaw(_ text: String) {
    _ = text.withCString { write(2, $0, strlen($0)) }
}
