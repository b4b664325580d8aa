#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATFiles
import OATTestSupport
import Synchronization
import Testing
@testable import OATDevices

/// A render source for tests: a sine of `total` frames, then end of stream.
final class SineSource: Sendable {
    let total: Int
    let channels: Int
    let produced = Atomic<Int>(0)
    init(total: Int, channels: Int) { self.total = total; self.channels = channels }

    var render: AudioRenderCallback {
        { [self] buffers, frames, _ in
            let start = produced.load(ordering: .relaxed)
            let n = min(frames, total - start)
            for c in 0..<buffers.count {
                for i in 0..<n { buffers[c][i] = Float(0.5 * sin(Double(start + i) * 0.05 + Double(c))) }
            }
            produced.store(start + n, ordering: .relaxed)
            return AudioRenderResult(frames: n, isEndOfStream: start + n >= total)
        }
    }
}

func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = HostTime.now() + HostTime.ticks(seconds: seconds)
    while HostTime.now() < deadline {
        if condition() { return true }
        sleepUntil(hostTime: HostTime.now() + 1_000_000)
    }
    return condition()
}

@Suite struct NullOutputDeviceTests {
    @Test func fastDevicePlaysToTheEndAndDrains() throws {
        let device = NullOutputDevice(format: AudioDeviceFormat(sampleRate: 48000, channels: 2), realTime: false)
        let source = SineSource(total: 100_000, channels: 2)
        try device.start(source.render)
        #expect(waitUntil(5) { device.hasFinished })
        #expect(device.playedFrames == 100_000)
        let events = device.takeEvents()
        #expect(events.first == .started && events.last == .drained)
        device.close()
    }

    @Test func pacedDeviceFollowsTheClockAndPauses() throws {
        let device = NullOutputDevice(format: AudioDeviceFormat(sampleRate: 48000, channels: 1), realTime: true, framesPerRender: 480)
        let source = SineSource(total: 48000 * 10, channels: 1)
        try device.start(source.render)
        sleepUntil(hostTime: HostTime.now() + 200_000_000)
        let played = device.playedFrames
        // About 0.2 s of audio: generous bounds, this is not a timing test.
        #expect(played > 2400 && played < 48000)
        try device.pause()
        sleepUntil(hostTime: HostTime.now() + 20_000_000)
        let paused = device.playedFrames
        sleepUntil(hostTime: HostTime.now() + 100_000_000)
        #expect(device.playedFrames == paused)
        try device.resume()
        #expect(waitUntil(2) { device.playedFrames > paused })
        #expect(throws: AudioError.self) { try device.resume() }
        device.stop(drain: false)
        #expect(device.hasFinished)
    }

    @Test func injectedFaultsAreReported() throws {
        var faults = AudioDeviceFaults()
        faults.underrunEveryPeriods = 3
        faults.loseAfterFrames = 2048
        faults.restoreAfterSeconds = 0.05
        let device = NullOutputDevice(format: AudioDeviceFormat(sampleRate: 48000, channels: 2), realTime: false, framesPerRender: 512, faults: faults)
        try device.start(SineSource(total: 20_000, channels: 2).render)
        #expect(waitUntil(5) { device.hasFinished })
        let events = device.takeEvents()
        #expect(events.contains(.lost(reason: "injected fault")) && events.contains(.restored))
        #expect(events.contains(.underrun(frames: 512)))
        #expect(events.last == .drained)
    }

    @Test func wavOutputRecordsExactlyWhatWasRendered() throws {
        let path = "/tmp/oat-wavout-\(UInt32.random(in: 0...UInt32.max)).wav"
        defer { removeFile(path) }
        let device = try NullOutputDevice.wavFile(path: path, format: AudioDeviceFormat(sampleRate: 44100, channels: 2))
        try device.start(SineSource(total: 12_345, channels: 2).render)
        #expect(waitUntil(5) { device.hasFinished })
        device.close()
        let bytes = try #require(Corpus.read(path))
        #expect(bytes.count == 58 + 12_345 * 8)
        let samples: [Float] = bytes[58...].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(samples[2 * 100 + 1] == Float(0.5 * sin(100 * 0.05 + 1.0)))
    }

    @Test func outputSpecsParse() {
        #expect(AudioOutputSpec(parsing: "auto") == .auto)
        #expect(AudioOutputSpec(parsing: "pulse:oat") == .pulse(sink: "oat"))
        #expect(AudioOutputSpec(parsing: "pulse") == .pulse(sink: nil))
        #expect(AudioOutputSpec(parsing: "alsa") == .alsa(device: "default"))
        #expect(AudioOutputSpec(parsing: "alsa:plughw:0,0") == .alsa(device: "plughw:0,0"))
        #expect(AudioOutputSpec(parsing: "wav:/tmp/x.wav") == .wav(path: "/tmp/x.wav", realTime: false))
        #expect(AudioOutputSpec(parsing: "null:fast") == .null(realTime: false))
        #expect(AudioOutputSpec(parsing: "wav") == nil && AudioOutputSpec(parsing: "speaker") == nil)
    }
}
