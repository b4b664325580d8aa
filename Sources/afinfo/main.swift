// afinfo: prints what is in an audio file, like macOS afinfo.
import AudioToolboxKit
#if canImport(Glibc)
import Glibc
#endif

func writeError(_ text: String) { writeStandardError(text) }

let usage = """
usage: afinfo [--json] [--decode] [--hint TYPE] FILE...
  Prints the file type, data format, channel layout, duration, packet counts, bit rate,
  packet sizes, data offset, priming/remainder frames and tags of each audio file.
  -j, --json   print one JSON object per file
  --decode     also decode the audio and report decoded_frames (after trimming priming and
               remainder frames)
  --hint TYPE  container type for raw streams without a magic number (MPG3, adts, ...)
  --version    print the version and exit
  -h, --help   this help
"""

var json = false
var decode = false
var hint: AudioFileType?
var files: [String] = []
var args = CommandLine.arguments.dropFirst()
while let arg = args.popFirst() {
    switch arg {
    case "--json", "-j": json = true
    case "--decode": decode = true
    case "--hint":
        guard let value = args.popFirst() else { writeError("afinfo: --hint needs a type"); exit(2) }
        hint = AudioFileType(value)
    case "-h", "--help": print(usage); exit(0)
    case "--version": print(OpenAudioToolboxVersion.line(tool: "afinfo"), terminator: ""); exit(0)
    default:
        if arg.hasPrefix("-") && arg != "-" { writeError("afinfo: unknown option \(arg)\n\(usage)"); exit(2) }
        files.append(arg)
    }
}
if files.isEmpty { writeError(usage); exit(2) }

var failed = false
for path in files {
    do {
        let file = try AudioFile(path: path, typeHint: hint)
        var summary = AudioFileSummary(file)
        if decode {
            let reader = try ExtendedAudioFile(path: path)
            let buffer = try AudioPCMBuffer(format: reader.clientFormat, frameCapacity: 16384)
            var frames: Int64 = 0
            while true {
                let n = try reader.read(into: buffer)
                if n == 0 { break }
                frames += Int64(n)
            }
            summary.decodedFrames = frames
        }
        if json { print(summary.json) } else { print(summary.text(fileName: path), terminator: "") }
        if let w = file.warning { writeError("afinfo: warning: \(path): \(w)") }
    } catch {
        writeError("afinfo: \(path): \(error)")
        failed = true
    }
}
exit(failed ? 1 : 0)
