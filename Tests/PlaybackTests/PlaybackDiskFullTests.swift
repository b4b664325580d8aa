#if canImport(Glibc)
import Glibc
#endif
import OATTestSupport
import OpenAudioToolbox
import Testing

/// A small tmpfs mounted for the test (needs root: the tests say so with `.requires`, and fail in CI without it).
final class SmallFilesystem {
    let path: String
    private let scratch: ScratchDirectory

    /// Why a tmpfs cannot be mounted here (not root, no mount(8), or mounting refused), or nil;
    /// found once by mounting and unmounting a small one.
    static let unavailableReason: String? = {
        guard getuid() == 0, ChildProcess.which("mount") != nil else { return "mounting a tmpfs needs root and mount(8)" }
        do {
            guard let fs = try SmallFilesystem(kilobytes: 64) else { return "mount -t tmpfs is not permitted here" }
            fs.remove()
            return nil
        } catch {
            return "cannot prepare a tmpfs: \(error)"
        }
    }()

    init?(kilobytes: Int) throws {
        scratch = try ScratchDirectory("diskfull")
        path = scratch.path + "/mnt"
        mkdir(path, 0o755)
        guard getuid() == 0, let mount = ChildProcess.which("mount") else {
            scratch.remove()
            return nil
        }
        let p = try ChildProcess.spawn(mount, ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", path], outputPath: scratch.path + "/mount.log")
        while p.isRunning { usleep(2_000) }
        var fs = statvfs()
        guard statvfs(path, &fs) == 0, UInt64(fs.f_blocks) * UInt64(fs.f_frsize) <= UInt64(kilobytes) * 1024 else {
            scratch.remove()
            return nil
        }
    }

    func remove() {
        if let umount = ChildProcess.which("umount"), let p = try? ChildProcess.spawn(umount, [path], outputPath: scratch.path + "/umount.log") {
            while p.isRunning { usleep(2_000) }
        }
        scratch.remove()
    }
}

/// Disk full while recording or converting: a clear "No space left on device" error naming the
/// file and a non-zero exit; afrecord leaves the file readable (afinfo) holding what fit.
@Suite(.serialized) struct PlaybackDiskFullTests {
    /// afrecord records a PulseAudio monitor into a 512 KiB tmpfs (16-bit stereo 44.1 kHz fills
    /// it in about 3 s) as `type`: exit 1, the message names the file and the cause, and the
    /// file opens with afinfo and decodes to the frames that fit.
    /// (FLAC of the test signal takes about 30 KB/s: a 128 KiB tmpfs fills in about 4 s.)
    @Test(.requires(SmallFilesystem.unavailableReason), .requires(TestResource.pulseAudioMissing), arguments: [("WAVE", "wav", 512), ("caff", "caf", 512), ("AIFF", "aiff", 512), ("flac", "flac", 128)])
    func afrecordIntoAFullDisk(_ format: (type: String, ext: String, kilobytes: Int)) throws {
        let afrecord = try #require(builtProduct("afrecord"), "afrecord is not built (swift build)")
        let afinfo = try #require(builtProduct("afinfo"), "afinfo is not built (swift build)")
        let fs = try #require(try SmallFilesystem(kilobytes: format.kilobytes), "\(SmallFilesystem.unavailableReason ?? "the tmpfs did not mount")")
        defer { fs.remove() }
        let daemon = try PulseTestDaemon(sampleRate: 44100, channels: 2)
        defer { daemon.stop() }
        let path = fs.path + "/rec." + format.ext
        // FLAC of a monitor holding silence compresses to nothing: play a signal into the sink.
        let signal = recordingReference(rate: 44100, seconds: 10)
        let player = try format.type == "flac" ? JoinableThread(name: "test-player") { try? playIntoSink(signal, daemon: daemon) } : nil
        defer { player?.join() }
        let p = try ToolProcess(afrecord, ["-f", format.type, "-t", "12", "--no-meter", "--input", "pulse:\(daemon.monitorSource)", path],
                                environment: daemon.environment, outputPath: fs.path + "/../afrecord.log")
        let code = p.wait(timeout: 25)
        if code == nil { p.stop() }
        let message = p.output
        print("afrecord \(format.type) into a full disk: exit \(String(describing: code)): \(message)")
        #expect(code == 1, "exit \(String(describing: code)): \(message)")
        #expect(message.contains("No space left on device"), "\(message)")
        #expect(message.contains(path), "\(message)")
        let info = try ToolProcess(afinfo, [path], outputPath: fs.path + "/../afinfo.log")
        let infoCode = info.wait(timeout: 10)
        #expect(infoCode == 0, "afinfo: \(info.output)")
        let decoded = try decodeWithToolbox(path)
        let frames = decoded.samples.count / decoded.channels
        var st = stat()
        stat(path, &st)
        print("  file \(st.st_size) bytes, \(frames) frames readable (\(Double(frames) / 44100) s)")
        #expect(frames > 44100, "only \(frames) frames readable")
        if format.type != "flac" {
            // PCM: everything that fit, less at most the last half-second checkpoint.
            #expect(Int(st.st_size) - frames * 4 < 44100 * 4 / 2 + 8192, "\(st.st_size) bytes hold only \(frames) readable frames")
        }
    }

    /// afconvert into a full disk: exit 1 with the cause and the file named; the partial output
    /// is removed (a converter leaves no half file behind).
    @Test(.requires(SmallFilesystem.unavailableReason)) func afconvertIntoAFullDisk() throws {
        let afconvert = try #require(builtProduct("afconvert"), "afconvert is not built (swift build)")
        let fs = try #require(try SmallFilesystem(kilobytes: 512), "\(SmallFilesystem.unavailableReason ?? "the tmpfs did not mount")")
        defer { fs.remove() }
        let source = fs.path + "/../source.wav"
        try #require(makeFixture(source, rate: 44100, channels: 2, seconds: 10, codec: ["-c:a", "pcm_s16le"]))
        let out = fs.path + "/out.wav"
        let p = try ToolProcess(afconvert, ["-f", "WAVE", "-d", "LEI16", source, out], outputPath: fs.path + "/../afconvert.log")
        let code = p.wait(timeout: 20)
        if code == nil { p.stop() }
        print("afconvert into a full disk: exit \(String(describing: code)): \(p.output)")
        #expect(code == 1)
        #expect(p.output.contains("No space left on device") && p.output.contains(out), "\(p.output)")
        #expect(access(out, F_OK) != 0, "the partial output was left behind")
    }
}
