// afconvert: converts audio files between formats, like macOS afconvert. The tool's code, run by
// the thin afconvert executable (Sources/afconvert) and by the multi-call binary oat-tools.
import AudioToolboxKit
#if canImport(Glibc)
import Glibc
#endif

func writeError(_ text: String) { writeStandardError(text) }

let usage = """
usage: afconvert [options] INPUT [OUTPUT]
  INPUT may be a named pipe or - (standard input): it is read as a stream. OUTPUT is written
  to a temporary file beside it and renamed into place only when the conversion succeeds; an
  OUTPUT that is the INPUT is refused, and Ctrl-C leaves no half file.
  -f, --file TYPE       file format: WAVE, RF64, AIFF, AIFC, caff, m4af, flac, Ogg (opus), adts, MPG3
                        (default: from OUTPUT's extension)
  -d, --data FORMAT[@RATE]
                        data format: LEI16 BEI16 LEI24 BEI24 LEI32 BEI32 LEF32 BEF32 LEF64 BEF64
                        UI8 I8 ulaw alaw aac alac flac opus .mp3, optionally @RATE (e.g. aac@44100)
  -c, --channels N      output channel count
  -b, --bitrate BPS     bit rate in bits per second (aac, opus, .mp3)
  -q, --quality Q       codec quality 0...127
  -r, --src-quality Q   sample-rate converter quality 0...127
  -s, --strategy S      bit-rate strategy: 0 CBR, 1 ABR, 2 constrained VBR, 3 VBR
  --decode              write linear PCM (LEI16/LEI24 in WAVE unless -f/-d say otherwise)
  --no-progress         no progress bar
  -v, --verbose         print what was written
  --version             print the version and exit
  -h, --help            this help
"""

func fail(_ message: String, code: Int32 = 2) -> Never {
    writeError("afconvert: \(message)")
    if code == 2 { writeError(usage) }
    exit(code)
}

/// A progress bar on stderr.
final class ProgressBar {
    var lastDrawn = -1
    func draw(_ fraction: Double) {
        let width = 40
        let filled = Int(fraction * Double(width))
        let percent = Int(fraction * 100)
        guard percent != lastDrawn else { return }
        lastDrawn = percent
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let text = "\r[\(bar)] \(percent)%"
        _ = text.withCString { write(2, $0, strlen($0)) }
    }
}

/// Runs afconvert with `arguments` (the command line without the program name); exits with its status.
@MainActor package func runAfconvert(arguments: [String]) -> Never {
    var settings = AudioFileConversionSettings()
    var positional: [String] = []
    var decodeOnly = false
    var showProgress = isatty(2) != 0
    var verbose = false
    var args = ToolArguments(ArraySlice(arguments), fail: { fail($0) })
    func value(_ flag: String) -> String { args.value(flag) }
    func integer(_ flag: String, _ range: ClosedRange<Int>) -> Int { args.integer(flag, range) }
    while let arg = args.next() {
        switch arg {
        case "-f", "--file":
            settings.fileType = args.fileType(arg)
        case "-d", "--data":
            let v = value(arg)
            guard let f = AudioFileConversion.dataFormat(named: v) else { fail("unknown data format '\(v)'") }
            if f.formatID == .mpeg4AAC_HE || f.formatID == .mpeg4AAC_HE_V2 {
                fail("HE-AAC ('\(f.formatID)') needs libfdk_aac, which this libavcodec does not have", code: 1)
            }
            settings.dataFormat = f
        case "-c", "--channels": settings.channels = UInt32(integer(arg, 1...8))
        case "-b", "--bitrate": settings.encoder.bitRate = integer(arg, 6000...1_536_000)
        case "-q", "--quality": settings.encoder.quality = integer(arg, 0...127)
        case "-r", "--src-quality":
            let q = integer(arg, 0...127)
            settings.sampleRateConverterQuality = SampleRateConverterQuality.allCases.last { Int($0.rawValue) <= q } ?? .min
        case "-s", "--strategy":
            let s = integer(arg, 0...3)
            settings.encoder.strategy = [.constant, .longTermAverage, .variableConstrained, .variable][s]
        case "--decode": decodeOnly = true
        case "--no-progress": showProgress = false
        case "-v", "--verbose": verbose = true
        case "-h", "--help": print(usage); exitTool(0, "afconvert")
        case "--version": print(OpenAudioToolboxVersion.line(tool: "afconvert"), terminator: ""); exitTool(0, "afconvert")
        default:
            if arg.hasPrefix("-") && arg.count > 1 { fail("unknown option \(arg)") }
            positional.append(arg)
        }
    }
    guard positional.count == 1 || positional.count == 2 else { fail(positional.isEmpty ? "no input file" : "too many file arguments") }
    let input = positional[0]
    let source: ToolInput
    do {
        source = try ToolInput(input)
    } catch {
        fail("\(input): \(error)", code: 1)
    }
    if decodeOnly {
        if settings.fileType == nil && positional.count == 1 { settings.fileType = .wave }
        if let f = settings.dataFormat, !f.isPCM { fail("--decode writes linear PCM; -d \(f.formatID) is not PCM") }
    }
    var output: String
    if positional.count == 2 {
        output = positional[1]
    } else {
        let type = settings.fileType ?? .caf
        settings.fileType = type
        var base = input
        if let dot = base.lastIndex(of: "."), !base[dot...].contains("/") { base = String(base[..<dot]) }
        output = base + "." + AudioFileConversion.fileExtension(for: type)
        if output == input { output = base + "-converted." + AudioFileConversion.fileExtension(for: type) }
    }
    if decodeOnly && settings.dataFormat == nil {
        let type = settings.fileType ?? AudioFileConversion.fileType(forExtension: output) ?? .wave
        settings.fileType = type
        let pcmName = type == .aiff || type == .aifc ? "BEI16" : "LEI16"
        if ![AudioFileType.wave, .rf64, .aiff, .aifc, .caf].contains(type) { fail("--decode writes PCM, which \(type.displayName) files cannot hold", code: 1) }
        var bits = "16"
        if let file = try? AudioFile(path: source.path) {
            let f = file.dataFormat
            if (f.isPCM && f.bitsPerChannel > 16 && !f.isFloat) || (!f.isPCM && [3, 4].contains(f.formatFlags.rawValue) && [.flac, .appleLossless].contains(f.formatID)) { bits = "24" }
            if f.isPCM && f.isFloat { bits = "F32" }
        }
        settings.dataFormat = AudioFileConversion.dataFormat(named: String(pcmName.dropLast(bits == "F32" ? 3 : 2)) + (bits == "F32" ? "F32" : bits))
    }

    let bar = ProgressBar()
    let progress: ((Double) -> Void)? = showProgress ? { bar.draw($0) } : nil

    // Ctrl-C, SIGTERM, SIGHUP: the unfinished temporary is removed; an existing OUTPUT stays as it was.
    do {
        var st = stat()
        let existed = stat(output, &st) == 0
        let what = existed ? "\(output) was left as it was" : "\(output) was not written"
        SafeOutputFile.removeUnfinishedOutputsOnSignals(message: (showProgress ? "\n" : "") + "afconvert: interrupted; \(terminalSafe(what)) (the unfinished output was removed)")
    }

    do {
        let result = try AudioFileConversion.convert(input: input, output: output, settings: settings, inputPath: source.path,
                                                     progress: progress)
        if showProgress { writeError("") }
        if verbose {
            print("\(output): \(result.fileType.displayName), \(result.dataFormat), \(result.validFrames) valid frames, \(result.packetCount) packets, priming \(result.packetTableInfo.primingFrames), remainder \(result.packetTableInfo.remainderFrames)")
        }
    } catch {
        if showProgress { writeError("") }
        fail("\(error)", code: 1)
    }
    exitTool(0, "afconvert")
}
