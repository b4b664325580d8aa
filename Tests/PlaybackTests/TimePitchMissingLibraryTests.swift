import AudioTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 19 §3: time-pitch without the Rubber Band library is an error the user sees, not
/// playback at the normal rate as if nothing had been asked.
@Suite struct TimePitchMissingLibraryTests {
    @Test(.enabled(if: builtProduct("afplay") != nil || getenv("CI").map { String(cString: $0) } == "true"))
    func afplayRateWithoutRubberBandFailsSayingSo() throws {
        let afplay = try #require(builtProduct("afplay"))
        let dir = try ScratchDirectory("tp-missing")
        // A short tone to play.
        let wav = dir.path + "/tone.wav"
        var bytes = [UInt8]()
        let frames = 8000
        func le32(_ v: UInt32) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        func le16(_ v: UInt16) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        bytes += Array("RIFF".utf8); le32(UInt32(36 + frames * 2)); bytes += Array("WAVEfmt ".utf8)
        le32(16); le16(1); le16(1); le32(8000); le32(16000); le16(2); le16(16)
        bytes += Array("data".utf8); le32(UInt32(frames * 2))
        for i in 0..<frames { le16(UInt16(bitPattern: Int16(8000 * sin(Double(i) * 0.3)))) }
        #expect(writeFile(wav, bytes))
        let out = dir.path + "/out.wav"
        let log = dir.path + "/log.txt"
        let p = try ToolProcess(afplay, ["-r", "1.5", "--output", "wav:" + out, wav],
                                environment: ["OAT_RUBBERBAND_LIBRARY": "/nonexistent/librubberband.so.2"], outputPath: log)
        let status = p.wait(timeout: 30)
        #expect(status != nil && status != 0, "afplay exit \(String(describing: status)): \(p.output)")
        #expect(p.output.contains("Rubber Band"), "\(p.output)")
        // With the library where it is, the same command plays.
        let ok = try ToolProcess(afplay, ["-r", "1.5", "--output", "wav:" + out, wav], outputPath: dir.path + "/log2.txt")
        #expect(ok.wait(timeout: 30) == 0, "\(ok.output)")
    }

    /// Issue 18 (one loader for COATDeviceLazy and COATDSPLazy): a file that loads but is not
    /// Rubber Band is reported as the device libraries' are, with the missing function and the
    /// package to install (the DSP loader's own copy named neither the package).
    @Test(.enabled(if: builtProduct("afplay") != nil || getenv("CI").map { String(cString: $0) } == "true"))
    func afplayRateWithAnotherLibraryNamesTheFunctionAndThePackage() throws {
        let afplay = try #require(builtProduct("afplay"))
        let dir = try ScratchDirectory("tp-lacks")
        defer { dir.remove() }
        let wav = dir.path + "/tone.wav"
        var bytes = [UInt8]()
        let frames = 4000
        func le32(_ v: UInt32) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        func le16(_ v: UInt16) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        bytes += Array("RIFF".utf8); le32(UInt32(36 + frames * 2)); bytes += Array("WAVEfmt ".utf8)
        le32(16); le16(1); le16(1); le32(8000); le32(16000); le16(2); le16(16)
        bytes += Array("data".utf8); le32(UInt32(frames * 2))
        for i in 0..<frames { le16(UInt16(bitPattern: Int16(8000 * sin(Double(i) * 0.3)))) }
        #expect(writeFile(wav, bytes))
        let p = try ToolProcess(afplay, ["-r", "1.5", "--output", "wav:" + dir.path + "/out.wav", wav],
                                environment: ["OAT_RUBBERBAND_LIBRARY": "libm.so.6"], outputPath: dir.path + "/log.txt")
        let status = p.wait(timeout: 30)
        #expect(status != nil && status != 0 && status! < 128, "afplay exit \(String(describing: status)) (128+: a signal): \(p.output)")
        #expect(p.output.contains("libm.so.6 lacks the function rubberband_"), "\(p.output)")
        #expect(p.output.contains("librubberband2"), "the package to install: \(p.output)")
    }
}
