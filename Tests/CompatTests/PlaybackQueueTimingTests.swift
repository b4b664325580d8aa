// When an output queue hands a buffer back, written as a macOS chapter program would be (only
// the import differs): three buffers of half a second, the callback refills and re-enqueues
// until the data runs out, the main thread then waits 2 s and calls AudioQueueStop(queue, true).
// On Apple a buffer comes back once it has been played, so the 2 s cover what is still queued
// and nothing is lost. The "speaker" is a private PulseAudio null sink whose monitor parec
// records; the file's growth, sampled every 5 ms, dates the recording, so each buffer's
// return can be set against the moment its audio was heard.
#if canImport(AudioToolbox)
import AudioToolbox
#else
import OpenAudioToolbox
#endif
import OATTestSupport
import Dispatch
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let sampleRate = 44100.0
private let framesPerBuffer = 22050          // half a second
private let bufferCount = 12                 // six seconds of audio
private let markerFrames = 441               // a 10 ms burst closes each buffer

/// Sample `i` of the program's signal: a quiet 440 Hz tone, and a loud 1 kHz burst in the last
/// 10 ms of every buffer (so the end of each buffer can be found in the recording).
private func signal(_ i: Int) -> Int16 {
    let inBuffer = i % framesPerBuffer
    let loud = inBuffer >= framesPerBuffer - markerFrames
    let level = loud ? 0.6 : 0.05
    let freq = loud ? 1000.0 : 440.0
    return Int16(level * 32767 * sin(2 * Double.pi * freq * Double(i) / sampleRate))
}

/// The program's state (its `inUserData`).
final class TimingPlayerState: @unchecked Sendable {
    var nextChunk = 0
    var isDone = false
    /// Which chunk each buffer holds, by buffer address.
    var chunkOf: [Int: Int] = [:]
    /// (chunk, host time) of every buffer the callback got back.
    let returned = Locked<[(chunk: Int, hostTime: UInt64)]>([])
    let done = Atomic<Bool>(false)
}

/// Fills `buffer` with the next chunk and enqueues it; marks the state done at the end.
private func fillAndEnqueue(_ state: TimingPlayerState, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    guard state.nextChunk < bufferCount else {
        state.isDone = true
        state.done.store(true, ordering: .releasing)
        return
    }
    let chunk = state.nextChunk
    state.nextChunk += 1
    let samples = buffer.pointee.mAudioData.assumingMemoryBound(to: Int16.self)
    for f in 0..<framesPerBuffer {
        let v = signal(chunk * framesPerBuffer + f)
        samples[2 * f] = v
        samples[2 * f + 1] = v
    }
    buffer.pointee.mAudioDataByteSize = UInt32(framesPerBuffer * 4)
    state.chunkOf[Int(bitPattern: UnsafeMutableRawPointer(buffer))] = chunk
    AudioQueueEnqueueBuffer(queue, buffer, 0, nil)
}

private func timingOutputCallback(_ user: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let state = Unmanaged<TimingPlayerState>.fromOpaque(user!).takeUnretainedValue()
    let now = AudioGetCurrentHostTime()
    if let chunk = state.chunkOf[Int(bitPattern: UnsafeMutableRawPointer(buffer))] {
        state.returned.withLock { $0.append((chunk, now)) }
    }
    if state.isDone { return }
    fillAndEnqueue(state, queue, buffer)
}

/// Samples a growing file's size every 5 ms: (host time, bytes).
private final class FileGrowth: @unchecked Sendable {
    let samples = Locked<[(hostTime: UInt64, bytes: Int)]>([])
    let stopFlag = Atomic<Bool>(false)
    let finished = DispatchSemaphore(value: 0)

    init(path: String) {
        DispatchQueue.global().async { [self] in
            while !stopFlag.load(ordering: .acquiring) {
                var st = stat()
                let bytes = stat(path, &st) == 0 ? Int(st.st_size) : 0
                samples.withLock { $0.append((AudioGetCurrentHostTime(), bytes)) }
                usleep(5_000)
            }
            finished.signal()
        }
    }

    func stop() {
        stopFlag.store(true, ordering: .releasing)
        finished.wait()
    }

    /// When recorded frame 0 reached the monitor (host time, ns): the null sink plays at a
    /// steady rate, so frame i reached it at start + i / rate; each sample (t, bytes) bounds the
    /// start from above by t - frames / rate (a sample taken late, under load, only loosens its
    /// bound), and the tightest bound is the estimate (parec's own delivery delay, up to its
    /// 20 ms fragments, stays in it).
    func recordingStart(frameBytes: Int, rate: Double) -> Double? {
        samples.withLock { s in
            s.filter { $0.bytes > 0 }.map { Double($0.hostTime) - Double($0.bytes / frameBytes) / rate * 1e9 }.min()
        }
    }
}

@Suite("PlaybackQueueTimingTests", .serialized, .requires(PulseTestDaemon.unavailableReason))
struct PlaybackQueueTimingTests {
    @Test func buffersComeBackWhenPlayedAndAStopTwoSecondsAfterTheLastLosesNothing() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let scratch = try ScratchDirectory("queue-timing")
        defer { scratch.remove() }
        let recording = try daemon.recordMonitor(to: "\(scratch.path)/monitor.raw")
        let growth = FileGrowth(path: recording.path)
        setenv("OAT_OUTPUT", "pulse:\(daemon.sinkName)", 1)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("OAT_OUTPUT"); unsetenv("PULSE_SERVER") }

        // The program.
        let state = TimingPlayerState()
        var format = AudioStreamBasicDescription(mSampleRate: sampleRate, mFormatID: kAudioFormatLinearPCM,
                                                 mFormatFlags: kLinearPCMFormatFlagIsSignedInteger | kLinearPCMFormatFlagIsPacked,
                                                 mBytesPerPacket: 4, mFramesPerPacket: 1, mBytesPerFrame: 4, mChannelsPerFrame: 2,
                                                 mBitsPerChannel: 16, mReserved: 0)
        var queue: AudioQueueRef?
        let user = Unmanaged.passUnretained(state).toOpaque()
        #expect(AudioQueueNewOutput(&format, timingOutputCallback, user, nil, nil, 0, &queue) == noErr)
        let q = try #require(queue)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            #expect(AudioQueueAllocateBuffer(q, UInt32(framesPerBuffer * 4), &buffer) == noErr)
            fillAndEnqueue(state, q, buffer!)
        }
        let started = AudioGetCurrentHostTime()
        #expect(AudioQueueStart(q, nil) == noErr)
        // Until the callback finds no more data, then 2 s, then a synchronous stop.
        while !state.done.load(ordering: .acquiring) && AudioGetCurrentHostTime() - started < 30_000_000_000 { usleep(10_000) }
        let readLast = AudioGetCurrentHostTime()
        usleep(2_000_000)
        #expect(AudioQueueStop(q, true) == noErr)
        AudioQueueDispose(q, true)
        usleep(300_000)
        growth.stop()
        let samples = recording.stop()

        // The bursts in the recording: runs of loud frames, in order.
        var burstEnds: [Int] = []
        var inBurst = false
        var quiet = 0
        for frame in 0..<(samples.count / 2) {
            let loud = abs(samples[2 * frame]) > 0.3
            if loud {
                inBurst = true
                quiet = 0
            } else if inBurst {
                quiet += 1
                if quiet > 100 {
                    burstEnds.append(frame - quiet + 1)
                    inBurst = false
                }
            }
        }
        if inBurst { burstEnds.append(samples.count / 2) }
        let returned = state.returned.withLock { $0 }
        let playedFor = Double(readLast - started) / 1e9
        print("queue timing: data ran out \(String(format: "%.2f", playedFor)) s after start; \(burstEnds.count) of \(bufferCount) buffers heard; \(returned.count) came back")
        #expect(burstEnds.count == bufferCount, "heard \(burstEnds.count) of \(bufferCount) buffers: the stop 2 s after the last read cut the audio")

        // Each buffer's return against the moment its last frame reached the monitor.
        var early: [Double] = []
        let start = try #require(growth.recordingStart(frameBytes: 8, rate: sampleRate), "the recording never grew")
        for (chunk, hostTime) in returned where chunk < burstEnds.count {
            let heard = start + Double(burstEnds[chunk]) / sampleRate * 1e9
            early.append((heard - Double(hostTime)) / 1e9)
        }
        let text = early.map { String(format: "%.3f", $0) }.joined(separator: " ")
        print("queue timing: seconds each buffer came back before its end was heard (negative: after): \(text)")
        #expect(early.count >= bufferCount - 3, "only \(early.count) returns could be dated")
        // Within the device's latency: never more than 0.1 s before it was heard (the dating is
        // good to about 25 ms), and not more than 0.5 s after.
        #expect(early.allSatisfy { $0 <= 0.1 }, "buffers came back before their audio was heard: \(text)")
        #expect(early.allSatisfy { $0 >= -0.5 }, "buffers came back long after their audio was heard: \(text)")
    }
}
