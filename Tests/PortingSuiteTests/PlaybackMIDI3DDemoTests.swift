// Issue 26's demo: porting-midi-3d-demo plays a Standard MIDI File (its own arpeggio) through
// AVAudioSequencer -> AVAudioUnitSampler (TimGM6mb) -> AVAudioEnvironmentNode (HRTF) to a
// private PulseAudio null sink, the source moving from the listener's left to the right. The
// sink's monitor is checked: each note's pitch, the notes' spacing, and where the sound is.
import OATTestSupport
import Foundation
import Testing

@Suite(.serialized) struct PlaybackMIDI3DDemoTests {
    @Test("a MIDI file through the sampler and a moving 3-D source, to a PulseAudio sink",
          .requires(TestResource.first(TestResource.pulseAudioMissing, FileManager.default.fileExists(atPath: "/usr/share/sounds/sf2/TimGM6mb.sf2") ? nil : "timgm6mb-soundfont is not installed")))
    func midiThroughSamplerIn3D() throws {
        let rate = 44100.0
        let daemon = try PulseTestDaemon(sampleRate: Int(rate), channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        let result = try run(try portingProgram("porting-midi-3d-demo"), ["--program", "73"], environment: env, timeout: 60)
        usleep(300_000)
        let recorded = recording.stop()
        print(result.output)
        #expect(result.status == 0, "\(result.output)")
        let left = stride(from: 0, to: recorded.count, by: 2).map { recorded[$0] }
        let right = stride(from: 1, to: recorded.count, by: 2).map { recorded[$0] }
        let mono = zip(left, right).map { ($0 + $1) / 2 }
        let first = try #require(mono.firstIndex { abs($0) > 0.003 }, "nothing was heard")
        // The file: C4 E4 G4 C5 G4 E4, three times, an eighth note (0.25 s) each, 0.45 beat long.
        let keys = [60, 64, 67, 72, 67, 64]
        let step = Int(rate * 0.25)
        var cents: [Double] = []
        for n in 0..<18 {
            let from = first + n * step + Int(rate * 0.03)
            let window = Array(mono[min(mono.count, from)..<min(mono.count, from + Int(rate * 0.15))])
            let f = fundamentalFrequency(window, sampleRate: rate)
            let expected = 440 * pow(2, Double(keys[n % 6] - 69) / 12)
            cents.append(f > 0 ? 1200 * log2(f / expected) : .infinity)
        }
        print("porting-midi-3d-demo: pitch error per note (cents): \(cents.map { String(format: "%.0f", $0) }.joined(separator: " "))")
        #expect(cents.allSatisfy { abs($0) < 30 }, "every note at its pitch: \(cents)")
        // Where the sound is: the first notes from the left, the last from the right.
        func levelDB(_ x: ArraySlice<Float>) -> Double { 10 * log10(x.reduce(0) { $0 + Double($1 * $1) } / Double(max(1, x.count)) + 1e-12) }
        let head = first..<(first + Int(rate * 0.75)), tail = (first + Int(rate * 3.75))..<(first + Int(rate * 4.5))
        let startBalance = levelDB(left[head]) - levelDB(right[head])
        let endBalance = levelDB(left[tail]) - levelDB(right[tail])
        print("porting-midi-3d-demo: left minus right \(String(format: "%.1f", startBalance)) dB at the start, \(String(format: "%.1f", endBalance)) dB at the end")
        #expect(startBalance > 6, "the source starts on the left: \(startBalance) dB")
        #expect(endBalance < -6, "and ends on the right: \(endBalance) dB")
    }
}

@Suite(.serialized) struct PlaybackMusicPlayerTests {
    /// A type 1 file: conductor at 100 bpm, then A4 C5 E5 A5 on beats 0-3, half a beat each.
    static func arpeggioFile() -> [UInt8] {
        let conductor: [UInt8] = [0x00, 0xFF, 0x51, 0x03, 0x09, 0x27, 0xC0, 0x00, 0xFF, 0x2F, 0x00]
        // Deltas: each note-on after the previous note-off comes 240 ticks later.
        var body: [UInt8] = []
        for (i, key) in [69, 72, 76, 81].enumerated() {
            body += (i == 0 ? [0x00] : [0x81, 0x70]) + [0x90, UInt8(key), 0x64, 0x81, 0x70, 0x80, UInt8(key), 0x40]
        }
        body += [0x00, 0xFF, 0x2F, 0x00]
        func chunk(_ b: [UInt8]) -> [UInt8] { Array("MTrk".utf8) + [0, 0, UInt8(b.count >> 8), UInt8(b.count & 0xFF)] + b }
        return Array("MThd".utf8) + [0, 0, 0, 6, 0, 1, 0, 2, 0x01, 0xE0] + chunk(conductor) + chunk(body)
    }

    @Test("MusicPlayer with an AUSampler graph plays a MIDI file at its tempo and pitches, to a PulseAudio sink",
          .requires(TestResource.first(TestResource.pulseAudioMissing, FileManager.default.fileExists(atPath: "/usr/share/sounds/sf2/TimGM6mb.sf2") ? nil : "timgm6mb-soundfont is not installed")))
    func musicPlayerThroughSampler() throws {
        let rate = 44100.0
        let midi = scratchPath("arpeggio.mid")
        defer { unlink(midi) }
        FileManager.default.createFile(atPath: midi, contents: Data(Self.arpeggioFile()))
        let daemon = try PulseTestDaemon(sampleRate: Int(rate), channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        let result = try run(try portingProgram("porting-music-player"), [midi, "/usr/share/sounds/sf2/TimGM6mb.sf2", "73"], environment: env, timeout: 60)
        usleep(300_000)
        let recorded = recording.stop()
        print(result.output)
        #expect(result.status == 0, "\(result.output)")
        let mono = stride(from: 0, to: recorded.count - 1, by: 2).map { (recorded[$0] + recorded[$0 + 1]) / 2 }
        // Onsets: where the 5 ms level first reaches a fifth of the loudest, after a quiet stretch.
        let hop = Int(rate * 0.005)
        let levels = stride(from: 0, to: mono.count - hop, by: hop).map { i in (mono[i..<(i + hop)].reduce(0) { $0 + $1 * $1 } / Float(hop)).squareRoot() }
        let peak = levels.max() ?? 0
        var onsets: [Int] = []
        var quiet = true
        for (i, l) in levels.enumerated() {
            if quiet, l > peak / 5 { onsets.append(i * hop); quiet = false }
            if l < peak / 20 { quiet = true }
        }
        print("porting-music-player: onsets at \(onsets.map { String(format: "%.3f", Double($0) / rate) }) s")
        #expect(onsets.count == 4, "four notes: \(onsets)")
        guard onsets.count == 4 else { return }
        let spacing = zip(onsets.dropFirst(), onsets).map { Double($0 - $1) / rate }
        #expect(spacing.allSatisfy { abs($0 - 0.6) < 0.01 }, "a beat at 100 bpm apart: \(spacing)")
        var cents: [Double] = []
        for (onset, key) in zip(onsets, [69, 72, 76, 81]) {
            let window = Array(mono[(onset + Int(rate * 0.05))..<(onset + Int(rate * 0.2))])
            let f = fundamentalFrequency(window, sampleRate: rate)
            cents.append(1200 * log2(f / (440 * pow(2, Double(key - 69) / 12))))
        }
        print("porting-music-player: pitch error (cents) \(cents.map { String(format: "%.1f", $0) })")
        #expect(cents.allSatisfy { abs($0) < 30 }, "\(cents)")
    }
}
