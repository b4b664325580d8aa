// AUAudioUnit's input side as an I/O host drives it: a RemoteIO unit with input enabled whose
// outputProvider plays a tone into a private PulseAudio null sink, whose inputHandler fetches
// the captured frames (the sink's monitor, as the microphone) with the unit's renderBlock on bus 1.
import Foundation
import OATTestSupport
import OpenAVFAudio
import Synchronization
import Testing

/// What the input handler collects: preallocated, written on the input thread only.
final class CapturedFrames: @unchecked Sendable {
    let samples: UnsafeMutableBufferPointer<Float>
    let count = Atomic<Int>(0)
    let failure = Atomic<Int32>(0)
    init(capacity: Int) { samples = .allocate(capacity: capacity); samples.initialize(repeating: 0) }
    deinit { samples.deallocate() }
}

@Suite("PlaybackAUAudioUnitInputTests", .serialized, .requires(TestResource.pulseAudioMissing))
struct PlaybackAUAudioUnitInputTests {
    @Test("RemoteIO as an AUAudioUnit: the outputProvider's tone comes back through inputHandler and renderBlock on bus 1")
    func inputHandlerFetchesWhatWasPlayed() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        setenv("OAT_OUTPUT", "pulse:\(daemon.sinkName)", 1)
        setenv("OAT_INPUT", "pulse:\(daemon.monitorSource)", 1)
        setenv("PULSE_SERVER", daemon.server, 1)
        defer { unsetenv("OAT_OUTPUT"); unsetenv("OAT_INPUT"); unsetenv("PULSE_SERVER") }

        let rate = 48000.0
        let unit = try AUAudioUnit(componentDescription: AudioComponentDescription(
            componentType: kAudioUnitType_Output, componentSubType: kAudioUnitSubType_RemoteIO,
            componentManufacturer: kAudioUnitManufacturer_Apple, componentFlags: 0, componentFlagsMask: 0))
        #expect(unit.canPerformInput)
        unit.isInputEnabled = true
        #expect(unit.isInputEnabled)
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: rate, channels: 1))
        try unit.inputBusses[0].setFormat(format)
        try unit.outputBusses[1].setFormat(format)

        let phase = Atomic<Int>(0)
        unit.outputProvider = { _, _, frames, _, data in
            let start = phase.add(Int(frames), ordering: .relaxed).oldValue
            for buffer in UnsafeMutableAudioBufferListPointer(data) {
                let out = buffer.mData!.assumingMemoryBound(to: Float.self)
                for i in 0..<Int(frames) { out[i] = Float(0.3 * sin(2 * Double.pi * 1000 * Double(start + i) / rate)) }
            }
            return noErr
        }
        let captured = CapturedFrames(capacity: Int(rate) * 10)
        let scratch = try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 8192))
        let list = scratch.mutableAudioBufferList
        let render = unit.renderBlock
        unit.inputHandler = { flags, time, frames, bus in
            let n = Int(min(frames, 8192))
            UnsafeMutableAudioBufferListPointer(list)[0].mDataByteSize = UInt32(n * 4)
            let status = render(flags, time, AUAudioFrameCount(n), bus, list, nil)
            guard status == noErr else { captured.failure.store(status, ordering: .relaxed); return }
            let at = captured.count.load(ordering: .relaxed)
            let take = min(n, captured.samples.count - at)
            let source = UnsafeMutableAudioBufferListPointer(list)[0].mData!.assumingMemoryBound(to: Float.self)
            for i in 0..<take { captured.samples[at + i] = source[i] }
            captured.count.store(at + take, ordering: .releasing)
        }
        try withExtendedLifetime(scratch) {
            try unit.allocateRenderResources()
            try unit.startHardware()
            #expect(unit.isRunning)
            usleep(2_000_000)
            unit.stopHardware()
            #expect(!unit.isRunning)
            unit.deallocateRenderResources()
        }

        #expect(captured.failure.load(ordering: .relaxed) == 0, "renderBlock on bus 1 failed: \(captured.failure.load(ordering: .relaxed))")
        let mic = Array(captured.samples.prefix(captured.count.load(ordering: .acquiring)))
        print("AUAudioUnit input: \(mic.count) frames captured in 2 s")
        #expect(mic.count > Int(rate * 1.5), "captured \(mic.count) frames in 2 s")
        let first = try #require(mic.firstIndex { abs($0) > 0.05 }, "the microphone heard nothing")
        // The tone comes back at its level: 1 kHz at 0.3, to 0.5 dB, measured past the onset.
        let window = Array(mic[min(mic.count - 1, first + 2400)..<min(mic.count, first + 2400 + 9600)])
        try #require(window.count == 9600, "too little was captured after the tone arrived")
        var re = 0.0, im = 0.0
        for (i, x) in window.enumerated() {
            re += Double(x) * cos(2 * Double.pi * 1000 * Double(i) / rate)
            im += Double(x) * sin(2 * Double.pi * 1000 * Double(i) / rate)
        }
        let amplitude = 2 * (re * re + im * im).squareRoot() / Double(window.count)
        print("AUAudioUnit input: 1 kHz at \(String(format: "%.2f", 20 * log10(amplitude / 0.3))) dB re played")
        #expect(abs(20 * log10(amplitude / 0.3)) < 0.5, "amplitude \(amplitude)")
    }
}
