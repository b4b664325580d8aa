import OATTestSupport
import OATCore
import OATDevices
import OATUnits
import Foundation
import Synchronization
import Testing

@Suite("AudioGraph core")
struct GraphTests {
    @Test func rendersASourceThroughAGainToTheOutput() throws {
        let g = try AudioGraph(sampleRate: 48000, channels: 2, maxFramesPerSlice: 256)
        let src = sineSource(channels: 2, freq: 1000, amp: 0.5, rate: 48000)
        let gain = AUGainNode(channels: 2, gain: 0.5)
        try g.add(src)
        try g.add(gain)
        try g.connect(src, to: gain)
        try g.connect(gain, to: g.output)
        try g.commit()
        let out = g.renderOffline(frames: 4800)   // > maxFramesPerSlice: sliced
        #expect(out.count == 2)
        let a = toneAmplitude(out[0], freq: 1000, rate: 48000, from: 0, count: 4800)
        #expect(abs(a - 0.25) < 0.001)
        #expect(abs(rms(out[1]) - 0.25 / 2.0.squareRoot()) < 0.001)
    }

    @Test func silenceBeforeTheFirstCommit() throws {
        let g = try AudioGraph()
        let out = g.renderOffline(frames: 100)
        #expect(out[0].allSatisfy { $0 == 0 })
    }

    @Test func cyclesAreRejected() throws {
        let g = try AudioGraph()
        let a = AUGainNode(name: "a"), b = AUGainNode(name: "b"), c = AUGainNode(name: "c")
        for n in [a, b, c] { try g.add(n) }
        try g.connect(a, to: b)
        try g.connect(b, to: c)
        #expect { try g.connect(c, to: a) } throws: { e in
            let e = e as! AudioError
            return e.message.contains("cycle") && e.message.contains("c") && e.message.contains("a")
        }
        // A self loop too.
        let s = AUMixerNode(inputs: 2)
        try g.add(s)
        #expect(throws: AudioError.self) { try g.connect(s, to: s, input: 1) }
    }

    @Test func formatMismatchAndDanglingConnectionsAreRejected() throws {
        let g = try AudioGraph(channels: 2)
        let mono = AUGainNode(channels: 1, name: "mono")
        let stereo = AUGainNode(channels: 2, name: "stereo")
        try g.add(mono)
        try g.add(stereo)
        #expect { try g.connect(mono, to: stereo) } throws: { e in
            let e = e as! AudioError
            return e.code == .unsupportedFormat && e.message.contains("mismatch") && e.message.contains("1 channels")
        }
        let outside = AUGainNode(name: "outside")
        #expect { try g.connect(outside, to: g.output) } throws: { e in (e as! AudioError).message.contains("not in the graph") }
        #expect(throws: AudioError.self) { try g.connect(stereo, output: 3, to: g.output) }
        try g.connect(stereo, to: g.output)
        #expect { try g.connect(stereo, to: g.output) } throws: { e in (e as! AudioError).message.contains("already connected") }
        // Removing a node drops its connections; the plan still compiles.
        try g.remove(stereo)
        try g.commit()
        #expect(g.connections.isEmpty)
        // A node's format cannot change once it is in a graph.
        #expect(throws: AudioError.self) { try mono.setInputChannels(2, bus: 0) }
    }

    @Test func aSplitterFeedsTwoBranchesFromOneRender() throws {
        let g = try AudioGraph(channels: 1)
        let pulls = Atomic<Int>(0)
        let src = AURenderCallbackNode(channels: 1) { b, frames, _ in
            pulls.add(1, ordering: .relaxed)
            for f in 0..<frames { b[0][f] = 0.25 }
        }
        let split = AUSplitterNode(channels: 1, outputs: 2)
        let mix = AUMixerNode(inputs: 2, inputChannels: 1, outputChannels: 1)
        for n in [src, split, mix] as [RenderNode] { try g.add(n) }
        try g.connect(src, to: split)
        try g.connect(split, output: 0, to: mix, input: 0)
        try g.connect(split, output: 1, to: mix, input: 1)
        try g.connect(mix, to: g.output)
        try g.commit()
        let out = g.renderOffline(frames: 1024)
        #expect(abs(out[0][500] - 0.5) < 1e-6)
        #expect(pulls.load(ordering: .relaxed) == 1)
    }

    @Test func editsWhileRenderingKeepTheAudioContinuous() throws {
        // A render thread renders continuously while this thread inserts and removes a gain
        // node between the source and the output 200 times: the sine must stay continuous.
        let rate = 48000.0
        let g = try AudioGraph(sampleRate: rate, channels: 1, maxFramesPerSlice: 128)
        let src = sineSource(channels: 1, freq: 440, amp: 0.5, rate: rate)
        try g.add(src)
        try g.connect(src, to: g.output)
        try g.commit()
        let total = 48000 * 2
        let out = UnsafeMutablePointer<Float>.allocate(capacity: total)
        defer { out.deallocate() }
        let done = Atomic<Bool>(false)
        let outAddress = Int(bitPattern: out)
        let thread = Thread {
            let base = UnsafeMutablePointer<Float>(bitPattern: outAddress)!
            let ptrs = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: 1)
            var pos = 0
            while pos < total {
                let n = min(100, total - pos)
                ptrs[0] = base + pos
                g.render(into: ptrs, frames: n)
                pos += n
                usleep(50)
            }
            ptrs.deallocate()
            done.store(true, ordering: .releasing)
        }
        thread.start()
        var edits = 0
        while !done.load(ordering: .acquiring) && edits < 200 {
            let pass = AUGainNode(channels: 1, gain: 1, name: "pass \(edits)")
            try g.add(pass)
            g.disconnect(g.output)
            try g.connect(src, to: pass)
            try g.connect(pass, to: g.output)
            try g.commit()
            try g.remove(pass)
            try g.connect(src, to: g.output)
            try g.commit()
            edits += 1
        }
        while !done.load(ordering: .acquiring) { usleep(1000) }
        #expect(edits > 10)
        // Continuity: the output equals the sine sample for sample.
        var worst: Float = 0
        for i in 0..<total {
            let v = 0.5 * Float(sin(2 * Double.pi * 440 * Double(i) / rate))
            worst = max(worst, abs(out[i] - v))
        }
        #expect(worst < 1e-4)
        #expect(g.commitCount > 20)
    }

    @Test func drivesAnOutputDeviceFromItsRenderCallback() throws {
        // The RemoteIO pattern on the null output (not paced): the device's thread pulls the graph.
        let g = try AudioGraph(sampleRate: 48000, channels: 2, maxFramesPerSlice: 512)
        let src = sineSource(channels: 2, freq: 1000, amp: 0.5, rate: 48000)
        let tap = AUTapNode(channels: 2, capacityFrames: 1 << 15)
        try g.add(src)
        try g.add(tap)
        try g.connect(src, to: tap)
        try g.connect(tap, to: g.output)
        let device = NullOutputDevice(format: AudioDeviceFormat(sampleRate: 48000, channels: 2), realTime: false, framesPerRender: 1024)
        try g.start(device: device)
        #expect(g.isRunning)
        #expect(throws: AudioError.self) { try g.start(device: NullOutputDevice(format: AudioDeviceFormat(sampleRate: 48000, channels: 2))) }
        let deadline = Date().addingTimeInterval(5)
        while device.renderedFrames < 8192 && Date() < deadline { usleep(1000) }
        g.stop()
        #expect(!g.isRunning)
        #expect(device.renderedFrames >= 8192)
        var frames = [Float](repeating: 0, count: 2 * 8192)
        let n = frames.withUnsafeMutableBufferPointer { tap.read(into: $0) }
        #expect(n == 8192)
        let left = stride(from: 0, to: 2 * n, by: 2).map { frames[$0] }
        #expect(abs(toneAmplitude(left, freq: 1000, rate: 48000, from: 0, count: n) - 0.5) < 0.001)
        // A device at another rate is refused.
        #expect(throws: AudioError.self) { try g.start(device: NullOutputDevice(format: AudioDeviceFormat(sampleRate: 44100, channels: 2))) }
    }
}
