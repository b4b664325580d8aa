// afplay's OATUnits path: --eq, --reverb, --compress and --mix route playback through an
// AudioGraph (players -> mixer -> EQ -> compressor/limiter -> reverb -> output) instead of the
// plain AudioQueue player.
import AudioToolboxKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The graph options afplay takes, pulled out of the command line before the rest is parsed.
struct GraphOptions {
    var eq: [AUEQBand]?
    var reverbRoom: String?
    var compress = false
    var mix = false
    /// The arguments left for the main parser.
    var remaining: [String] = []

    var isActive: Bool { eq != nil || reverbRoom != nil || compress || mix }

    static let usage = """
      --eq PRESET|BANDS    equaliser through the OATUnits graph: a preset (flat, rock, pop, jazz,
                           classical, bass, vocal, treble), named bands (bass+6,mid-2,treble-3: low
                           shelf 120 Hz, peak 1 kHz, high shelf 6 kHz) or 10 comma-separated dB
                           values for the graphic bands 31.25 Hz ... 16 kHz
      --reverb [ROOM]      reverb: small, medium, large (default), hall, cathedral, plate
      --compress           compressor (-24 dB threshold, 3:1, +6 dB makeup) and a -1 dBFS limiter
      --mix                play the files at the same time, mixed, instead of one after another
    """

    /// The effect nodes the options ask for, in processing order: EQ, compressor and limiter, reverb.
    func makeEffects() -> [OATUnits.RenderNode] {
        var chain: [OATUnits.RenderNode] = []
        if let bands = eq { chain.append(AUNBandEQNode(channels: 2, bands: bands)) }
        if compress {
            chain.append(AUDynamicsNode(channels: 2, threshold: -24, ratio: 3, knee: 6, attack: 0.01, release: 0.15, makeup: 6))
            chain.append(AUPeakLimiterNode(channels: 2, ceiling: -1))
        }
        if let room = reverbRoom, let r = AUReverbNode.rooms[room] {
            chain.append(AUReverbNode(channels: 2, decayTime: r.decay, decayAtNyquist: r.nyquist, wetDryMix: r.wet))
        }
        return chain
    }

    /// Takes the graph options out of `arguments` (without the program name).
    static func extract(_ arguments: [String]) -> GraphOptions {
        var o = GraphOptions()
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            switch a {
            case "--eq":
                guard i + 1 < arguments.count, let bands = AUNBandEQNode.bands(parsing: arguments[i + 1]) else {
                    fail("--eq takes a preset (\(AUNBandEQNode.presets.keys.sorted().joined(separator: ", "))), bands like bass+6,treble-3, or 10 dB values")
                }
                o.eq = bands
                i += 1
            case "--reverb":
                if i + 1 < arguments.count, AUReverbNode.rooms[arguments[i + 1].lowercased()] != nil {
                    o.reverbRoom = arguments[i + 1].lowercased()
                    i += 1
                } else {
                    o.reverbRoom = "large"
                }
            case "--compress": o.compress = true
            case "--mix": o.mix = true
            default: o.remaining.append(a)
            }
            i += 1
        }
        return o
    }
}

/// Plays `files` through the graph; returns the exit status.
func runGraphPlayback(files: [String], graphOptions: GraphOptions, volume: Float, start: Double, limit: Double?,
                      output: AudioOutputSpec, outputRate: Double? = nil, debug: Bool, interrupted: borrowing Atomic<Bool>) -> Int32 {
    do {
        // The output's rate=HZ when given (the players resample the files to the graph's rate).
        let first = try AudioFile(path: files[0]).dataFormat.sampleRate
        // Played at its own rate or resampled: either way it must be a rate that plays.
        if let why = FormatLimits.unplayableRate(first) {
            writeStderr("afplay: \(files[0]): \(why)")
            return 1
        }
        let rate = outputRate ?? first
        let graph = try AudioGraph(sampleRate: rate, channels: 2, maxFramesPerSlice: 1024)
        let groups: [[String]] = graphOptions.mix ? files.map { [$0] } : [files]
        let mixer = AUMixerNode(inputs: groups.count, inputChannels: 2, outputChannels: 2)
        try graph.add(mixer)
        mixer.masterVolume.value = volume
        var players: [AUPlayerNode] = []
        for i in groups.indices {
            let p = AUPlayerNode(channels: 2, bufferFrames: Int(rate), name: "player \(i)")
            try graph.add(p)
            try graph.connect(p, to: mixer, input: i)
            players.append(p)
        }
        let chain = graphOptions.makeEffects()
        var last: OATUnits.RenderNode = mixer
        for n in chain {
            try graph.add(n)
            try graph.connect(last, to: n)
            last = n
        }
        try graph.connect(last, to: graph.output)
        try graph.commit()
        for (i, group) in groups.enumerated() {
            try players[i].scheduleFiles(group, startSeconds: start, durationSeconds: limit)
        }
        // Let the feeders fill a little before the device starts pulling.
        var waited = 0
        while players.contains(where: { $0.bufferedFrames < 4096 && !$0.isInputEnded }) && waited < 200 { usleep(5000); waited += 1 }
        let feeding = players
        let opened = try graph.start(output, isReady: { @Sendable in
            // Not real time (files, null:fast): wait for the feeders.
            feeding.allSatisfy { $0.bufferedFrames >= 1024 || $0.isInputEnded }
        })
        if let notice = opened.notice { writeStderr("afplay: \(notice)") }
        if debug {
            writeStderr("afplay: graph: \(graph.nodes.map(\.name).joined(separator: ", ")) at \(Int(rate)) Hz on \(opened.device.name)")
        }
        if opened.device.isRealTime {
            while !interrupted.load(ordering: .relaxed) && !players.allSatisfy(\.isFinished) { usleep(20_000) }
            // Let the device play out what it holds, plus the reverb tail.
            if !interrupted.load(ordering: .relaxed) {
                let tail = (graphOptions.reverbRoom.flatMap { AUReverbNode.rooms[$0]?.decay }).map(Double.init) ?? 0
                usleep(UInt32(min(10, opened.device.latency + tail * 0.5 + 0.05) * 1e6))
            }
        } else {
            // Files and null:fast: the graph ends the output itself where the audio ends (the
            // files' frames, then the effects' tail), the same every run; stop once it has.
            while !interrupted.load(ordering: .relaxed) && !(players.allSatisfy(\.isFinished) && graph.isClocklessOutputIdle) {
                usleep(1000)
            }
        }
        graph.stop()
        for p in players { p.stop() }
        var failed = false
        for (i, p) in players.enumerated() {
            if let e = p.error { writeStderr("afplay: \(groups[i].joined(separator: ", ")): \(e)"); failed = true }
        }
        return failed ? 1 : 0
    } catch {
        writeStderr("afplay: \(error)")
        return 1
    }
}
