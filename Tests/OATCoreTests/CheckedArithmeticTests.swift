import Testing
@testable import OATCore

@Suite("InputArithmetic and FormatLimits")
struct CheckedArithmeticTests {
    let c = InputArithmetic("Test parser", at: 40)

    @Test func overflowThrowsNamingFieldComponentAndOffset() throws {
        #expect(try c.add(Int64(1), 2, "x") == 3)
        do {
            _ = try c.add(Int64.max - 15, 24, "end of the data chunk")
            Issue.record("no error")
        } catch {
            #expect(error.code == .invalidData)
            #expect(error.component == "Test parser")
            #expect(error.offset == 40)
            #expect(error.message.contains("end of the data chunk"))
        }
        #expect(throws: AudioError.self) { try c.multiply(UInt32.max, 2, "duration") }
        #expect(throws: AudioError.self) { try c.subtract(UInt32(1), 2, "size") }
        #expect(throws: AudioError.self) { try c.convert(UInt64.max, to: Int64.self, "size") }
        #expect(try c.convert(UInt64(5), to: Int.self, "size") == 5)
    }

    @Test func doubleConversionNeverTraps() throws {
        for v in [Double.nan, .infinity, -.infinity, 1e308, -1e308, 9.3e18] {
            #expect(throws: AudioError.self) { try c.convert(v, to: Int64.self, "seconds") }
        }
        #expect(try c.convert(12.9, to: Int64.self, "seconds") == 12)
        #expect(InputArithmetic.saturating(Double.infinity, as: Int64.self) == .max)
        #expect(InputArithmetic.saturating(-1e308, as: Int64.self) == .min)
        #expect(InputArithmetic.saturating(Double.nan, as: Int.self) == 0)
        #expect(InputArithmetic.frames(seconds: 1e308, sampleRate: 48000) == .max)
        #expect(InputArithmetic.frames(seconds: 2, sampleRate: 48000) == 96000)
        #expect(throws: AudioError.self) { try c.finite(.nan, in: 0...10, "start") }
        #expect(throws: AudioError.self) { try c.finite(11, in: 0...10, "start") }
    }

    @Test func allocationCountIsBoundedByBytesPresent() throws {
        #expect(try c.allocationCount(UInt32(10), bytesEach: 4, available: 40, limit: 100, "entries") == 10)
        #expect(throws: AudioError.self) { try c.allocationCount(UInt32(11), bytesEach: 4, available: 40, limit: 100, "entries") }
        #expect(throws: AudioError.self) { try c.allocationCount(UInt32(101), bytesEach: 0, available: 400, limit: 100, "entries") }
        #expect(throws: AudioError.self) { try c.allocationCount(Int64.min, bytesEach: 1, available: 400, limit: 100, "entries") }
        #expect(throws: AudioError.self) { try c.allocationCount(Int.max, bytesEach: 8, available: .max, limit: .max, "entries") }
    }

    @Test func implausibleFormatsAreRefused() {
        let ok = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 8, bitsPerChannel: 16)
        #expect(ok.plausibilityFailure == nil)
        var f = ok
        f.channelsPerFrame = 65535; f.bytesPerFrame = 2 * 65535; f.bytesPerPacket = f.bytesPerFrame
        #expect(f.plausibilityFailure?.contains("65535 channels") == true)
        f = ok; f.sampleRate = 0
        #expect(f.plausibilityFailure != nil)
        f = ok; f.sampleRate = .nan
        #expect(f.plausibilityFailure != nil)
        f = ok; f.sampleRate = 2e6
        #expect(f.plausibilityFailure != nil)
        f = ok; f.bytesPerFrame = 0; f.bytesPerPacket = 0
        #expect(f.plausibilityFailure != nil)
        var alac = AudioStreamBasicDescription.compressed(.appleLossless, sampleRate: 44100, channels: 2, framesPerPacket: 4096)
        #expect(alac.plausibilityFailure == nil)
        alac.channelsPerFrame = .max
        #expect(throws: AudioError.self) { try alac.checkPlausible(component: "CAF parser", at: 8) }
        alac.channelsPerFrame = 2; alac.framesPerPacket = .max
        #expect(alac.plausibilityFailure != nil)
    }
}
