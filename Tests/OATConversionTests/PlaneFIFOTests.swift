@testable import OATConversion
import OATCore
import OATTestSupport
import Testing

/// The converter's output FIFO (raw memory, written in place): what goes in comes out in order,
/// across growth, head moves and compaction; and the converter's output through it is unchanged
/// for every (de)interleaving path.
@Suite struct PlaneFIFOTests {
    func bytes(_ fifo: PlaneFIFO) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: fifo.count)
        out.withUnsafeMutableBytes { fifo.copy(from: 0, bytes: fifo.count, to: $0.baseAddress!) }
        return out
    }

    /// A model `[UInt8]` and the FIFO through a long mixed sequence of appends, zeros, in-place
    /// writes, drops from the front and the back: always the same bytes.
    @Test func matchesAnArrayModel() {
        let fifo = PlaneFIFO()
        var model: [UInt8] = []
        var next: UInt8 = 1
        for step in 0..<2000 {
            switch step % 7 {
            case 0, 1:
                let n = (step * 37) % 5000
                let chunk = (0..<n).map { _ in next &+= 1; return next }
                chunk.withUnsafeBytes { fifo.append($0) }
                model += chunk
            case 2:
                let n = (step * 13) % 3000
                fifo.appendZeros(n)
                model += [UInt8](repeating: 0, count: n)
            case 3:
                let samples = (step * 7) % 700
                let p = fifo.extendFloats(by: samples)
                for i in 0..<samples { p[i] = Float(i) }
                for i in 0..<samples { withUnsafeBytes(of: Float(i)) { model += $0 } }
            case 4, 5:
                let n = min(model.count, (step * 53) % 9000)
                fifo.removeFirst(n)
                model.removeFirst(n)
            default:
                let n = min(model.count, (step * 3) % 100)
                fifo.removeLast(n)
                model.removeLast(n)
            }
            #expect(fifo.count == model.count)
            if step % 50 == 0 { #expect(bytes(fifo) == model, "after step \(step)") }
        }
        #expect(bytes(fifo) == model)
        fifo.removeAll()
        #expect(fifo.count == 0)
    }

    /// Interleaved and planar Float32 output of the same PCM input (stereo and 3 channels):
    /// every sample where it belongs, read back in odd-sized pieces.
    @Test func converterDeinterleavesExactly() throws {
        for channels in [2, 3] {
            let frames = 50_000
            let pcm: [Float] = (0..<frames * channels).map { Float($0 % 9973) / 9973 }
            let source = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: UInt32(channels), bitsPerChannel: 32, isFloat: true)
            let planar = AudioStreamBasicDescription.canonicalFloat(sampleRate: 44100, channels: UInt32(channels))
            let converter = try AudioConverter(from: source, to: planar)
            var out: [[Float]] = Array(repeating: [], count: channels)
            let buffer = try AudioPCMBuffer(format: planar, frameCapacity: 4097)
            var at = 0
            while at < frames {
                let n = min(frames - at, 1 + (at * 31) % 6000)
                try pcm.withUnsafeBytes { raw in
                    try converter.decode(packet: UnsafeRawBufferPointer(rebasing: raw[(at * channels * 4)..<((at + n) * channels * 4)]))
                }
                at += n
                while converter.bufferedFrameCount > 3000 {
                    let got = converter.read(into: buffer, maxFrames: 1 + (at % 4000))
                    for c in 0..<channels { out[c] += Array(buffer.floatChannel(c)![0..<got]) }
                }
            }
            try converter.endOfInput()
            while true {
                let got = converter.read(into: buffer)
                if got == 0 { break }
                for c in 0..<channels { out[c] += Array(buffer.floatChannel(c)![0..<got]) }
            }
            for c in 0..<channels {
                #expect(out[c].count == frames)
                #expect(out[c] == stride(from: c, to: frames * channels, by: channels).map { pcm[$0] }, "channel \(c) of \(channels)")
            }
        }
    }
}
