import OATTestSupport
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
        let wav = DeviceLibraryLoadingTests.tone(in: dir, frames: 8000)
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
        let wav = DeviceLibraryLoadingTests.tone(in: dir, frames: 4000)
        let p = try ToolProcess(afplay, ["-r", "1.5", "--output", "wav:" + dir.path + "/out.wav", wav],
                                environment: ["OAT_RUBBERBAND_LIBRARY": "libm.so.6"], outputPath: dir.path + "/log.txt")
        let status = p.wait(timeout: 30)
        #expect(status != nil && status != 0 && status! < 128, "afplay exit \(String(describing: status)) (128+: a signal): \(p.output)")
        #expect(p.output.contains("libm.so.6 lacks the function rubberband_"), "\(p.output)")
        #expect(p.output.contains("librubberband2"), "the package to install: \(p.output)")
    }
}
