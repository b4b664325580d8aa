#if canImport(Glibc)
import Glibc
#endif
import OATCore
import OATDevices
import OATQueueEngine
import OATStreaming
import OATTestSupport
import Synchronization
import Testing

/// Resident set size of this process in KiB (from /proc/self/statm).
func residentKiB() -> Int {
    guard let bytes = Corpus.read("/proc/self/statm") else { return 0 }
    let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
}

/// `x` with one decimal.
func tenths(_ x: Double) -> String {
    let t = Int((x * 10).rounded())
    return "\(t / 10).\(abs(t % 10))"
}

/// The soak: `OAT_SOAK_MINUTES` (default 2) minutes of audio streamed from the loopback server
/// as a gapless queue of 30 s on-demand MP3 items, every item with scripted faults (disconnects,
/// stalls, 503s, dropped connections, outages) and the output device lost once and restored,
/// rendered faster than real time to the null device. Samples RSS every 0.1 s into a CSV
/// (`OAT_SOAK_CSV`, else a scratch file) and checks: memory flat (the last quarter's peak within
/// 16 MiB of the first quarter's), every fault recovered (no error, every item finished), and no
/// drift: the device played exactly items x frames per item and the final position is the last
/// item's end (the running difference between the position and the device count is logged: it is
/// the decoder's 20 ms tick times the speed, about 1 s of audio at 60x). `Scripts/soak.sh --minutes N` runs it. RSS is the whole test process's: run it alone
/// (Scripts/test.sh does), other tests in the same process would count.
@Suite struct PlaybackSoakTests {
    @Test func soakWithInjectedFaults() async throws {
        let environment = { (name: String) -> String? in getenv(name).map { String(cString: $0) } }
        let minutes = environment("OAT_SOAK_MINUTES").flatMap(Double.init) ?? 2
        let itemSeconds = 30.0
        let items = max(2, Int((minutes * 60 / itemSeconds).rounded(.up)))
        let dir = try ScratchDirectory("soak")
        defer { dir.remove() }
        let csvPath = environment("OAT_SOAK_CSV") ?? dir.path + "/soak.csv"
        let file = dir.path + "/item.mp3"
        try #require(makeFixture(file, rate: 44100, channels: 2, seconds: itemSeconds, codec: ["-c:a", "libmp3lame", "-b:a", "128k"]))
        let framesPerItem = Int64(try decodeWithToolbox(file).samples.count / 2)
        let size = Int(try #require(Corpus.read(file)).count)

        // Every item gets faults, chosen by its index (deterministic).
        let server = try TestHTTPServer()
        defer { server.stop() }
        var scripted = 0
        var urls: [String] = []
        for i in 0..<items {
            var route = TestHTTPServer.Route(body: .file(file), contentType: "audio/mpeg")
            let a = 10_000 + (i * 7919 * 13) % (size - 20_000)
            let b = min(size - 1, a + 5_000 + (i * 104_729) % 100_000)
            switch i % 6 {
            case 0: route.faults = [.disconnect(afterBytes: a)]
            case 1: route.faults = [.stall(afterBytes: a, seconds: 1)]
            case 2: route.faults = [.status(503, retryAfter: "0"), .disconnect(afterBytes: a)]
            case 3: route.faults = [.outage(afterBytes: a, seconds: 0.5)]
            case 4: route.faults = [.dropConnection, .disconnect(afterBytes: a), .disconnect(afterBytes: b - a)]
            default: route.faults = [.disconnect(afterBytes: a), .stall(afterBytes: b - a, seconds: 1)]
            }
            scripted += route.faults.count
            server.route("/item\(i).mp3", route)
            urls.append(server.url("/item\(i).mp3"))
        }
        var reconnect = ReconnectPolicy()
        reconnect.stallTimeout = 0.3
        reconnect.initialBackoff = 0.02
        reconnect.maximumBackoff = 0.2
        reconnect.healthyAfter = 1
        reconnect.giveUpAfter = 10

        // The null device, not paced, lost once mid-way for 0.3 s.
        let devices = Locked<[NullOutputDevice]>([])
        var faults = AudioDeviceFaults()
        faults.loseAfterFrames = Int64(items) * framesPerItem / 2
        faults.restoreAfterSeconds = 0.3
        let deviceFaults = faults
        let output: AudioOutputDeviceFactory = { format throws(AudioError) in
            let d = NullOutputDevice(format: format, realTime: false, faults: deviceFaults)
            devices.withLock { $0.append(d) }
            return d
        }
        let played = { devices.withLock { $0.reduce(Int64(0)) { $0 + $1.playedFrames } } }
        let log = StreamingEventLog()
        let player = StreamingPlayer(output: output, sourceFactory: httpSources(reconnect), onEvent: log.handler)
        let task = log.attach(player)

        var csv = "seconds,rss_kib,audio_seconds,position_error_ms\n"
        var samples: [(t: Double, rss: Int)] = []
        var worstDrift = 0.0
        let start = HostTime.now()
        await player.play(urls)
        let budget = minutes * 60 + 120   // wall-clock limit: faster than real time, or it fails
        while !log.events.contains(where: isStopped) {
            let t = HostTime.seconds(ticks: HostTime.now() - start)
            if t > budget { break }
            let before = played()
            let position = await player.position
            let after = played()
            // The position the device's count implies (the item index and the seconds in it),
            // checked only while the device count was stable around the read.
            if after - before < 4096, position.seconds > 0.5, position.seconds < itemSeconds - 0.5 {
                let expected = Double(Int64(position.index) * framesPerItem) / 44100 + position.seconds
                let drift = abs(Double(after) / 44100 - expected)
                worstDrift = max(worstDrift, drift)
                csv += "\(t),\(residentKiB()),\(Double(after) / 44100),\(Int(drift * 1000))\n"
            } else {
                csv += "\(t),\(residentKiB()),\(Double(after) / 44100),\n"
            }
            samples.append((t, residentKiB()))
            try await Task.sleep(for: .milliseconds(100))
        }
        let wall = HostTime.seconds(ticks: HostTime.now() - start)
        let stats = await player.statistics
        await player.stop()
        task.cancel()
        _ = writeFile(csvPath, Array(csv.utf8))

        let total = played()
        let errors = log.events.compactMap { if case .error(_, let e) = $0 { e } else { nil } }
        let finished = Set(log.events.compactMap { if case .itemFinished(let i, _) = $0 { i } else { nil } })
        let reconnects = log.events.filter { if case .reconnected = $0 { true } else { false } }.count
        let requests = server.requests.count
        let q = max(1, samples.count / 4)
        let firstMax = samples.prefix(q).map(\.rss).max() ?? 0
        let lastMax = samples.suffix(q).map(\.rss).max() ?? 0
        let summary = """
            soak: \(minutes) min of audio (\(items) items) in \(tenths(wall)) s wall \
            (\(tenths(Double(total) / 44100 / max(wall, 0.001)))x real time); \
            played \(total) frames of \(Int64(items) * framesPerItem) expected; \(scripted) scripted faults, \
            \(requests) requests, \(reconnects) reconnect events, \(stats.reconnects) source reconnects; \
            RSS first-quarter max \(firstMax / 1024) MiB, last-quarter max \(lastMax / 1024) MiB, \
            overall min \((samples.map(\.rss).min() ?? 0) / 1024) max \((samples.map(\.rss).max() ?? 0) / 1024) MiB \
            over \(samples.count) samples; worst running position lag \(Int(worstDrift * 1000)) ms of audio (the decoder's tick times the speed); CSV \(csvPath)
            """
        print(summary)
        #expect(log.stopReason == .ended, "\(String(describing: log.stopReason))")
        #expect(errors.isEmpty, "\(errors)")
        #expect(finished.count == items, "finished \(finished.sorted())")
        #expect(total == Int64(items) * framesPerItem, "played \(total) frames, expected \(Int64(items) * framesPerItem)")
        #expect(reconnects >= items, "only \(reconnects) reconnects for \(items) items with mid-stream faults")
        #expect(lastMax <= firstMax + 16 * 1024, "memory grew: first quarter max \(firstMax) KiB, last \(lastMax) KiB")
        // No drift: the device played exactly every frame of every item (above), and the player's
        // position tracked the device's count all along, within 0.25 s of wall time (at 80x real
        // time the 20 ms decoder tick alone is 1.6 s of audio).
        let speed = Double(total) / 44100 / max(wall, 0.001)
        #expect(worstDrift / speed < 0.25, "position lagged the device by \(worstDrift) s of audio at \(speed)x")
    }
}
