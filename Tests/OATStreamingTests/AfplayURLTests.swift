#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATTestSupport
import OATUnits
import Testing

/// `afplay URL`: a live ICY stream from the loopback server, played to the null device (not
/// paced), reports first_audio and a metadata event per title with its playback time, and stops
/// after `-t`.
@Suite struct AfplayURLTests {
    static func afplayPath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        var dirs: [String] = []
        if n > 0 {
            let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let slash = exe.lastIndex(of: "/") { dirs.append(String(exe[..<slash])) }
        }
        dirs.append("\(Corpus.packageRoot)/.build/debug")
        for d in dirs where access("\(d)/afplay", X_OK) == 0 { return "\(d)/afplay" }
        return nil
    }

    @Test func liveICYStreamReportsFirstAudioAndTitles() throws {
        let afplay = try #require(Self.afplayPath(), "afplay is not built (swift build)")
        let dir = try ScratchDirectory("afplay-url")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let bytes = try #require(Corpus.read(file))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .looping(bytes), contentType: "audio/mpeg")
        route.acceptsRanges = false
        route.sendsContentLength = false
        route.icyMetaInterval = 16000
        route.throttleBytesPerSecond = 32_000
        server.route("/live.mp3", route)
        server.setTitle("Über Title", for: "/live.mp3")
        let p = try ToolProcess(afplay, ["--json-events", "--output", "null:fast", "-t", "1.5", server.url("/live.mp3")],
                                outputPath: dir.path + "/out.txt")
        let code = p.wait(timeout: 20)
        if code == nil { p.stop() }
        #expect(code == 0, "afplay output: \(p.output)")
        let lines = p.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("\"event\": \"first_audio\"") })
        let meta = lines.first { $0.contains("\"event\": \"metadata\"") }
        #expect(meta?.contains("\"title\": \"Über Title\"") == true, "\(lines)")
        #expect(meta?.contains("\"playback_time\"") == true)
        #expect(lines.contains { $0.contains("\"state\": \"playing\"") })
    }

    @Test func notFoundURLExitsWithAnError() throws {
        let afplay = try #require(Self.afplayPath(), "afplay is not built (swift build)")
        let dir = try ScratchDirectory("afplay-url-404")
        defer { dir.remove() }
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .bytes([]), contentType: "text/plain")
        route.status = 404
        server.route("/gone.mp3", route)
        let p = try ToolProcess(afplay, ["--output", "null:fast", server.url("/gone.mp3")], outputPath: dir.path + "/out.txt")
        let code = p.wait(timeout: 10)
        if code == nil { p.stop() }
        #expect(code == 1)
        #expect(p.output.contains("404"), "\(p.output)")
    }

    /// A URL that fails mid-way (the connection drops after some audio, the reconnect gets a
    /// 404): exit status 1, the error on stderr, and the final state a stop with the error.
    @Test func urlFailingMidWayExitsWithAnError() throws {
        let afplay = try #require(Self.afplayPath(), "afplay is not built (swift build)")
        let dir = try ScratchDirectory("afplay-url-midway")
        defer { dir.remove() }
        let file = dir.path + "/a.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: 2, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let server = try TestHTTPServer()
        defer { server.stop() }
        var route = TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg")
        route.faults = [.disconnect(afterBytes: 20_011), .status(404, retryAfter: nil)]
        server.route("/a.mp3", route)
        let p = try ToolProcess(afplay, ["--json-events", "--output", "null:fast", server.url("/a.mp3")], outputPath: dir.path + "/out.txt")
        let code = p.wait(timeout: 20)
        if code == nil { p.stop() }
        #expect(code == 1, "afplay output: \(p.output)")
        let lines = p.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("\"event\": \"first_audio\"") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("afplay: ") && $0.contains("404") }, "\(lines)")
        let stop = lines.last { $0.contains("\"state\": \"stopped\"") }
        #expect(stop?.contains("\"reason\": \"error\"") == true, "\(lines)")
        #expect(!lines.contains { $0.contains("\"event\": \"end\"") }, "\(lines)")
    }
}

/// `afplay --eq/--compress/--reverb URL`: the effects apply to streams too (the streaming
/// player's device wrapped in an effect chain), checked by tone levels in the played audio.
@Suite struct AfplayURLEffectsTests {
    @Test func eqAppliesToAnHTTPStream() throws {
        let afplay = try #require(AfplayURLTests.afplayPath(), "afplay is not built (swift build)")
        let dir = try ScratchDirectory("afplay-url-eq")
        defer { dir.remove() }
        let wav = dir.path + "/tones.wav"
        try #require(runFFmpeg(["-f", "lavfi", "-i", "aevalsrc=0.2*sin(2*PI*100*t)+0.2*sin(2*PI*5000*t)|0.2*sin(2*PI*100*t)+0.2*sin(2*PI*5000*t):s=44100:d=2",
                                "-c:a", "pcm_s16le", wav]))
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/tones.wav", TestHTTPServer.Route(body: .file(wav), contentType: "audio/wav"))
        var levels: [String: (low: Double, high: Double)] = [:]
        for (name, extra) in [("plain", [String]()), ("eq", ["--eq", "bass+12"])] {
            let out = dir.path + "/\(name).wav"
            let p = try ToolProcess(afplay, extra + ["--no-ui", "--output", "wav:" + out, server.url("/tones.wav")], outputPath: dir.path + "/\(name).txt")
            let code = p.wait(timeout: 30)
            if code == nil { p.stop() }
            #expect(code == 0, "afplay \(extra): \(p.output)")
            let played = try decodeWithToolbox(out)
            try #require(played.samples.count / played.channels >= 80_000, "\(name): only \(played.samples.count / max(1, played.channels)) frames")
            let low = toneAmplitude(played.samples, freq: 100, rate: 44100, from: 22050, count: 44100, channels: played.channels)
            let high = toneAmplitude(played.samples, freq: 5000, rate: 44100, from: 22050, count: 44100, channels: played.channels)
            levels[name] = (low, high)
        }
        let plain = try #require(levels["plain"]), eq = try #require(levels["eq"])
        let lowGain = 20 * log10(eq.low / plain.low), highGain = 20 * log10(eq.high / plain.high)
        // afplay's bass+12 is a +12 dB low shelf at 120 Hz: its designed response.
        let design = AUNBandEQNode(channels: 2, bands: [AUEQBand(.lowShelf, frequency: 120, gain: 12)])
        try design.prepare(sampleRate: 44100, maxFrames: 1024)
        let low = design.designResponse(at: 100), high = design.designResponse(at: 5000)
        print("afplay URL --eq figure: 100 Hz \(dB(lowGain)) dB (design \(dB(low))), 5 kHz \(dB(highGain)) dB (design \(dB(high)))")
        #expect(abs(20 * log10(plain.low / 0.2)) < 0.5, "without effects the 100 Hz tone is \(plain.low)")
        #expect(abs(lowGain - low) < 0.5, "100 Hz changed by \(lowGain) dB, designed \(low)")
        #expect(abs(highGain - high) < 0.5, "5 kHz changed by \(highGain) dB, designed \(high)")
    }

    @Test func mixIsRefusedForStreams() throws {
        let afplay = try #require(AfplayURLTests.afplayPath(), "afplay is not built (swift build)")
        let dir = try ScratchDirectory("afplay-url-mix")
        defer { dir.remove() }
        let p = try ToolProcess(afplay, ["--mix", "--output", "null:fast", "http://127.0.0.1:9/a.mp3"], outputPath: dir.path + "/out.txt")
        let code = p.wait(timeout: 10)
        if code == nil { p.stop() }
        #expect(code == 2)
        #expect(p.output.contains("--mix"), "\(p.output)")
    }
}
