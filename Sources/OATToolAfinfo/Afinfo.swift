// afinfo: prints what is in an audio file, like macOS afinfo. The tool's code, run by the thin
// afinfo executable (Sources/afinfo) and by the multi-call binary oat-tools (Sources/oat-tools).
import AudioToolboxKit
#if canImport(Glibc)
import Glibc
#endif

func writeError(_ text: String) { writeStandardError(text) }

let usage = """
usage: afinfo [--json] [--decode] [--hint TYPE] FILE...
  Prints the file type, data format, channel layout, duration, packet counts, bit rate,
  packet sizes, data offset, priming/remainder frames and tags of each audio file.
  FILE may be a named pipe or - (standard input): it is read as a stream.
  -j, --json   print one JSON object per file
  --decode     also decode the audio and report decoded_frames (after trimming priming and
               remainder frames)
  --hint TYPE  container type for raw streams without a magic number (MPG3, adts, ...);
               an unknown TYPE is an error
  --version    print the version and exit
  -h, --help   this help
"""

/// Runs afinfo with `arguments` (the command line without the program name); exits with its status.
@MainActor package func runAfinfo(arguments: [String]) -> Never {
    var json = false
    var decode = false
    var hint: AudioFileType?
    var files: [String] = []
    var args = ArraySlice(arguments)
    while let arg = args.popFirst() {
        switch arg {
        case "--json", "-j": json = true
        case "--decode": decode = true
        case "--hint":
            guard let value = args.popFirst() else { writeError("afinfo: --hint needs a type"); exit(2) }
            guard let type = fileTypeHint(named: value) else {
                writeError("afinfo: --hint \(value): unknown file type (known: \(fileTypeHintNames))")
                exit(2)
            }
            hint = type
        case "-h", "--help": print(usage); exitTool(0, "afinfo")
        case "--version": print(OpenAudioToolboxVersion.line(tool: "afinfo"), terminator: ""); exitTool(0, "afinfo")
        default:
            if arg.hasPrefix("-") && arg != "-" { writeError("afinfo: unknown option \(arg)\n\(usage)"); exit(2) }
            files.append(arg)
        }
    }
    if files.isEmpty { writeError(usage); exit(2) }

    var failed = false
    for path in files {
        var input: ToolInput?
        do {
            let source = try ToolInput(path)
            input = source
            let file = try AudioFile(path: source.path, typeHint: hint)
            var summary = AudioFileSummary(file)
            if decode {
                // The file indexed above (opening it again would index it twice), decoded to
                // interleaved Float32 at its own rate and channel count: only frames are counted, so
                // nothing needs the samples split into planes (libmpg123 and most decoders deliver
                // them interleaved). A channel count beyond the format limits keeps the default
                // (planar) format, whose frame size cannot overflow, so the converter names the problem.
                let channels = file.dataFormat.channelsPerFrame
                let format: AudioStreamBasicDescription? = channels <= FormatLimits.maximumChannels
                    ? .linearPCM(sampleRate: file.dataFormat.sampleRate, channels: channels, bitsPerChannel: 32, isFloat: true) : nil
                let reader = try ExtendedAudioFile(file: file, clientFormat: format)
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
            if let w = file.warning { writeError("afinfo: warning: \(path): \(source.naming(w))") }
        } catch {
            writeError("afinfo: \(path): \(input?.naming(error) ?? error)")
            failed = true
        }
    }
    exitTool(failed ? 1 : 0, "afinfo")
}
