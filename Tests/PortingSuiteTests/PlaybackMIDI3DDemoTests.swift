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
            // From 0.1 s into the note (the previous note's release has died down) to its end.
            let from = first + n * step + Int(rate * 0.1)
            let window = Array(mono[min(mono.count, from)..<min(mono.count, from + Int(rate * 0.12))])
            let f = autocorrelationPitch(window, sampleRate: rate)
            let expected = 440 * pow(2, Double(keys[n % 6] - 69) / 12)
            cents.append(f > 0 ? 1200 * log2(f / expected) : .infinity)
        }
        print("porting-midi-3d-demo: pitch error per note (cents): \(cents.map { String(format: "%.0f", $0) }.joined(separator: " "))")
        #expect(cents.allSatisfy { abs($0) < 30 }, "every note at its pitch: \(cents)")
        // Where the sound is: the first notes from the left, the last from the right. At these
        // notes' frequencies (260-520 Hz) the head shadows little (a few dB), so the level
        // difference is checked for its sign and the time difference for its size: at 60-90
        // degrees the far ear hears the sound 0.5-0.75 ms later (the HRTF set's ITD).
        /// The lag of right against left in frames, within +-2 ms (positive: the right ear later).
        func interauralLag(_ range: Range<Int>) -> Int {
            let maxLag = Int(rate * 0.002)
            var best = 0, bestScore = -Double.infinity
            for lag in -maxLag...maxLag {
                var s = 0.0
                for i in range where i + lag >= 0 && i + lag < right.count { s += Double(left[i] * right[i + lag]) }
                if s > bestScore { bestScore = s; best = lag }
            }
            return best
        }
        let head = first..<(first + Int(rate * 0.75)), tail = (first + Int(rate * 3.75))..<(first + Int(rate * 4.5))
        let startBalance = levelDB(left, from: head.lowerBound, to: head.upperBound) - levelDB(right, from: head.lowerBound, to: head.upperBound)
        let endBalance = levelDB(left, from: tail.lowerBound, to: tail.upperBound) - levelDB(right, from: tail.lowerBound, to: tail.upperBound)
        let startLag = Double(interauralLag(head)) / rate * 1000, endLag = Double(interauralLag(tail)) / rate * 1000
        print("porting-midi-3d-demo: left minus right \(String(format: "%.1f", startBalance)) dB, right ear \(String(format: "%.3f", startLag)) ms later at the start; \(String(format: "%.1f", endBalance)) dB, \(String(format: "%.3f", endLag)) ms at the end")
        #expect(startBalance > 3, "the source starts on the left: \(startBalance) dB")
        #expect(endBalance < -3, "and ends on the right: \(endBalance) dB")
        #expect(startLag > 0.45 && startLag < 0.8, "the right ear hears the start later: \(startLag) ms")
        #expect(endLag < -0.45 && endLag > -0.8, "the left ear hears the end later: \(endLag) ms")
    }
}

@Suite(.serialized) struct PlaybackMusicPlayerTests {
    /// A type 1 file: conductor at 100 bpm, then A4 A4 E5 E5 on beats 0-3, half a beat each.
    static let keys: [UInt8] = [69, 69, 76, 76]
    static func file() -> [UInt8] {
        let conductor: [UInt8] = [0x00, 0xFF, 0x51, 0x03, 0x09, 0x27, 0xC0, 0x00, 0xFF, 0x2F, 0x00]
        var body: [UInt8] = []
        for (i, key) in keys.enumerated() {
            // Note on (after 240 ticks of rest but the first), 240 ticks, note off.
            body += (i == 0 ? [0x00] : [0x81, 0x70]) + [0x90, key, 0x64, 0x81, 0x70, 0x80, key, 0x40]
        }
        body += [0x00, 0xFF, 0x2F, 0x00]
        func chunk(_ b: [UInt8]) -> [UInt8] { Array("MTrk".utf8) + [0, 0, UInt8(b.count >> 8), UInt8(b.count & 0xFF)] + b }
        return Array("MThd".utf8) + [0, 0, 0, 6, 0, 1, 0, 2, 0x01, 0xE0] + chunk(conductor) + chunk(body)
    }

    /// Note onsets: where the level (64-frame RMS) jumps to 4x what it was 256 frames before,
    /// refined to the first sample above 3x that earlier level.
    static func onsets(_ x: [Float], rate: Double) -> [Int] {
        let hop = 64
        let levels = stride(from: 0, to: x.count - hop, by: hop).map { i in (x[i..<(i + hop)].reduce(0) { $0 + $1 * $1 } / Float(hop)).squareRoot() }
        var found: [Int] = []
        for i in 4..<levels.count where levels[i] > 4 * max(levels[i - 4], 1e-6) && levels[i] > 0.01 {
            if let last = found.last, i * hop - last < Int(rate * 0.2) { continue }
            let base = max(levels[i - 4] * 3, 1e-5)
            let from = max(0, i * hop - 2 * hop)
            let k = (from..<min(x.count, i * hop + hop)).first { abs(x[$0]) > base } ?? i * hop
            found.append(k)
        }
        return found
    }

    @Test("MusicPlayer with an AUSampler graph plays a MIDI file at its tempo and pitches, to a PulseAudio sink",
          .requires(TestResource.first(TestResource.pulseAudioMissing, FileManager.default.fileExists(atPath: "/usr/share/sounds/sf2/TimGM6mb.sf2") ? nil : "timgm6mb-soundfont is not installed")))
    func musicPlayerThroughSampler() throws {
        let rate = 44100.0
        let midi = scratchPath("notes.mid")
        defer { unlink(midi) }
        #expect(FileManager.default.createFile(atPath: midi, contents: Data(Self.file())))
        let daemon = try PulseTestDaemon(sampleRate: Int(rate), channels: 2)
        defer { daemon.stop() }
        let recording = try daemon.recordMonitor(to: scratchPath("monitor.raw"))
        var env = daemon.environment
        env["OAT_OUTPUT"] = "pulse"
        let result = try run(try portingProgram("porting-music-player"), [midi, "/usr/share/sounds/sf2/TimGM6mb.sf2", "0"], environment: env, timeout: 60)
        usleep(300_000)
        let recorded = recording.stop()
        print(result.output)
        #expect(result.status == 0, "\(result.output)")
        let mono = stride(from: 0, to: recorded.count - 1, by: 2).map { (recorded[$0] + recorded[$0 + 1]) / 2 }
        let onsets = Self.onsets(mono, rate: rate)
        print("porting-music-player: onsets at \(onsets.map { String(format: "%.4f", Double($0) / rate) }) s")
        try #require(onsets.count == 4, "four notes: \(onsets)")
        // The same key twice is the same sample of the bank: its two onsets are a beat (0.6 s at
        // 100 bpm) apart to FluidSynth's 64-frame block (it starts voices on block boundaries)
        // and a frame of detection. Between different keys, their samples' own attacks differ.
        let spacing = zip(onsets.dropFirst(), onsets).map { $0 - $1 }
        let beat = Int(rate * 0.6)
        print("porting-music-player: onset spacing \(spacing) frames (a beat is \(beat))")
        #expect(abs(spacing[0] - beat) <= 66 && abs(spacing[2] - beat) <= 66, "same key a beat apart: \(spacing)")
        #expect(abs(spacing[1] - beat) < Int(rate * 0.01), "\(spacing)")
        var cents: [Double] = []
        for (onset, key) in zip(onsets, Self.keys) {
            let window = Array(mono[(onset + Int(rate * 0.05))..<(onset + Int(rate * 0.2))])
            let f = autocorrelationPitch(window, sampleRate: rate)
            cents.append(1200 * log2(f / (440 * pow(2, Double(Int(key) - 69) / 12))))
        }
        print("porting-music-player: pitch error (cents) \(cents.map { String(format: "%.1f", $0) })")
        #expect(cents.allSatisfy { abs($0) < 30 }, "\(cents)")
    }
}
