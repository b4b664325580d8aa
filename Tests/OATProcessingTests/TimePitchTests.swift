import OATCore
import OATProcessing
import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A stereo test tone: `frequency` Hz in both channels (the right a little quieter).
func tone(_ frequency: Double, seconds: Double, rate: Double = 48000, amplitude: Float = 0.5) -> [[Float]] {
    let n = Int(seconds * rate)
    let left = (0..<n).map { amplitude * Float(sin(2 * Double.pi * frequency * Double($0) / rate)) }
    return [left, left.map { $0 * 0.8 }]
}

/// Runs `input` (planar) through `p` in push mode with `chunk`-frame calls; returns the output.
func pushThrough(_ p: TimePitchProcessor, _ input: [[Float]], chunk: Int = 1024) -> [[Float]] {
    let channels = input.count
    let frames = input[0].count
    var out = [[Float]](repeating: [], count: channels)
    let outBuffers = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: p.maximumFramesPerCall) }
    let inBuffers = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: p.maximumFramesPerCall) }
    defer { outBuffers.forEach { $0.deallocate() }; inBuffers.forEach { $0.deallocate() } }
    func drainOut() {
        while true {
            let n = outBuffers.withUnsafeBufferPointer { p.retrieve(into: $0.baseAddress!, maxFrames: p.maximumFramesPerCall) }
            if n == 0 { break }
            for c in 0..<channels { out[c].append(contentsOf: UnsafeBufferPointer(start: outBuffers[c], count: n)) }
        }
    }
    var at = 0
    while at < frames {
        let n = min(chunk, frames - at)
        for c in 0..<channels { input[c].withUnsafeBufferPointer { inBuffers[c].update(from: $0.baseAddress! + at, count: n) } }
        var done = 0
        while done < n {
            let ptrs = inBuffers.map { UnsafePointer($0 + done) }
            let took = ptrs.withUnsafeBufferPointer { p.process($0.baseAddress!, frames: n - done, final: at + n == frames) }
            done += took
            drainOut()
        }
        at += n
    }
    var guardCount = 0
    while !p.isFinished && guardCount < 10000 {
        drainOut()
        guardCount += 1
        if !p.isFinished {
            let ptrs = inBuffers.map { UnsafePointer($0) }
            _ = ptrs.withUnsafeBufferPointer { p.process($0.baseAddress!, frames: 0, final: true) }
        }
    }
    return out
}

@Suite struct TimePitchTests {
    @Test(arguments: [0.5, 0.75, 1.5, 2.0])
    func rateChangesLengthNotPitch(rate: Double) throws {
        let input = tone(440, seconds: 2)
        for algorithm in [TimePitchAlgorithm.spectral, .timeDomain] {
            let p = try TimePitchProcessor(sampleRate: 48000, channels: 2, algorithm: algorithm)
            try p.setRate(rate)
            let out = pushThrough(p, input)
            let expected = Double(input[0].count) / rate
            let lengthError = abs(Double(out[0].count) - expected) / expected
            let f = dominantFrequency(out[0], sampleRate: 48000)
            print("time-pitch \(algorithm) rate \(rate): \(out[0].count) frames (expected \(Int(expected)), error \(lengthError * 100)%), dominant \(f) Hz")
            #expect(lengthError < 0.01, "\(algorithm) rate \(rate): \(out[0].count) frames, expected \(expected)")
            #expect(abs(f - 440) / 440 < 0.01, "\(algorithm) rate \(rate): dominant \(f) Hz")
        }
    }

    @Test(arguments: [1200.0, -1200.0, 700.0])
    func pitchShiftHitsTheTarget(cents shift: Double) throws {
        let input = tone(440, seconds: 2)
        for algorithm in [TimePitchAlgorithm.spectral, .timeDomain] {
            let p = try TimePitchProcessor(sampleRate: 48000, channels: 2, algorithm: algorithm)
            try p.setPitch(cents: shift)
            let out = pushThrough(p, input)
            let f = dominantFrequency(out[0], sampleRate: 48000)
            let measured = cents(f, relativeTo: 440)
            print("time-pitch \(algorithm) pitch \(shift) cents: measured \(measured) cents (\(f) Hz), \(out[0].count) frames")
            #expect(abs(measured - shift) < 5, "\(algorithm): \(measured) cents, wanted \(shift)")
            #expect(abs(Double(out[0].count) - Double(input[0].count)) / Double(input[0].count) < 0.01)
        }
    }

    @Test func unityIsBitExact() throws {
        let input = tone(997, seconds: 1)
        for algorithm in TimePitchAlgorithm.allCases {
            let p = try TimePitchProcessor(sampleRate: 48000, channels: 2, algorithm: algorithm)
            let out = pushThrough(p, input, chunk: 333)
            #expect(out == input, "\(algorithm) at unity is not a copy")
        }
    }

    @Test func bypassPassesThroughWhileRateIsSet() throws {
        let input = tone(500, seconds: 1)
        let p = try TimePitchProcessor(sampleRate: 48000, channels: 2)
        try p.setRate(2)
        p.bypass = true
        let out = pushThrough(p, input)
        #expect(out == input)
    }

    @Test func varispeedLinksRateAndPitch() throws {
        let input = tone(440, seconds: 2)
        let p = try TimePitchProcessor(sampleRate: 48000, channels: 2, algorithm: .varispeed)
        try p.setRate(1.5)
        let out = pushThrough(p, input)
        let f = dominantFrequency(out[0], sampleRate: 48000)
        #expect(abs(Double(out[0].count) - Double(input[0].count) / 1.5) <= 2)
        #expect(abs(cents(f, relativeTo: 660)) < 1, "varispeed 1.5x: \(f) Hz")
    }

    @Test func pullRenderProducesTheSameStretch() throws {
        let input = tone(440, seconds: 2)
        let p = try TimePitchProcessor(sampleRate: 48000, channels: 2, algorithm: .spectral, maximumFramesPerCall: 1024)
        try p.setRate(0.75)
        var read = 0
        var out = [[Float]](repeating: [], count: 2)
        let buffers = (0..<2).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: 512) }
        defer { buffers.forEach { $0.deallocate() } }
        for _ in 0..<400 {
            let n = buffers.withUnsafeBufferPointer { ptrs in
                p.render(into: ptrs.baseAddress!, frames: 512) { src, want in
                    let k = min(want, input[0].count - read)
                    for c in 0..<2 { input[c].withUnsafeBufferPointer { src[c].update(from: $0.baseAddress! + read, count: k) } }
                    read += k
                    return k
                }
            }
            for c in 0..<2 { out[c].append(contentsOf: UnsafeBufferPointer(start: buffers[c], count: n)) }
            if n < 512 { break }
        }
        let expected = Double(input[0].count) / 0.75
        #expect(abs(Double(out[0].count) - expected) / expected < 0.01, "\(out[0].count) vs \(expected)")
        #expect(abs(dominantFrequency(out[0], sampleRate: 48000) - 440) < 4.4)
    }

    @Test func rejectsOutOfRangeParameters() throws {
        let p = try TimePitchProcessor(sampleRate: 44100, channels: 1)
        #expect(throws: AudioError.self) { try p.setRate(2.5) }
        #expect(throws: AudioError.self) { try p.setRate(0.25) }
        #expect(throws: AudioError.self) { try p.setPitch(cents: 2401) }
        #expect(throws: AudioError.self) { try p.setRate(.nan) }
        #expect(throws: AudioError.self) { try TimePitchProcessor(sampleRate: 44100, channels: 0) }
    }
}
