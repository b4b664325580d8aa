#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import Dispatch
import OpenAudioToolbox
import Synchronization
import Testing

/// Recording through a real PulseAudio server: a known signal played into the private daemon's
/// null sink is recorded from its monitor by afrecord (as separate processes) and by the input
/// queue, and compared with what was played.
@Suite(.serialized, .requires(playbackUnavailable))
struct PlaybackRecordingTests {
    /// True when the segments cover every reference frame once, in order, with nothing else
    /// recorded: bit-exact recording (a playback underrun may insert silence between segments).
    func isCompleteInOrder(_ a: Alignment, referenceFrames: Int) -> Bool {
        guard a.unmatchedFrames == 0, a.coveredReferenceFrames == referenceFrames, let first = a.segments.first, first.referenceFrame == 0 else { return false }
        for (x, y) in zip(a.segments, a.segments.dropFirst()) where y.referenceFrame != x.referenceEnd || y.recordingFrame < x.recordingEnd { return false }
        return true
    }

    static let lossless: Set<String> = ["wav", "aiff", "caf", "alac.m4a", "flac"]

    /// One recording window, nine afrecord processes, one per writable format: each file holds
    /// the played signal (bit-exact for PCM, FLAC, ALAC; SNR measured for lossy codecs), is read
    /// by ffprobe, and was finished cleanly on SIGINT; the -t one has exactly the frames asked.
    @Test func afrecordRecordsEveryWritableFormat() throws {
        let afrecord = try #require(builtProduct("afrecord"), "afrecord is not built (swift build)")
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let scratch = try ScratchDirectory("afrecord")
        defer { scratch.remove() }
        let formats: [(name: String, data: String)] = [
            ("wav", "LEI16"), ("aiff", "BEI16"), ("caf", "LEI16"), ("m4a", "aac"), ("alac.m4a", "alac"),
            ("flac", "flac"), ("opus", "opus"), ("aac", "aac"), ("mp3", ".mp3"),
        ]
        let timedSeconds = 6.0
        var processes: [(name: String, path: String, process: ToolProcess)] = []
        defer { for p in processes { p.process.stop(grace: 1) } }
        // The timed (-t) recorder starts last, once the others record, so its window surely
        // covers the playback however slowly the others came up.
        for f in formats.reversed() {
            let path = "\(scratch.path)/rec.\(f.name)"
            var args = ["-d", "\(f.data)@48000", "-c", "2"]
            if f.name == "wav" {
                args += ["-t", String(timedSeconds)]
                let others = waitUntil(20) { processes.allSatisfy { isRecording($0.process) } }
                try #require(others, "not every afrecord started: \(processes.map { "\($0.name): \($0.process.output)" })")
            }
            processes.append((f.name, path, try startRecorder(afrecord, args, path, daemon: daemon)))
        }
        let ready = waitUntil(15) { processes.allSatisfy { isRecording($0.process) } }
        try #require(ready, "not every afrecord started: \(processes.map { "\($0.name): \($0.process.output)" })")
        let reference = recordingReference(rate: 48000, seconds: 2)
        try playIntoSink(reference, daemon: daemon)
        sleep(seconds: 0.3)
        for p in processes where p.name != "wav" { kill(p.process.pid, SIGINT) }
        for p in processes {
            let code = p.process.wait(timeout: 15)
            #expect(code == 0, "afrecord \(p.name) exited with \(String(describing: code)): \(p.process.output)")
            #expect(p.process.output.contains("frames"), "afrecord \(p.name) did not report what it wrote: \(p.process.output)")
        }
        for p in processes {
            let decoded = try decodeWithToolbox(p.path)
            #expect(decoded.channels == 2 && decoded.rate == 48000, "\(p.name): \(decoded.channels) ch @ \(decoded.rate)")
            let frames = decoded.samples.count / 2
            if p.name == "wav" {
                #expect(frames == Int(timedSeconds * 48000), "-t \(timedSeconds) recorded \(frames) frames")
            }
            #expect(ffprobeDuration(p.path) != nil, "ffprobe cannot read \(p.name)")
            let ffmpegFrames = decodeWithFFmpeg(p.path).map { $0.count / 2 }
            // Gapless as FFmpeg 5.1 sees it (docs/recording.md, Gapless files): exact for PCM,
            // FLAC, ALAC, Ogg Opus and MP3 (LAME tag); an AAC M4A keeps the last packet whole
            // (up to 1023 frames more); ADTS has no gapless info, and we decode whole packets too.
            print("afrecord \(p.name): we decode \(frames) frames, ffmpeg \(ffmpegFrames.map { String($0) } ?? "nothing")")
            let slack = p.name == "m4a" ? 1023 : 0
            #expect(ffmpegFrames.map { $0 >= frames && $0 <= frames + slack } == true,
                    "\(p.name): ffmpeg decodes \(String(describing: ffmpegFrames)) frames, we decode \(frames)")
            if Self.lossless.contains(p.name) {
                let alignment = alignSegments(recording: decoded.samples, reference: reference, channels: 2, tolerance: 0.5 / 32768)
                #expect(isCompleteInOrder(alignment, referenceFrames: reference.count / 2), "\(p.name) is not bit-exact: \(alignment)")
            } else {
                let match = lossyMatch(decoded.samples, reference, channels: 2)
                let snr = match?.snr ?? -.infinity
                let codec = Self.lossyCodecs[p.name]!
                let yardstick = ffmpegLossyMatch(reference, rate: 48000, channels: 2, codec: codec.ffmpeg, bitRate: codec.bitRate,
                                                 extension: codec.ext, directory: scratch.path, leadingFrames: match?.offset ?? 12000)
                print("afrecord \(p.name): \(match.map(\.description) ?? "not found"); ffmpeg \(codec.ffmpeg) at \(codec.bitRate / 1000) kb/s: \(yardstick.map(\.description) ?? "failed")")
                // Perceptual codecs do not keep the waveform: 60 dB is out of reach at their
                // default bit rates (see docs/recording.md). Ours must keep as much of it as
                // FFmpeg's own encoding of the same signal with the same codec and bit rate, and
                // clear a fixed floor; no segment may be lost.
                #expect(snr >= codec.floor, "\(p.name): \(match.map(\.description) ?? "reference not found")")
                if let yardstick { #expect(snr >= yardstick.snr - 1, "\(p.name): ours \(dB(snr)) dB, ffmpeg's \(dB(yardstick.snr)) dB") }
                #expect((match?.worst?.snr ?? -.infinity) >= codec.floor - 10, "\(p.name): \(match.map(\.description) ?? "")")
            }
        }
    }

    /// The lossy recordings, the FFmpeg encoder and bit rate that are their yardstick (our
    /// defaults for 48 kHz stereo), and the SNR floor each must clear.
    static let lossyCodecs: [String: (ffmpeg: String, bitRate: Int, ext: String, floor: Double)] = [
        "m4a": ("aac", 128_000, "m4a", 33), "aac": ("aac", 128_000, "m4a", 33),
        "opus": ("libopus", 96_000, "opus", 35), "mp3": ("libmp3lame", 128_000, "mp3", 22),
    ]

    /// kill -9 a few seconds into a recording leaves, for every writable format, a file that
    /// afinfo (and our AudioFile under it) and ffprobe read, holding all but at most the last
    /// second of what was recorded (the elapsed time from afrecord's first meter line to the kill).
    @Test func killedAfrecordLeavesReadableFiles() throws {
        let afrecord = try #require(builtProduct("afrecord"), "afrecord is not built (swift build)")
        let afinfo = try #require(builtProduct("afinfo"), "afinfo is not built (swift build)")
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let scratch = try ScratchDirectory("afrecord-kill")
        defer { scratch.remove() }
        let formats: [(name: String, args: [String])] = [
            ("wav", ["-d", "LEI16@48000"]), ("rf64.wav", ["-f", "RF64", "-d", "LEI24@48000"]), ("aiff", ["-d", "BEI16@48000"]),
            ("aifc", ["-d", "BEF32@48000"]), ("caf", ["-d", "LEI16@48000"]), ("alac.caf", ["-d", "alac@48000"]),
            ("aac.caf", ["-d", "aac@48000"]), ("m4a", ["-d", "aac@48000"]), ("alac.m4a", ["-d", "alac@48000"]),
            ("flac", ["-d", "flac@48000"]), ("opus", ["-d", "opus@48000"]), ("aac", ["-d", "aac@48000"]), ("mp3", ["-d", ".mp3@48000"]),
        ]
        var processes: [(name: String, path: String, process: ToolProcess)] = []
        defer { for p in processes { p.process.stop(grace: 0.5) } }
        for f in formats {
            let path = "\(scratch.path)/killed.\(f.name)"
            processes.append((f.name, path, try startRecorder(afrecord, f.args, path, daemon: daemon)))
        }
        var readyAt: [String: UInt64] = [:]
        let deadline = HostTime.now() + HostTime.ticks(seconds: 20)
        while readyAt.count < processes.count && HostTime.now() < deadline {
            for p in processes where readyAt[p.name] == nil && isRecording(p.process) { readyAt[p.name] = HostTime.now() }
            usleep(5_000)
        }
        try #require(readyAt.count == processes.count, "not every afrecord started: \(processes.filter { readyAt[$0.name] == nil }.map { "\($0.name): \($0.process.output)" })")
        sleep(seconds: 3)
        var recorded: [String: Double] = [:]
        for p in processes {
            kill(p.process.pid, SIGKILL)
            recorded[p.name] = elapsedSeconds(since: readAt(readyAt, p.name))
            _ = p.process.wait(timeout: 5)
        }
        for p in processes {
            let expected = recorded[p.name] ?? 3
            let file = try AudioFile(path: p.path)
            let ours = Double(file.validFrames) / file.dataFormat.sampleRate
            let probed = ffprobeDuration(p.path)
            let info = try ToolProcess(afinfo, [p.path], outputPath: p.path + ".afinfo")
            let infoCode = info.wait(timeout: 10)
            print("killed afrecord \(p.name): recorded ~\(expected) s, AudioFile reads \(ours) s, ffprobe \(probed.map { String($0) } ?? "nothing")")
            #expect(infoCode == 0 && info.output.contains("Data format"), "afinfo cannot read the killed \(p.name): \(info.output)")
            #expect(ours >= expected - 1 && ours <= expected + 0.5, "\(p.name): AudioFile reads \(ours) s of ~\(expected) s")
            #expect(probed != nil, "ffprobe cannot read the killed \(p.name)")
            if let probed { #expect(probed >= expected - 1, "\(p.name): ffprobe reads \(probed) s of ~\(expected) s") }
            let decoded = try decodeWithToolbox(p.path)
            #expect(Double(decoded.samples.count / 2) / 48000 >= expected - 1.1, "\(p.name): decodes \(decoded.samples.count / 2) frames")
            if p.name.hasPrefix("rf64") {
                #expect(Corpus.read(p.path).map { Array($0.prefix(4)) == Array("RF64".utf8) } == true, "-f RF64 did not write RF64")
            }
        }
    }

    private func readAt(_ table: [String: UInt64], _ name: String) -> UInt64 { table[name] ?? HostTime.now() }

    /// Losing the server mid-recording is reported and the file is still finished; bad input
    /// specs, missing sources, formats a container cannot hold and bad flags fail clearly,
    /// leaving no file behind.
    @Test func afrecordDeviceLossAndErrors() throws {
        let afrecord = try #require(builtProduct("afrecord"), "afrecord is not built (swift build)")
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let scratch = try ScratchDirectory("afrecord-errors")
        defer { scratch.remove() }

        let lostPath = "\(scratch.path)/lost.m4a"
        let recorder = try startRecorder(afrecord, [], lostPath, daemon: daemon)
        defer { recorder.stop(grace: 0.5) }
        try #require(waitUntil(15) { isRecording(recorder) }, "afrecord did not start: \(recorder.output)")
        sleep(seconds: 1.5)
        daemon.kill()
        let code = recorder.wait(timeout: 10)
        #expect(code == 0, "afrecord after the server went away: \(String(describing: code)) \(recorder.output)")
        #expect(recorder.output.contains("went away"), "\(recorder.output)")
        let file = try AudioFile(path: lostPath)
        #expect(Double(file.validFrames) / 44100 >= 1, "only \(file.validFrames) frames before the loss")
        #expect(ffprobeDuration(lostPath) != nil)

        func run(_ args: [String], _ name: String) throws -> (code: Int32?, output: String) {
            let p = try ToolProcess(afrecord, args, environment: daemon.environment, outputPath: "\(scratch.path)/\(name).log")
            return (p.wait(timeout: 10), p.output)
        }
        // The server is gone now: an explicit pulse input fails before the output is created.
        let noServer = try run(["--input", "pulse", "\(scratch.path)/none.wav"], "none")
        #expect(noServer.code == 1 && noServer.output.contains("PulseAudio") && noServer.output.contains("none.wav was not created"), "\(noServer)")
        #expect(access("\(scratch.path)/none.wav", F_OK) != 0, "a failed afrecord left its file")
        try daemon.start()
        // Each bad input: exit code, a first line "afrecord: ..." naming what is wrong and
        // where, and no file left behind.
        let d = scratch.path
        let cases: [(args: [String], code: Int32, mentions: [String], file: String)] = [
            (["--input", "pulse:oat_no_such_source", "\(d)/nosrc.wav"], 1, ["oat_no_such_source", "nosrc.wav was not created"], "nosrc.wav"),
            (["--input", "alsa:oat_no_such_pcm", "\(d)/nopcm.wav"], 1, ["oat_no_such_pcm", "nopcm.wav was not created"], "nopcm.wav"),
            (["-d", "aac", "\(d)/aac.wav"], 1, ["aac.wav", "WAVE cannot hold 'aac '"], "aac.wav"),
            (["-d", "opus", "\(d)/opus.aiff"], 1, ["opus.aiff", "AIFF cannot hold 'opus'"], "opus.aiff"),
            (["-f", "MPG3", "-d", "flac", "\(d)/flac.mp3"], 1, ["flac.mp3", "cannot hold 'flac'"], "flac.mp3"),
            (["--bogus", "\(d)/x.wav"], 2, ["unknown option --bogus"], "x.wav"),
            (["--input", "jack", "\(d)/x.wav"], 2, ["--input jack"], "x.wav"),
            (["-c", "99", "\(d)/x.wav"], 2, ["-c 99", "1...8"], "x.wav"),
            (["-t", "abc", "\(d)/x.wav"], 2, ["-t abc"], "x.wav"),
            (["-d", "LEI16@abc", "\(d)/x.wav"], 2, ["LEI16@abc"], "x.wav"),
            (["-f", "XYZ", "\(d)/x.wav"], 2, ["'XYZ'"], "x.wav"),
            (["\(d)/x.unknownext"], 2, ["x.unknownext", "give -f"], "x.unknownext"),
            (["-d"], 2, ["-d needs a value"], "x.wav"),
            (["-t", "1", "/nonexistent-dir/x.wav"], 1, ["cannot create /nonexistent-dir/x.wav"], "x.wav"),
        ]
        for (i, c) in cases.enumerated() {
            let r = try run(c.args, "case\(i)")
            let first = r.output.split(separator: "\n").first.map(String.init) ?? ""
            #expect(r.code == c.code, "afrecord \(c.args): exit \(String(describing: r.code)), expected \(c.code): \(r.output)")
            #expect(first.hasPrefix("afrecord: ") && c.mentions.allSatisfy { first.contains($0) },
                    "afrecord \(c.args): first line \"\(first)\" does not name \(c.mentions)")
            #expect(access("\(d)/\(c.file)", F_OK) != 0, "afrecord \(c.args) left \(c.file) behind")
        }
        let list = try run(["--list"], "list")
        #expect(list.code == 0 && list.output.contains("pulse:\(daemon.monitorSource)"), "\(list)")
    }

    /// The input queue in process: buffers' time stamps advance by exactly the frames delivered
    /// (PCM and AAC), host times follow the sample clock, packet descriptions come with AAC, the
    /// level meter sees the played signal, and a draining stop delivers everything.
    @Test func inputQueueTimestampsAndMetering() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let source = daemon.monitorSource, server = daemon.server
        let factory: AudioInputDeviceFactory = { f throws(AudioError) in
            try AudioInput.open(.pulse(source: source), format: f, options: AudioInput.Options(pulseServer: server)).device
        }
        final class Log: Sendable {
            let deliveries = Locked<[(time: AudioTimeStamp, frames: Int, packets: Int, descriptions: Int, bytes: Int)]>([])
        }
        var queues: [(AudioInputQueue, Log)] = []
        for data in ["LEI16", "aac"] {
            var format = try #require(AudioFileConversion.dataFormat(named: "\(data)@48000"))
            format.channelsPerFrame = 2
            let log = Log()
            let queue = try AudioInputQueue(format: format, input: factory) { q, d in
                log.deliveries.withLock { $0.append((d.startTime, d.frameCount, d.packetCount, d.buffer.packetDescriptions.count, d.buffer.audioDataByteSize)) }
                try? q.enqueue(d.buffer)
            }
            let vbr = queue.streamDescription.bytesPerPacket == 0
            for _ in 0..<4 {
                try queue.enqueue(try queue.allocateBuffer(byteCapacity: vbr ? 4 * queue.maximumOutputPacketSize : 9600,
                                                          packetDescriptionCapacity: vbr ? 4 : 0))
            }
            queue.isLevelMeteringEnabled = true
            queues.append((queue, log))
        }
        for (q, _) in queues { try q.start() }
        #expect(queues.allSatisfy { $0.0.isRunning })
        let reference = recordingReference(rate: 48000, seconds: 1)
        let meters = Locked<[Float]>([0, 0])
        let pcmQueue = queues[0].0
        let meterThread = try JoinableThread(name: "test-meters") {
            for _ in 0..<30 {
                usleep(40_000)
                let now = pcmQueue.currentLevels().map(\.peakPower)
                meters.withLock { m in for i in m.indices where i < now.count { m[i] = max(m[i], now[i]) } }
            }
        }
        try playIntoSink(reference, daemon: daemon)
        meterThread.join()
        for (q, _) in queues { q.stop(immediately: false) }
        let peaks = meters.withLock { $0 }
        #expect(peaks.count == 2 && peaks[0] > 0.4 && peaks[1] > 0.25, "highest level meter peaks while playing: \(peaks)")
        for (q, log) in queues {
            #expect(!q.isRunning)
            let d = log.deliveries.withLock { $0 }
            #expect(d.count > 5, "\(q.streamDescription.formatID): \(d.count) buffers")
            #expect(d.first?.time.sampleTime == 0)
            var total = 0
            for i in d.indices {
                #expect(d[i].time.sampleTime == Double(total), "buffer \(i) starts at \(d[i].time.sampleTime), expected \(total)")
                total += d[i].frames
                if i > 0 {
                    let hostDelta = HostTime.seconds(ticks: d[i].time.hostTime &- d[i - 1].time.hostTime)
                    let sampleDelta = Double(d[i - 1].frames) / 48000
                    #expect(abs(hostDelta - sampleDelta) < 0.05, "host time moved \(hostDelta) s for \(sampleDelta) s of frames")
                }
                if q.streamDescription.formatID == .mpeg4AAC {
                    #expect(d[i].descriptions == d[i].packets && d[i].frames == d[i].packets * 1024)
                } else {
                    #expect(d[i].descriptions == 0 && d[i].bytes == d[i].frames * 4)
                }
            }
            #expect(Int64(total) == q.deliveredFrames)
            #expect(q.droppedFrames == 0)
            if q.streamDescription.formatID == .mpeg4AAC {
                let info = try #require(q.packetTableInfo)
                #expect(info.primingFrames == 1024 && Int64(total) == Int64(info.primingFrames) + info.numberValidFrames + Int64(info.remainderFrames))
            }
        }
    }
}

extension PlaybackRecordingTests {
    /// Pause stops capture (the sample time stays contiguous across it while the host time jumps),
    /// start resumes, reset restarts the time line at 0, dispose ends it all.
    @Test func inputQueuePauseResumeReset() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let source = daemon.monitorSource, server = daemon.server
        let factory: AudioInputDeviceFactory = { f throws(AudioError) in
            try AudioInput.open(.pulse(source: source), format: f, options: AudioInput.Options(pulseServer: server)).device
        }
        let log = Locked<[(time: AudioTimeStamp, frames: Int)]>([])
        var format = try #require(AudioFileConversion.dataFormat(named: "LEI16@48000"))
        format.channelsPerFrame = 2
        let queue = try AudioInputQueue(format: format, input: factory) { q, d in
            log.withLock { $0.append((d.startTime, d.frameCount)) }
            try? q.enqueue(d.buffer)
        }
        for _ in 0..<4 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 4800 * 4)) }
        try queue.start()
        sleep(seconds: 0.5)
        try queue.pause()
        #expect(queue.isRunning)
        sleep(seconds: 0.2) // let what was captured before the pause come through
        let atPause = log.withLock { $0.count }
        sleep(seconds: 0.5)
        #expect(log.withLock { $0.count } == atPause, "buffers delivered while paused")
        try queue.start()
        sleep(seconds: 0.5)
        queue.reset()
        sleep(seconds: 0.4)
        queue.stop(immediately: false)
        #expect(!queue.isRunning)
        let d = log.withLock { $0 }
        guard let restart = d.indices.dropFirst().first(where: { d[$0].time.sampleTime == 0 }) else {
            Issue.record("no buffer restarted at sample time 0 after reset: \(d.map(\.time.sampleTime))")
            return
        }
        var total = 0
        var longestHostGap = 0.0
        for i in 0..<restart {
            #expect(d[i].time.sampleTime == Double(total))
            total += d[i].frames
            if i > 0 { longestHostGap = max(longestHostGap, HostTime.seconds(ticks: d[i].time.hostTime &- d[i - 1].time.hostTime)) }
        }
        let captured = Double(total) / 48000
        #expect(captured > 0.7 && captured < 1.25, "\(captured) s delivered before the reset (about 1 s recorded, 0.5 s paused)")
        #expect(longestHostGap > 0.4, "the pause does not show in the host times (longest step \(longestHostGap) s)")
        queue.dispose(immediately: true)
        #expect(throws: AudioError.self) { _ = try queue.allocateBuffer(byteCapacity: 16) }
    }
}

extension PlaybackRecordingTests {
    /// ALSA capture in real time: the `pulse` ALSA plugin pointed at the private daemon's monitor,
    /// read by ``ALSAInputDevice`` under an input queue, holds the played signal bit-exactly.
    @Test(.requires(TestResource.first(TestResource.pulseAudioMissing, TestResource.alsaPulsePluginMissing))) func alsaCaptureThroughThePulsePlugin() throws {
        let daemon = try PulseTestDaemon(sampleRate: 48000, channels: 2)
        defer { daemon.stop() }
        let config = "pcm.oatpulsein { type pulse server \"\(daemon.server)\" device \"\(daemon.monitorSource)\" }\n"
        let format = AudioDeviceFormat(sampleRate: 48000, channels: 2)
        let probe = try ALSAInputDevice(device: "oatpulsein", format: format, configText: config)
        probe.close()
        let samples = Locked<[Float]>([])
        var pcm = try #require(AudioFileConversion.dataFormat(named: "LEI16@48000"))
        pcm.channelsPerFrame = 2
        let queue = try AudioInputQueue(format: pcm, input: { f throws(AudioError) in
            try ALSAInputDevice(device: "oatpulsein", format: f, configText: config)
        }) { q, d in
            let b = d.buffer
            let ints = UnsafeRawBufferPointer(start: b.audioData.baseAddress, count: b.audioDataByteSize).bindMemory(to: Int16.self)
            samples.withLock { s in for x in ints { s.append(Float(x) / 32768) } }
            try? q.enqueue(b)
        }
        for _ in 0..<4 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 4800 * 4)) }
        try queue.start()
        #expect(queue.currentDevice == "alsa:oatpulsein")
        sleep(seconds: 0.3)
        let reference = recordingReference(rate: 48000, seconds: 1.5)
        try playIntoSink(reference, daemon: daemon)
        sleep(seconds: 0.2)
        queue.stop(immediately: false)
        let recorded = samples.withLock { $0 }
        let alignment = alignSegments(recording: recorded, reference: reference, channels: 2, tolerance: 0.5 / 32768)
        #expect(isCompleteInOrder(alignment, referenceFrames: reference.count / 2), "ALSA capture: \(alignment)")
        #expect(queue.droppedFrames == 0)
    }
}

extension PlaybackRecordingTests {
    /// An input queue calls its IsRunning listener and its buffer callbacks with no lock of the
    /// queue held: the listener, told of the stop, waits for a thread that calls the queue's
    /// transport (pause), and the callback of the stop's last delivery waits for one that
    /// starts and stops another queue. Neither deadlocks (each wait gives up after 2 s, and the
    /// test sees it).
    @Test func inputQueueCallbacksMayWaitForThreadsThatCallTheTransport() throws {
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let factory: AudioInputDeviceFactory = { f throws(AudioError) in
            try AudioInput.open(.pulse(source: daemon.monitorSource), format: f, options: AudioInput.Options(pulseServer: daemon.server)).device
        }
        let format = AudioStreamBasicDescription.linearPCM(sampleRate: 44100, channels: 2, bitsPerChannel: 16, isFloat: false)
        let other = try AudioInputQueue(format: format, input: factory) { q, d in try? q.enqueue(d.buffer) }
        defer { other.dispose(immediately: true) }
        let results = Locked<[String]>([])
        let stopping = Atomic<Bool>(false)
        @Sendable func onAnotherThread(_ body: @escaping @Sendable () -> Void) -> Bool {
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async { body(); done.signal() }
            return done.wait(timeout: .now() + .seconds(2)) == .success
        }
        let queue = try AudioInputQueue(format: format, input: factory) { q, d in
            if stopping.load(ordering: .acquiring) {
                let ok = onAnotherThread { _ = try? other.start(); other.stop(immediately: true) }
                results.withLock { $0.append("callback \(ok)") }
            }
            try? q.enqueue(d.buffer)
        }
        defer { queue.dispose(immediately: true) }
        queue.addPropertyListener { q, p in
            guard p == .isRunning, !q.isRunning else { return }
            let ok = onAnotherThread { _ = try? q.pause() }
            results.withLock { $0.append("listener \(ok)") }
        }
        for _ in 0..<3 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 44100 * 4)) }
        try queue.start()
        usleep(700_000)
        stopping.store(true, ordering: .releasing)
        queue.stop(immediately: true)
        let got = results.withLock { $0 }
        print("input queue callbacks during the stop: \(got)")
        #expect(got.contains("listener true"), "\(got)")
        #expect(got.contains { $0.hasPrefix("callback") }, "no buffer was delivered during the stop: \(got)")
        #expect(!got.contains { $0.hasSuffix("false") }, "a callback waiting for a thread that calls a queue's transport deadlocked: \(got)")
    }
}
