import OATCore
import OATDevices
import OATTestSupport
import OATUnits
import Foundation
import Synchronization
import Testing

/// Issue 19 §3: a node removed from a graph whose running plan still renders it must not be
/// re-prepared (its render state freed) by another graph before that plan is gone; and issue
/// 17 §3 h: a graph driven by a device that is not real time waits for its players.
@Suite struct GraphHazardTests {
    /// A node counting renders, whose render state is a buffer that `prepare` replaces (as
    /// AUPlayerNode's scratch): a render that finds the buffer poisoned saw it freed.
    final class StateNode: RenderNode, @unchecked Sendable {
        var state: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
        let poisonedRenders = Atomic<Int>(0)
        let renders = Atomic<Int>(0)
        init() { super.init(name: "state", inputChannels: [], outputChannels: [1]) }
        deinit { state.deallocate() }
        override func prepare(sampleRate: Double, maxFrames: Int) throws(AudioError) {
            try super.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
            // Poison the old state before freeing it, as an allocator reusing it would.
            state[0] = -1
            let old = state
            state = .allocate(capacity: maxFrames)
            state.initialize(repeating: 1, count: maxFrames)
            old.deallocate()
        }
        override func render(_ context: AURenderContext) {
            let out = context.output(0)
            if state[0] != 1 { poisonedRenders.add(1, ordering: .relaxed) }
            for i in 0..<context.frames { out[0][i] = state[min(i, maxFrames - 1)] }
            renders.add(1, ordering: .relaxed)
        }
    }

    @Test func aRemovedNodeCannotJoinAnotherGraphUntilTheOldPlanIsGone() throws {
        let a = try AudioGraph(sampleRate: 48000, channels: 1, maxFramesPerSlice: 256)
        let node = StateNode()
        try a.add(node)
        try a.connect(node, to: a.output)
        try a.commit()
        // A render thread on graph A, as a device would drive it.
        let stop = Atomic<Bool>(false)
        let rendering = Atomic<Bool>(true)
        let thread = Thread {
            let out = UnsafeMutablePointer<Float>.allocate(capacity: 256)
            let pointers = UnsafeMutableBufferPointer<UnsafeMutablePointer<Float>>.allocate(capacity: 1)
            pointers[0] = out
            while !stop.load(ordering: .relaxed) { a.render(into: pointers, frames: 256) }
            pointers.deallocate()
            out.deallocate()
            rendering.store(false, ordering: .releasing)
        }
        thread.start()
        while node.renders.load(ordering: .relaxed) < 10 { usleep(100) }

        try a.remove(node)
        // Graph B at another slice size would re-prepare the node while A's plan renders it.
        let b = try AudioGraph(sampleRate: 44100, channels: 1, maxFramesPerSlice: 1024)
        #expect(throws: AudioError.self) { try b.add(node) }
        #expect(node.isInGraph)
        // Removed and added back before the commit: it never left A's plan.
        try a.add(node)
        try a.remove(node)
        // Once A committed a plan without it (and the render thread left the old one), it is free.
        try a.commit()
        #expect(!node.isInGraph)
        let before = node.renders.load(ordering: .relaxed)
        try b.add(node)
        usleep(20_000)
        stop.store(true, ordering: .relaxed)
        while rendering.load(ordering: .acquiring) { usleep(1000) }
        #expect(node.poisonedRenders.load(ordering: .relaxed) == 0)
        // A no longer renders it.
        #expect(node.renders.load(ordering: .relaxed) == before)
    }

    @Test func aNodeRemovedBeforeAnyCommitIsFreeAtOnce() throws {
        let a = try AudioGraph(sampleRate: 48000, channels: 1)
        let node = StateNode()
        try a.add(node)
        try a.remove(node)
        #expect(!node.isInGraph)
        let b = try AudioGraph(sampleRate: 44100, channels: 1)
        try b.add(node)
        #expect(node.isInGraph)
    }

    @Test func aGraphOnAFileOutputWaitsForItsPlayerInsteadOfRenderingGaps() throws {
        let rate = 48000.0
        let g = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: 512)
        let player = AUPlayerNode(channels: 2, bufferFrames: 4096)
        try g.add(player)
        try g.connect(player, to: g.output)
        try g.commit()
        // A slow source (a file reader on a busy machine): a ramp, 2048 frames every 5 ms,
        // slower than an unpaced output renders.
        let total = 48000
        let produced = Locked(0)
        player.play(from: { buffer in
            usleep(5000)
            return produced.withLock { c in
                let n = min(buffer.count / 2, 2048, total - c)
                for i in 0..<n {
                    let v = Float((c + i) % 1000) / 1000 + 0.001
                    buffer[2 * i] = v
                    buffer[2 * i + 1] = v
                }
                c += n
                return n
            }
        }, chunkFrames: 2048)
        let path = "/tmp/oat-graph-gaps-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).wav"
        defer { unlink(path) }
        try g.start(.wav(path: path, realTime: false))
        let deadline = Date().addingTimeInterval(20)
        while !player.isFinished && Date() < deadline { usleep(2000) }
        usleep(50_000)
        g.stop()
        #expect(player.isFinished)
        let samples = readFloatWAVFile(path)
        // Every frame of the ramp, in order, with no silence between (a gap would be zeros).
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        let firstSound = left.firstIndex { $0 != 0 } ?? left.count
        let sound = Array(left[firstSound...].prefix(total))
        #expect(firstSound == 0, "lead-in of \(firstSound) frames")
        #expect(sound.count == total)
        let zeros = sound.filter { $0 == 0 }.count
        #expect(zeros == 0, "\(zeros) frames of silence inside the played audio")
        var mismatches = 0
        for (i, v) in sound.enumerated() where v != Float(i % 1000) / 1000 + 0.001 { mismatches += 1 }
        #expect(mismatches == 0)
        #expect(player.underrunCount == 0)
    }
}

/// The interleaved Float32 samples of a WAV written by the WAV output.
func readFloatWAVFile(_ path: String) -> [Float] {
    guard let bytes = Corpus.read(path), bytes.count >= 12 else { return [] }
    var at = 12
    func u32(_ i: Int) -> Int { Int(bytes[i]) | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2]) << 16 | Int(bytes[i + 3]) << 24 }
    while at + 8 <= bytes.count {
        let id = String(decoding: bytes[at..<at + 4], as: UTF8.self)
        let size = u32(at + 4)
        if id == "data" {
            let end = min(bytes.count, at + 8 + size)
            return bytes[(at + 8)..<end].withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        }
        at += 8 + size + (size & 1)
    }
    return []
}
