#if canImport(Glibc)
import Glibc
#endif
import OATDevices
import OATFiles
import OATTestSupport
import Synchronization
import Testing
@testable import OATQueueEngine

/// Collects what a queue reports.
final class QueueLog: Sendable {
    let returned = Locked<[Int]>([])
    let events = Locked<[AudioOutputQueueEvent]>([])
    let running = Locked<[Bool]>([])
}

func wait(seconds: Double, until condition: () -> Bool) -> Bool {
    let deadline = HostTime.now() + HostTime.ticks(seconds: seconds)
    while HostTime.now() < deadline {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}

/// Reads the Float32 WAV our WAV output device writes.
func readFloatWAV(_ path: String) -> [Float] {
    guard let bytes = Corpus.read(path), bytes.count >= 58 else { return [] }
    return bytes[58...].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
}

@Suite(.serialized) struct AudioOutputQueueTests {
    static var pluck: String? { Corpus.root.map { $0 + "/python-stdlib-audiodata/pluck-pcm16.au" } }

    /// Plays `file` through a queue into a WAV file as fast as possible, in buffers of
    /// `packetsPerBuffer` packets; returns the recorded samples and the log.
    static func play(_ path: String, packetsPerBuffer: Int64 = 500, options: (Int) -> AudioQueueEnqueueOptions = { _ in AudioQueueEnqueueOptions() },
                     configure: (AudioOutputQueue) throws -> Void = { _ in }) throws -> (samples: [Float], log: QueueLog, queue: AudioOutputQueue) {
        let file = try AudioFile(path: path)
        let out = "/tmp/oat-queue-\(UInt32.random(in: 0...UInt32.max)).wav"
        defer { removeFile(out) }
        let log = QueueLog()
        let queue = try AudioOutputQueue(format: file.dataFormat, magicCookie: file.magicCookie,
                                         output: { format throws(AudioError) in try NullOutputDevice.wavFile(path: out, format: format) }) { _, buffer in
            log.returned.withLock { $0.append(buffer.userData) }
        }
        queue.eventHandler = { e in log.events.withLock { $0.append(e) } }
        queue.addPropertyListener { q, p in if p == .isRunning { log.running.withLock { $0.append(q.isRunning) } } }
        try configure(queue)
        var next: Int64 = 0
        var index = 0
        while next < file.packetCount {
            let batch = try file.readPackets(next..<(next + packetsPerBuffer))
            let buffer = try queue.allocateBuffer(byteCapacity: max(1, batch.data.count), packetDescriptionCapacity: batch.packetDescriptions.count)
            batch.data.withUnsafeBytes { _ = buffer.fill($0, packetDescriptions: batch.packetDescriptions) }
            buffer.userData = index
            try queue.enqueue(buffer, options: options(index))
            next += Int64(batch.packetCount)
            index += 1
        }
        try queue.start()
        queue.stop(immediately: false)
        #expect(wait(seconds: 10) { !queue.isRunning && log.events.withLock { $0.contains(.ended) } })
        return (readFloatWAV(out), log, queue)
    }

    @Test(.requires(TestResource.corpusMissing)) func playsEverySampleThenStopsByItself() throws {
        let path = try TestResource.corpusFile("python-stdlib-audiodata/pluck-pcm16.au")
        let reference = try decodeWithToolbox(path)
        let (samples, log, queue) = try Self.play(path)
        #expect(samples.count == reference.samples.count)
        #expect(snr(reference.samples, samples) > 140)
        #expect(log.returned.withLock { $0 } == Array(0..<7))
        #expect(log.running.withLock { $0 } == [true, false])
        #expect(queue.underrunCount == 0)
        queue.dispose(immediately: true)
    }

    @Test(.requires(TestResource.corpusMissing)) func trimsFramesPerBuffer() throws {
        let path = try TestResource.corpusFile("python-stdlib-audiodata/pluck-pcm16.au")
        let reference = try decodeWithToolbox(path)
        let (samples, _, _) = try Self.play(path, options: { i in i == 0 ? AudioQueueEnqueueOptions(trimFramesAtStart: 10, trimFramesAtEnd: 5) : AudioQueueEnqueueOptions() })
        #expect(samples.count == reference.samples.count - 15 * 2)
        // First buffer held frames 0..<500: frames 10..<495 come first, then 500...
        #expect(Array(samples[0..<970]) == Array(reference.samples[20..<990]))
        #expect(Array(samples[970..<980]) == Array(reference.samples[1000..<1010]))
    }

    @Test(.requires(TestResource.corpusMissing)) func volumeAndPanScaleTheOutput() throws {
        let path = try TestResource.corpusFile("python-stdlib-audiodata/pluck-pcm16.au")
        let reference = try decodeWithToolbox(path)
        let (samples, _, _) = try Self.play(path, configure: { q in
            try q.setParameter(.volume, 0.5)
            try q.setParameter(.pan, 0.5)
        })
        var ok = true
        for i in stride(from: 0, to: min(samples.count, reference.samples.count) - 1, by: 2) {
            if abs(samples[i] - reference.samples[i] * 0.25) > 1e-6 || abs(samples[i + 1] - reference.samples[i + 1] * 0.5) > 1e-6 { ok = false }
        }
        #expect(ok)
        #expect(throws: AudioError.self) { try AudioOutputQueueTests.makeIdleQueue().setParameter(.volume, 2) }
    }

    @Test(.requires(TestResource.corpusMissing)) func meteringReportsPeaks() throws {
        let path = try TestResource.corpusFile("python-stdlib-audiodata/pluck-pcm16.au")
        let reference = try decodeWithToolbox(path)
        let peak = reference.samples.map { abs($0) }.max()!
        let (_, _, queue) = try Self.play(path, configure: { q in q.isLevelMeteringEnabled = true })
        let levels = queue.currentLevels()
        #expect(levels.count == 2)
        #expect(levels.allSatisfy { $0.peakPower <= peak + 1e-6 && $0.averagePower <= $0.peakPower })
        #expect(queue.currentLevelsDB().allSatisfy { $0.peakPower <= 0 })
    }

    static func makeIdleQueue() throws -> AudioOutputQueue {
        try AudioOutputQueue(format: .linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 16),
                             output: { f throws(AudioError) in NullOutputDevice(format: f, realTime: true) }) { _, _ in }
    }

    @Test func resetRestartsTheTimelineAndReturnsBuffers() throws {
        let returned = Locked(0)
        let queue = try AudioOutputQueue(format: .linearPCM(sampleRate: 8000, channels: 1, bitsPerChannel: 16),
                                         output: { f throws(AudioError) in NullOutputDevice(format: f, realTime: true, framesPerRender: 80) }) { _, _ in
            returned.withLock { $0 += 1 }
        }
        try queue.start()
        for _ in 0..<20 {
            let b = try queue.allocateBuffer(byteCapacity: 16000)
            b.audioDataByteSize = 16000
            try queue.enqueue(b)
        }
        #expect(wait(seconds: 3) { (queue.currentTime()?.time.sampleTime ?? 0) > 400 })
        queue.reset()
        let t = queue.currentTime()
        #expect(t?.discontinuity == true)
        #expect((t?.time.sampleTime ?? 1000) < 400)
        #expect(wait(seconds: 3) { returned.withLock { $0 } == 20 })
        queue.dispose(immediately: true)
        #expect(!queue.isRunning)
    }

    @Test func pauseHoldsThePosition() throws {
        let queue = try AudioOutputQueue(format: .linearPCM(sampleRate: 8000, channels: 1, bitsPerChannel: 16),
                                         output: { f throws(AudioError) in NullOutputDevice(format: f, realTime: true, framesPerRender: 80) }) { _, _ in }
        let b = try queue.allocateBuffer(byteCapacity: 160_000)
        b.audioDataByteSize = 160_000
        try queue.enqueue(b)
        try queue.start()
        #expect(wait(seconds: 3) { (queue.currentTime()?.time.sampleTime ?? 0) > 800 })
        try queue.pause()
        usleep(30_000)
        let at = queue.currentTime()!.time.sampleTime
        usleep(100_000)
        #expect(queue.currentTime()!.time.sampleTime == at)
        try queue.start()
        #expect(wait(seconds: 3) { queue.currentTime()!.time.sampleTime > at })
        queue.dispose(immediately: true)
    }

    @Test func createStartDisposeCyclesAreSafe() throws {
        for i in 0..<1000 {
            let queue = try Self.makeIdleQueue()
            let b = try queue.allocateBuffer(byteCapacity: 4096)
            b.audioDataByteSize = 4096
            try queue.enqueue(b)
            if i % 3 != 0 { try queue.start() }
            if i % 2 == 0 { queue.stop(immediately: true) }
            queue.dispose(immediately: true)
        }
    }

    @Test func rejectsBadInput() throws {
        let queue = try Self.makeIdleQueue()
        #expect(throws: AudioError.self) { try queue.allocateBuffer(byteCapacity: 0) }
        let other = try Self.makeIdleQueue()
        let foreign = try other.allocateBuffer(byteCapacity: 16)
        #expect(throws: AudioError.self) { try queue.enqueue(foreign) }
        let mp3 = AudioStreamBasicDescription.compressed(.mpegLayer3, sampleRate: 44100, channels: 2, framesPerPacket: 1152)
        let q3 = try AudioOutputQueue(format: mp3, output: { f throws(AudioError) in NullOutputDevice(format: f) }) { _, _ in }
        let b = try q3.allocateBuffer(byteCapacity: 100)
        b.audioDataByteSize = 100
        #expect(throws: AudioError.self) { try q3.enqueue(b) }
        queue.dispose(immediately: true)
        #expect(throws: AudioError.self) { try queue.allocateBuffer(byteCapacity: 16) }
    }
}

@Suite struct AudioOutputQueueRobustnessTests {
    @Test func disposeWhileStartingOnAnotherThreadIsSafe() async throws {
        for _ in 0..<300 {
            let queue = try AudioOutputQueueTests.makeIdleQueue()
            let b = try queue.allocateBuffer(byteCapacity: 4096)
            b.audioDataByteSize = 4096
            try queue.enqueue(b)
            async let started: Void = Task.detached { try? queue.start() }.value
            async let disposed: Void = Task.detached { queue.dispose(immediately: true) }.value
            _ = await (started, disposed)
            queue.dispose(immediately: true)
            #expect(!queue.isRunning)
        }
    }

    @Test func decoderErrorsBecomeAPropertyAndAnEvent() throws {
        let mp3 = AudioStreamBasicDescription.compressed(.mpegLayer3, sampleRate: 44100, channels: 2, framesPerPacket: 1152)
        let events = Locked<[AudioOutputQueueEvent]>([])
        let queue = try AudioOutputQueue(format: mp3, output: { f throws(AudioError) in NullOutputDevice(format: f, realTime: false) }) { _, _ in }
        queue.eventHandler = { e in events.withLock { $0.append(e) } }
        let b = try queue.allocateBuffer(byteCapacity: 400, packetDescriptionCapacity: 1)
        let junk = [UInt8](repeating: 0x55, count: 400)
        junk.withUnsafeBytes { _ = b.fill($0, packetDescriptions: [AudioStreamPacketDescription(startOffset: 0, dataByteSize: 400)]) }
        try queue.enqueue(b)
        try queue.start()
        #expect(wait(seconds: 3) { queue.converterError != nil })
        #expect(wait(seconds: 3) { events.withLock { $0.contains(.propertyChanged(.converterError)) } })
        queue.dispose(immediately: true)
    }
}
