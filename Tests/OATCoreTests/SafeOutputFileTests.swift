@testable import OATCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The tools' one safe-output writer, in process (the tools are tested through their binaries
/// in AudioWritingTests.ToolFileSafetyTests).
@Suite struct SafeOutputFileTests {
    /// A private directory for one test.
    final class Directory {
        let path: String
        init() {
            var template = Array("/tmp/oat-safeout-XXXXXX".utf8CString)
            path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        }
        func file(_ name: String) -> String { path + "/" + name }
        func names() -> [String] {
            guard let d = opendir(path) else { return [] }
            defer { closedir(d) }
            var out: [String] = []
            while let e = readdir(d) {
                let n = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if n != "." && n != ".." { out.append(n) }
            }
            return out.sorted()
        }
        deinit { for n in names() { unlink(file(n)) }; rmdir(path) }
    }

    func write(_ path: String, _ text: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o640)
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        close(fd)
    }

    func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = Glibc.read(fd, &buffer, buffer.count)
        return String(decoding: buffer[0..<max(0, n)], as: UTF8.self)
    }

    func write(_ output: SafeOutputFile, _ text: String) {
        _ = text.withCString { Glibc.write(output.descriptor, $0, strlen($0)) }
    }

    @Test func anExistingFileIsReplacedOnlyByCommit() throws {
        let d = Directory()
        let path = d.file("out.wav")
        write(path, "old")
        chmod(path, 0o640)
        let out = try SafeOutputFile(path: path, mode: .replaceOnSuccess)
        #expect(out.kind == .temporary && out.existed)
        #expect(out.writingPath != path && out.writingPath.hasSuffix(".partial") && out.writingPath.hasPrefix(d.path + "/.out.wav."))
        write(out, "new")
        #expect(read(path) == "old")
        try out.commit()
        #expect(read(path) == "new")
        var st = stat()
        stat(path, &st)
        #expect(st.st_mode & 0o777 == 0o640, "mode \(String(st.st_mode & 0o777, radix: 8))")
        #expect(d.names() == ["out.wav"])
    }

    @Test func discardLeavesTheOldFileAndRemovesTheTemporary() throws {
        let d = Directory()
        let path = d.file("out.m4a")
        write(path, "old")
        let out = try SafeOutputFile(path: path, mode: .replaceOnSuccess)
        write(out, "half")
        out.discard()
        #expect(read(path) == "old")
        #expect(d.names() == ["out.m4a"])
        // A new path: nothing is left.
        let fresh = try SafeOutputFile(path: d.file("new.m4a"), mode: .replaceOnSuccess)
        write(fresh, "half")
        fresh.discard()
        #expect(d.names() == ["out.m4a"])
    }

    @Test func aRecordingOfANewPathIsWrittenInPlace() throws {
        let d = Directory()
        let path = d.file("take.caf")
        let out = try SafeOutputFile(path: path, mode: .recording)
        #expect(out.kind == .created && out.writingPath == path && !out.existed)
        write(out, "audio")
        #expect(read(path) == "audio")
        try out.commit()
        #expect(read(path) == "audio")
        // Dropped unfinished, a recording is kept (a converter's output is not).
        var kept: SafeOutputFile? = try SafeOutputFile(path: d.file("kept.caf"), mode: .recording)
        write(kept!, "x")
        kept = nil
        #expect(read(d.file("kept.caf")) == "x")
    }

    @Test func aSymbolicLinkKeepsPointingAtTheReplacedFile() throws {
        let d = Directory()
        let target = d.file("real.wav")
        write(target, "old")
        symlink(target, d.file("link.wav"))
        let out = try SafeOutputFile(path: d.file("link.wav"), mode: .replaceOnSuccess)
        write(out, "new")
        try out.commit()
        var st = stat()
        lstat(d.file("link.wav"), &st)
        #expect(st.st_mode & S_IFMT == S_IFLNK)
        #expect(read(target) == "new")
    }

    @Test func theInputIsRefusedAlsoThroughLinks() throws {
        let d = Directory()
        let input = d.file("a.wav")
        write(input, "input")
        symlink(input, d.file("sym.wav"))
        link(input, d.file("hard.wav"))
        for output in [input, d.file("sym.wav"), d.file("hard.wav")] {
            #expect(throws: AudioError.self) { try SafeOutputFile(path: output, mode: .replaceOnSuccess, inputs: [input]) }
            do {
                _ = try SafeOutputFile(path: output, mode: .replaceOnSuccess, inputs: [input])
            } catch {
                #expect(error.message.contains(output) && error.message.contains(input), "\(error)")
            }
        }
        #expect(read(input) == "input")
        #expect(d.names() == ["a.wav", "hard.wav", "sym.wav"])
    }

    @Test func devicesAreWrittenInPlaceAndOtherFilesRefused() throws {
        let d = Directory()
        let null = try SafeOutputFile(path: "/dev/null", mode: .replaceOnSuccess)
        #expect(null.kind == .device)
        null.discard()
        var st = stat()
        #expect(stat("/dev/null", &st) == 0 && st.st_mode & S_IFMT == S_IFCHR)
        let fifo = d.file("fifo")
        mkfifo(fifo, 0o600)
        #expect(throws: AudioError.self) { try SafeOutputFile(path: fifo, mode: .replaceOnSuccess) }
        #expect(throws: AudioError.self) { try SafeOutputFile(path: d.path, mode: .recording) }
        #expect(d.names() == ["fifo"])
    }

    @Test func terminalSafeEscapesControlsAndOverrides() {
        #expect(terminalSafe("plain tag é ✓") == "plain tag é ✓")
        #expect(terminalSafe("a\u{1B}[2Jb\u{07}\r\n\t\u{7F}\u{9B}\u{202E}") == "a\\x1B[2Jb\\x07\\r\\n\t\\x7F\\x9B\\u{202E}")
        #expect(terminalSafe("line one\nline two", keepNewlines: true) == "line one\nline two")
    }
}
