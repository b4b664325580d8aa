import OATTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 27 section 1: `afplay --output wav:PATH` has no clock. The file ends where the audio
/// ends (the input's frames, plus a tail only where an effect has one, ended by a fixed rule),
/// never where the wall clock happened to be, so three renders of the same command give
/// byte-identical files, also while two other processes keep both cores busy.
@Suite(.serialized) struct AfplayFileOutputDeterminismTests {
    static let rate = 44100
    static let frames = 3 * 44100

    /// Two busy processes (`yes` into /dev/null), stopped by PID.
    static func startHogs() throws -> [ChildProcess] {
        let yes = try #require(ChildProcess.which("yes"), "no yes(1)")
        return try (0..<2).map { _ in try ChildProcess.spawn(yes, []) }
    }

    /// The data chunk's frame count of a float32 stereo WAV written by afplay.
    static func dataFrames(_ bytes: [UInt8]) -> Int? {
        guard let wav = AfplayOutputRateTests.readWAV(bytes) else { return nil }
        return wav.samples.count
    }

    /// Renders `arguments` three times with two CPU hogs running; returns the files.
    static func threeRenders(_ arguments: [String], inputs: [String], dir: ScratchDirectory) throws -> [[UInt8]] {
        let afplay = try #require(builtProduct("afplay"))
        let hogs = try startHogs()
        defer { for h in hogs { h.terminate() } }
        var files: [[UInt8]] = []
        for run in 0..<3 {
            let out = dir.path + "/out\(run).wav"
            let p = try ToolProcess(afplay, ["--no-ui"] + arguments + ["--output", "wav:\(out)"] + inputs,
                                    outputPath: dir.path + "/log\(run).txt")
            let status = p.wait(timeout: 60)
            if status == nil { p.stop() }
            #expect(status == 0, "afplay \(arguments): \(p.output)")
            files.append(try #require(Corpus.read(out), "no WAV at \(out)"))
        }
        return files
    }

    @Test(.enabled(if: builtProduct("afplay") != nil || getenv("CI").map { String(cString: $0) } == "true"),
          arguments: [["--eq", "bass+12"], ["--eq", "flat"], ["--compress"], ["--reverb"], ["--mix"], [], ["-r", "2.0"]])
    func threeRendersUnderLoadAreIdenticalAndEndWithTheAudio(arguments: [String]) throws {
        let dir = try ScratchDirectory("afplay-determinism")
        defer { dir.remove() }
        let input = dir.path + "/tone.wav"
        #expect(AfplayOutputRateTests.tone(input, rate: Self.rate, frequency: 440, seconds: 3))
        var inputs = [input]
        if arguments == ["--mix"] {
            let second = dir.path + "/second.wav"
            #expect(AfplayOutputRateTests.tone(second, rate: Self.rate, frequency: 660, seconds: 2))
            inputs.append(second)
        }
        let files = try Self.threeRenders(arguments, inputs: inputs, dir: dir)
        let counts = files.map { Self.dataFrames($0) ?? -1 }
        print("afplay \(arguments.joined(separator: " ")) --output wav: frames per run: \(counts)")
        #expect(files.allSatisfy { $0 == files[0] }, "\(arguments): the three renders differ: \(counts) frames")
        let n = counts[0]
        switch arguments.first {
        case "--reverb":
            // The tail follows the input, ended below -90 dBFS, at most the reverb's tail time
            // (large: 1.5 x 2.2 s + 0.05 s).
            #expect(n > Self.frames + Self.rate / 2 && n <= Self.frames + Int(3.35 * Double(Self.rate)) + 1,
                    "--reverb: \(n) frames for \(Self.frames) of input")
            // And the file's last 256 frames are the tail falling below -90 dBFS.
            let wav = try #require(AfplayOutputRateTests.readWAV(files[0]))
            let peak = wav.samples.suffix(64).map { abs($0) }.max() ?? 1
            #expect(peak < 1e-3, "--reverb: the file ends at \(peak) (not in the quiet end of the tail)")
        case "--compress":
            // The limiter's 5 ms look-ahead (220 frames) is its tail.
            #expect(n >= Self.frames && n <= Self.frames + 220, "--compress: \(n) frames for \(Self.frames) of input")
        case "-r":
            #expect(abs(n - Self.frames / 2) <= 2, "-r 2.0: \(n) frames for \(Self.frames) of input")
        default:
            // No tail (EQ, mixer, plain playback): exactly the input's frames.
            #expect(n == Self.frames, "\(arguments): \(n) frames for \(Self.frames) of input")
        }
    }

    /// The AVAudioEngine and AUGraph paths (the porting suite's players) with
    /// `OAT_OUTPUT=wav:PATH`, three runs under load: identical files, the input's frames at the
    /// output's rate (plus the reverb's tail with "fx"). AVAudioEngine wrote 19,340 frames of
    /// silence after the file (plain) and 144,950-150,525 frames that differed every run (fx).
    @Test(.enabled(if: builtProduct("porting-avaudioengine-player") != nil && builtProduct("porting-augraph-player") != nil),
          arguments: [["porting-avaudioengine-player", "plain"], ["porting-avaudioengine-player", "fx"], ["porting-augraph-player"]])
    func engineAndGraphFileOutputsAreIdenticalUnderLoad(program: [String]) throws {
        let tool = try #require(builtProduct(program[0]))
        let dir = try ScratchDirectory("engine-determinism")
        defer { dir.remove() }
        let input = dir.path + "/tone.wav"
        #expect(AfplayOutputRateTests.tone(input, rate: Self.rate, frequency: 440, seconds: 3))
        let hogs = try Self.startHogs()
        defer { for h in hogs { h.terminate() } }
        var files: [[UInt8]] = []
        for run in 0..<3 {
            let out = dir.path + "/out\(run).wav"
            let p = try ToolProcess(tool, [input] + program.dropFirst(), environment: ["OAT_OUTPUT": "wav:\(out)"],
                                    outputPath: dir.path + "/log\(run).txt")
            let status = p.wait(timeout: 60)
            if status == nil { p.stop() }
            #expect(status == 0, "\(program): \(p.output)")
            files.append(try #require(Corpus.read(out), "no WAV at \(out)"))
        }
        let wavs = files.compactMap(AfplayOutputRateTests.readWAV)
        try #require(wavs.count == 3)
        let counts = wavs.map(\.samples.count)
        print("\(program.joined(separator: " ")) OAT_OUTPUT=wav: frames per run: \(counts) at \(wavs[0].rate) Hz")
        #expect(files.allSatisfy { $0 == files[0] }, "\(program): the three renders differ: \(counts) frames")
        let expected = 3 * wavs[0].rate
        if program.last == "fx" {
            #expect(counts[0] > expected + wavs[0].rate / 2, "\(program): \(counts[0]) frames: no reverb tail")
            let peak = wavs[0].samples.suffix(64).map { abs($0) }.max() ?? 1
            #expect(peak < 1e-3, "\(program): the file ends at \(peak), not in the quiet end of the tail")
        } else {
            #expect(counts[0] == expected, "\(program): \(counts[0]) frames for 3 s at \(wavs[0].rate) Hz")
        }
    }
}
