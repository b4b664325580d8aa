import OATTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 18: libpulse and libasound are loaded with dlopen on first use (COATDeviceLazy), not
/// linked. A tool that opens no device does not map them; one that opens a device without its
/// library fails saying which library is missing (and plays to the null output when the device
/// was chosen automatically), never crashes.
@Suite struct DeviceLibraryLoadingTests {
    static let toolsBuilt = (builtProduct("afplay") != nil && builtProduct("afinfo") != nil)
        || getenv("CI").map { String(cString: $0) } == "true"
    static let missingPulse = ["OAT_PULSEAUDIO_LIBRARY": "/nonexistent/libpulse.so.0"]
    static let missingALSA = ["OAT_ALSA_LIBRARY": "/nonexistent/libasound.so.2"]

    /// A 16-bit 8 kHz mono tone of `frames` frames (0.25 s by default) as a WAV file in `dir`.
    static func tone(in dir: ScratchDirectory, frames: Int = 2000) -> String {
        let path = dir.path + "/tone.wav"
        var bytes = [UInt8]()
        func le32(_ v: UInt32) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        func le16(_ v: UInt16) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        bytes += Array("RIFF".utf8); le32(UInt32(36 + frames * 2)); bytes += Array("WAVEfmt ".utf8)
        le32(16); le16(1); le16(1); le32(8000); le32(16000); le16(2); le16(16)
        bytes += Array("data".utf8); le32(UInt32(frames * 2))
        for i in 0..<frames { le16(UInt16(bitPattern: Int16(8000 * sin(Double(i) * 0.3)))) }
        _ = writeFile(path, bytes)
        return path
    }

    /// afinfo --decode loads neither device library (the dynamic loader's own list of the files
    /// it maps, `LD_DEBUG=files`, names neither), where it used to link both and their ~25
    /// dependencies.
    @Test(.enabled(if: toolsBuilt)) func afinfoMapsNoDeviceLibrary() throws {
        let afinfo = try #require(builtProduct("afinfo"))
        let dir = try ScratchDirectory("devlib-afinfo")
        defer { dir.remove() }
        let p = try ToolProcess(afinfo, ["--decode", Self.tone(in: dir)], environment: ["LD_DEBUG": "files"],
                                outputPath: dir.path + "/log.txt")
        #expect(p.wait(timeout: 30) == 0, "\(p.output)")
        let log = p.output
        #expect(log.contains("decoded") && log.contains("file=libc.so.6"), "afinfo's summary and the loader's list: \(log)")
        #expect(!log.contains("libpulse"), "afinfo mapped libpulse:\n\(log)")
        #expect(!log.contains("libasound"), "afinfo mapped libasound:\n\(log)")
    }

    /// `afplay --output pulse` without libpulse: a failure naming the library and its package.
    @Test(.enabled(if: toolsBuilt)) func afplayPulseWithoutLibpulseNamesIt() throws {
        let afplay = try #require(builtProduct("afplay"))
        let dir = try ScratchDirectory("devlib-pulse")
        defer { dir.remove() }
        let p = try ToolProcess(afplay, ["--output", "pulse", Self.tone(in: dir)], environment: Self.missingPulse,
                                outputPath: dir.path + "/log.txt")
        let status = p.wait(timeout: 30)
        #expect(status != nil && status != 0 && status! < 128, "afplay exit \(String(describing: status)) (128+: a signal): \(p.output)")
        #expect(p.output.contains("/nonexistent/libpulse.so.0") && p.output.contains("libpulse0"), "\(p.output)")
    }

    /// `afplay --output alsa` without libasound: a failure naming the library and its package.
    @Test(.enabled(if: toolsBuilt)) func afplayALSAWithoutLibasoundNamesIt() throws {
        let afplay = try #require(builtProduct("afplay"))
        let dir = try ScratchDirectory("devlib-alsa")
        defer { dir.remove() }
        let p = try ToolProcess(afplay, ["--output", "alsa", Self.tone(in: dir)], environment: Self.missingALSA,
                                outputPath: dir.path + "/log.txt")
        let status = p.wait(timeout: 30)
        #expect(status != nil && status != 0 && status! < 128, "afplay exit \(String(describing: status)) (128+: a signal): \(p.output)")
        #expect(p.output.contains("/nonexistent/libasound.so.2") && p.output.contains("libasound2"), "\(p.output)")
    }

    /// A library that loads but lacks a function the package calls is named with the function.
    @Test(.enabled(if: toolsBuilt)) func aLibraryWithoutTheFunctionsIsNamed() throws {
        let afplay = try #require(builtProduct("afplay"))
        let dir = try ScratchDirectory("devlib-lacks")
        defer { dir.remove() }
        let p = try ToolProcess(afplay, ["--output", "alsa", Self.tone(in: dir)], environment: ["OAT_ALSA_LIBRARY": "libm.so.6"],
                                outputPath: dir.path + "/log.txt")
        let status = p.wait(timeout: 30)
        #expect(status != nil && status != 0 && status! < 128, "afplay exit \(String(describing: status)): \(p.output)")
        #expect(p.output.contains("libm.so.6 lacks the function snd_"), "\(p.output)")
    }

    /// The automatic choice without either library plays to the null output, and its notice
    /// says why: both libraries named.
    @Test(.enabled(if: toolsBuilt)) func afplayAutoWithoutEitherFallsBackNamingBoth() throws {
        let afplay = try #require(builtProduct("afplay"))
        let dir = try ScratchDirectory("devlib-auto")
        defer { dir.remove() }
        let p = try ToolProcess(afplay, [Self.tone(in: dir)], environment: Self.missingPulse.merging(Self.missingALSA) { a, _ in a },
                                outputPath: dir.path + "/log.txt")
        #expect(p.wait(timeout: 30) == 0, "\(p.output)")
        #expect(p.output.contains("null output"), "\(p.output)")
        #expect(p.output.contains("/nonexistent/libpulse.so.0") && p.output.contains("/nonexistent/libasound.so.2"), "\(p.output)")
    }
}
