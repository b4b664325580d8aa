// An AAC recorder written as on macOS (only the import differs): it asks the input queue for the
// encoder's cookie with kAudioConverterCompressionMagicCookie (as recorders built on Apple's
// samples do), writes it to the M4A file, records a tone played into a private PulseAudio daemon's
// sink from its monitor, and the file then decodes to that tone.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
import Foundation
import Testing

private final class AACRecorder {
    var queue: AudioQueueRef?
    var file: AudioFileID?
    var packet: Int64 = 0
    var running = true
    var writeErrors = 0
}

private func recorderCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef,
                              _ startTime: UnsafePointer<AudioTimeStamp>, _ packets: UInt32,
                              _ descriptions: UnsafePointer<AudioStreamPacketDescription>?) {
    let recorder = Unmanaged<AACRecorder>.fromOpaque(userData!).takeUnretainedValue()
    var count = packets
    if packets > 0 {
        if AudioFileWritePackets(recorder.file!, false, buffer.pointee.mAudioDataByteSize, descriptions, recorder.packet, &count,
                                 buffer.pointee.mAudioData) == noErr {
            recorder.packet += Int64(count)
        } else {
            recorder.writeErrors += 1
        }
    }
    if recorder.running { AudioQueueEnqueueBuffer(queue, buffer, 0, nil) }
}

/// Copies the encoder's cookie from the queue to the file through the converter property.
private func copyEncoderCookie(_ queue: AudioQueueRef, _ file: AudioFileID) -> OSStatus {
    var size: UInt32 = 0
    var status = AudioQueueGetPropertySize(queue, kAudioConverterCompressionMagicCookie, &size)
    guard status == noErr, size > 0 else { return status }
    let cookie = UnsafeMutableRawPointer.allocate(byteCount: Int(size), alignment: 1)
    defer { cookie.deallocate() }
    status = AudioQueueGetProperty(queue, kAudioConverterCompressionMagicCookie, cookie, &size)
    guard status == noErr else { return status }
    return AudioFileSetProperty(file, kAudioFilePropertyMagicCookieData, size, cookie)
}

@Suite("PlaybackAACRecorderCookieTests", .serialized, .requires(PulseTestDaemon.unavailableReason))
struct PlaybackAACRecorderCookieTests {
    @Test("An AAC recorder copies the queue's converter cookie into the M4A, and the file decodes to the tone")
    func aacRecorderWritesTheCookieFromTheQueue() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        setenv("OAT_INPUT", "pulse:\(daemon.monitorSource)", 1)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("OAT_INPUT"); unsetenv("PULSE_SERVER"); daemon.stop() }
        let path = "\(daemon.directory)/recorded.m4a"

        var format = AudioStreamBasicDescription()
        format.mFormatID = kAudioFormatMPEG4AAC
        format.mSampleRate = 44100
        format.mChannelsPerFrame = 2
        let recorder = AACRecorder()
        let user = Unmanaged.passUnretained(recorder).toOpaque()
        try #require(AudioQueueNewInput(&format, recorderCallback, user, nil, nil, 0, &recorder.queue) == noErr)
        let queue = recorder.queue!
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        try #require(AudioQueueGetProperty(queue, kAudioConverterCurrentOutputStreamDescription, &format, &size) == noErr)
        try #require(AudioFileCreateWithURL(URL(fileURLWithPath: path) as CFURL, kAudioFileM4AType, &format, .eraseFile, &recorder.file) == noErr)
        #expect(copyEncoderCookie(queue, recorder.file!) == noErr)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            try #require(AudioQueueAllocateBuffer(queue, 32768, &buffer) == noErr)
            AudioQueueEnqueueBuffer(queue, buffer!, 0, nil)
        }
        try #require(AudioQueueStart(queue, nil) == noErr)

        // 1.5 s of 1 kHz into the sink whose monitor the queue records.
        let rate = 44100, seconds = 1.5, freq = 1000.0
        var samples = [Float](repeating: 0, count: Int(seconds * Double(rate)) * 2)
        for i in 0..<(samples.count / 2) {
            let v = Float(0.5 * sin(2 * Double.pi * freq * Double(i) / Double(rate)))
            samples[2 * i] = v
            samples[2 * i + 1] = v
        }
        let tone = "\(daemon.directory)/tone.raw"
        _ = FileManager.default.createFile(atPath: tone, contents: samples.withUnsafeBytes { Data($0) })
        let pacat = try #require(ChildProcess.which("pacat"), "pacat is not installed (pulseaudio-utils)")
        let player = try ChildProcess.spawn(pacat, ["--playback", "-d", daemon.sinkName, "--raw", "--format=float32le", "--rate=\(rate)",
                                                    "--channels=2", "--latency-msec=20", tone],
                                            environment: daemon.environment, outputPath: "\(daemon.directory)/pacat.log")
        let deadline = Date().addingTimeInterval(seconds + 10)
        while player.isRunning && Date() < deadline { usleep(20_000) }
        player.killNow()
        usleep(300_000)
        recorder.running = false
        AudioQueueStop(queue, true)
        #expect(copyEncoderCookie(queue, recorder.file!) == noErr)
        AudioQueueDispose(queue, true)
        AudioFileClose(recorder.file!)
        #expect(recorder.writeErrors == 0 && recorder.packet > 40)

        // The file decodes (it could not without the cookie) to the tone.
        var ext: ExtAudioFileRef?
        try #require(ExtAudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, &ext) == noErr)
        defer { ExtAudioFileDispose(ext!) }
        var client = AudioStreamBasicDescription(mSampleRate: 44100, mFormatID: kAudioFormatLinearPCM, mFormatFlags: kAudioFormatFlagsNativeFloatPacked,
                                                 mBytesPerPacket: 8, mFramesPerPacket: 1, mBytesPerFrame: 8, mChannelsPerFrame: 2,
                                                 mBitsPerChannel: 32, mReserved: 0)
        try #require(ExtAudioFileSetProperty(ext!, kExtAudioFileProperty_ClientDataFormat, UInt32(MemoryLayout<AudioStreamBasicDescription>.size), &client) == noErr)
        var decoded: [Float] = []
        var chunk = [Float](repeating: 0, count: 4096 * 2)
        while true {
            var frames: UInt32 = 4096
            let status = chunk.withUnsafeMutableBytes { raw -> OSStatus in
                var list = AudioBufferList(mNumberBuffers: 1, mBuffers: AudioBuffer(mNumberChannels: 2, mDataByteSize: UInt32(raw.count),
                                                                                     mData: raw.baseAddress))
                return ExtAudioFileRead(ext!, &frames, &list)
            }
            try #require(status == noErr)
            if frames == 0 { break }
            decoded += stride(from: 0, to: Int(frames) * 2, by: 2).map { chunk[$0] }
        }
        #expect(decoded.count > 44100, "\(decoded.count) frames decoded")
        let loud = decoded.filter { abs($0) > 0.1 }.count
        try #require(loud > 22050, "the tone is missing from the recording (\(loud) loud frames)")
        // The tone's level at 1 kHz against 700 Hz: the median of nine 0.1 s windows from 0.1 s after
        // it arrived (a dropout under load spoils only its own windows).
        let start = try #require(decoded.firstIndex { abs($0) > 0.1 })
        let windows = (0..<9).compactMap { w -> (Double, Double)? in
            let from = start + 4410 + w * 4410
            guard from + 4410 <= decoded.count else { return nil }
            let x = Array(decoded[from..<(from + 4410)])
            return (level(x, freq: freq, rate: 44100), level(x, freq: 700, rate: 44100))
        }
        try #require(windows.count >= 5)
        let toneLevel = windows.map(\.0).sorted()[windows.count / 2], other = windows.map(\.1).sorted()[windows.count / 2]
        #expect(toneLevel > 0.3 && toneLevel < 0.7, "1 kHz at \(toneLevel) (played at 0.5)")
        #expect(other < toneLevel / 30, "700 Hz at \(other)")
    }
}

/// The amplitude of `freq` in `x` (a single-bin DFT).
private func level(_ x: [Float], freq: Double, rate: Double) -> Double {
    var re = 0.0, im = 0.0
    for (i, v) in x.enumerated() {
        let phase = 2 * Double.pi * freq * Double(i) / rate
        re += Double(v) * cos(phase)
        im -= Double(v) * sin(phase)
    }
    return 2 * (re * re + im * im).squareRoot() / Double(x.count)
}
