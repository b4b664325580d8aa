@testable import OATQueueEngine
import OATProcessing
import Testing

/// The output queue's processing stages (taps, time-pitch) keep their work buffers only once a
/// stage is configured: a queue that passes audio straight through (afplay, a stream) does not
/// hold 147 KB of zeroed buffers resident (docs/PERFORMANCE.md, "The stream's footprint").
@Suite struct QueueProcessingChainTests {
    @Test func workBuffersAreAllocatedWhenAStageIsConfigured() {
        let chain = QueueProcessingChain(channels: 2, sampleRate: 44100)
        #expect(!chain.hasWorkBuffers, "a new chain passes audio through without its work buffers")
        let input: [Float] = (0..<2048).map { Float($0 % 100) / 100 }
        var out: [Float] = []
        let passed = input.withUnsafeBufferPointer { frames in chain.push(frames) { out += $0; return true } }
        #expect(passed)
        #expect(out == input, "passed straight through")
        #expect(!chain.hasWorkBuffers)

        // Varispeed at rate 1 (bit-exact, no Rubber Band): the stage runs in the work buffers.
        var settings = QueueTimePitchSettings()
        settings.enabled = true
        settings.algorithm = .varispeed
        #expect(chain.configure(settings, taps: []) == nil)
        #expect(chain.hasWorkBuffers)
        out = []
        let processed = input.withUnsafeBufferPointer { frames in chain.push(frames) { out += $0; return true } }
        #expect(processed)
        _ = chain.finish { out += $0; return true }
        #expect(out.count == input.count, "\(out.count) samples out of \(input.count)")
        #expect(out == input, "varispeed at rate 1 is bit-exact")
    }
}
