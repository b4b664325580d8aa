import OATConversion
import OATCore
import OATFiles
#if canImport(Glibc)
import Glibc
#endif

/// What to write: the settings of one `afconvert` run.
public struct AudioFileConversionSettings: Sendable {
    /// Container of the output; nil = from the output's extension.
    public var fileType: AudioFileType?
    /// Data format of the output (rate 0 = keep the source's, channels 0 = keep); nil = the
    /// container's usual format.
    public var dataFormat: AudioStreamBasicDescription?
    /// Output channel count (0 = as the source or ``dataFormat``).
    public var channels: UInt32 = 0
    /// Encoder settings (bit rate, quality, strategy).
    public var encoder = AudioEncoderSettings()
    /// Sample-rate converter quality.
    public var sampleRateConverterQuality: SampleRateConverterQuality = .medium
    /// Writer options (tags are copied from the source unless set here).
    public var writerOptions = AudioFileWriterOptions()
    /// Creates default settings.
    public init() {}
}

/// What a conversion produced.
public struct AudioFileConversionResult: Sendable {
    /// Container written.
    public var fileType: AudioFileType
    /// Format of the packets written.
    public var dataFormat: AudioStreamBasicDescription
    /// Valid frames written (at the output rate).
    public var validFrames: Int64
    /// Packets written.
    public var packetCount: Int64
    /// Priming, remainder and valid frames stated in the file.
    public var packetTableInfo: AudioFilePacketTableInfo
}

/// Converts audio files: reads any readable file through ``ExtendedAudioFile``, encodes with
/// `AudioEncoder` and writes with `AudioFileWriter` (what `afconvert` does).
public enum AudioFileConversion {
    /// The container for a file name's extension.
    public static func fileType(forExtension path: String) -> AudioFileType? {
        let ext = path.split(separator: ".").last.map { $0.lowercased() } ?? ""
        switch ext {
        case "wav", "wave": return .wave
        case "aif", "aiff": return .aiff
        case "aifc": return .aifc
        case "caf": return .caf
        case "m4a", "mp4", "m4b": return .m4a
        case "flac": return .flac
        case "ogg", "opus", "oga": return .ogg
        case "aac", "adts": return .aacADTS
        case "mp3": return .mp3
        default: return nil
        }
    }

    /// The usual file extension of a container.
    public static func fileExtension(for type: AudioFileType) -> String {
        switch type {
        case .wave, .rf64: "wav"
        case .aiff: "aiff"
        case .aifc: "aifc"
        case .caf: "caf"
        case .m4a, .mpeg4: "m4a"
        case .flac: "flac"
        case .ogg: "opus"
        case .aacADTS: "aac"
        default: "mp3"
        }
    }

    /// The container type named by an afconvert `-f` value (`WAVE`, `AIFF`, `AIFC`, `caff`,
    /// `m4af`, `flac`, `Ogg`/`opus`/`OggS`, `adts`, `MPG3`).
    public static func fileType(named name: String) -> AudioFileType? {
        switch name.lowercased() {
        case "wave", "wav": .wave
        case "rf64": .rf64
        case "aiff": .aiff
        case "aifc": .aifc
        case "caff", "caf": .caf
        case "m4af", "m4a", "mp4f": .m4a
        case "flac": .flac
        case "ogg", "oggs", "opus": .ogg
        case "adts", "aac": .aacADTS
        case "mpg3", "mp3": .mp3
        default: nil
        }
    }

    /// Parses an afconvert `-d` value: `LEI16`, `BEI24`, `LEF32`, `UI8`, `ulaw`, `alaw`, `aac`,
    /// `alac`, `flac`, `opus`, `.mp3`, each optionally followed by `@rate`. Rate 0 and channels
    /// 0 mean "as the source".
    public static func dataFormat(named spec: String) -> AudioStreamBasicDescription? {
        let parts = spec.split(separator: "@", maxSplits: 1).map(String.init)
        guard let name = parts.first else { return nil }
        var rate = 0.0
        if parts.count == 2 {
            guard let r = Double(parts[1]), r > 0, r <= 768_000 else { return nil }
            rate = r
        }
        let lower = name.lowercased()
        switch lower {
        case "aac", "aac ": return .compressed(.mpeg4AAC, sampleRate: rate, channels: 0, framesPerPacket: 1024)
        case "aach", "aacp": return .compressed(OATCore.AudioFormatCode(name), sampleRate: rate, channels: 0, framesPerPacket: 2048)
        case "alac": return .compressed(.appleLossless, sampleRate: rate, channels: 0, framesPerPacket: 4096)
        case "flac": return .compressed(.flac, sampleRate: rate, channels: 0, framesPerPacket: 0)
        case "opus": return .compressed(.opus, sampleRate: rate, channels: 0, framesPerPacket: 960)
        case ".mp3", "mp3", "mpg3": return .compressed(.mpegLayer3, sampleRate: rate, channels: 0, framesPerPacket: 1152)
        case "ulaw": return .compressed(.ulaw, sampleRate: rate, channels: 0, framesPerPacket: 1)
        case "alaw": return .compressed(.alaw, sampleRate: rate, channels: 0, framesPerPacket: 1)
        default: break
        }
        // PCM: [LE|BE][I|F|UI]bits, or UI8/I8.
        var rest = Substring(name.uppercased())
        var bigEndian = false
        if rest.hasPrefix("LE") { rest = rest.dropFirst(2) } else if rest.hasPrefix("BE") { bigEndian = true; rest = rest.dropFirst(2) }
        var isFloat = false, signed = true
        if rest.hasPrefix("UI") { signed = false; rest = rest.dropFirst(2) }
        else if rest.hasPrefix("I") { rest = rest.dropFirst() }
        else if rest.hasPrefix("F") { isFloat = true; rest = rest.dropFirst() }
        else { return nil }
        guard let bits = UInt32(rest) else { return nil }
        if isFloat { guard bits == 32 || bits == 64 else { return nil } }
        else { guard [8, 16, 24, 32].contains(bits) else { return nil } }
        if !signed && bits != 8 { return nil }
        // Placeholder channel count 1; the real one is filled in at conversion.
        var f = AudioStreamBasicDescription.linearPCM(sampleRate: rate, channels: 1, bitsPerChannel: bits, isFloat: isFloat,
                                                      isBigEndian: bigEndian, isSigned: signed)
        f.channelsPerFrame = 0
        f.bytesPerFrame = 0
        f.bytesPerPacket = 0
        return f
    }

    /// The data format a container holds when none is asked for.
    public static func defaultFormat(for type: AudioFileType, sourceBits: UInt32, sourceFloat: Bool) -> AudioStreamBasicDescription {
        let bits: UInt32 = sourceFloat ? 32 : sourceBits > 16 ? 24 : 16
        func pcm(_ be: Bool, float: Bool = false) -> AudioStreamBasicDescription {
            var f = AudioStreamBasicDescription.linearPCM(sampleRate: 0, channels: 1, bitsPerChannel: float ? 32 : bits, isFloat: float, isBigEndian: be)
            f.channelsPerFrame = 0; f.bytesPerFrame = 0; f.bytesPerPacket = 0
            return f
        }
        switch type {
        case .wave, .rf64: return pcm(false, float: sourceFloat)
        case .aiff: return pcm(true)
        case .aifc: return pcm(true, float: sourceFloat)
        case .caf: return pcm(false, float: sourceFloat)
        case .m4a, .mpeg4, .aacADTS: return dataFormat(named: "aac")!
        case .flac: return dataFormat(named: "flac")!
        case .ogg: return dataFormat(named: "opus")!
        default: return dataFormat(named: ".mp3")!
        }
    }

    /// Converts `input` to `output`. `progress` gets the fraction done (0...1) now and then.
    ///
    /// The output is written through a `SafeOutputFile` (`SafeOutputFile/Mode/replaceOnSuccess`):
    /// an output that is the input (also through a link) is refused before anything is opened
    /// for writing; the audio goes to a temporary file beside `output`, renamed over it only
    /// when the conversion succeeded. On failure the temporary is removed, an existing file at
    /// `output` is left as it was, and the error says so. `inputPath`, when given, is the file
    /// actually read (a spooled copy of a FIFO); `input` is still the name errors give.
    @discardableResult
    public static func convert(input: String, output: String, settings: AudioFileConversionSettings,
                               inputPath: String? = nil,
                               progress: ((Double) -> Void)? = nil) throws(AudioError) -> AudioFileConversionResult {
        try SafeOutputFile.refuseInputs(output: output, inputs: [inputPath ?? input])
        let readPath = inputPath ?? input
        guard let type = settings.fileType ?? fileType(forExtension: output) else {
            throw AudioError(.invalidArgument, component: "afconvert", "cannot tell the file format of \(output) from its name: give -f")
        }
        let source: AudioFile
        do {
            source = try AudioFile(path: readPath)
        } catch {
            throw naming(input, renaming(readPath, to: input, error))
        }
        let sf = source.dataFormat
        do throws(AudioError) {
            try sf.checkPlausible(component: "AudioFile")
        } catch {
            throw naming(input, error)
        }
        var sourceBits = sf.bitsPerChannel
        if !sf.isPCM && (sf.formatID == .appleLossless || sf.formatID == .flac) {
            switch sf.formatFlags.rawValue {
            case 2, 3, 4: sourceBits = 24
            default: sourceBits = 16
            }
        }
        if !sf.isPCM && sf.formatID != .appleLossless && sf.formatID != .flac { sourceBits = 16 }
        var target = settings.dataFormat ?? defaultFormat(for: type, sourceBits: sourceBits, sourceFloat: sf.isPCM && sf.isFloat)
        let channels = settings.channels > 0 ? settings.channels : sf.channelsPerFrame
        var rate = target.sampleRate > 0 ? target.sampleRate : sf.sampleRate
        if target.sampleRate == 0 {
            switch target.formatID {
            case .opus where ![8000.0, 12000, 16000, 24000, 48000].contains(rate): rate = 48000
            case .mpegLayer3 where rate > 48000: rate = 48000
            case .mpeg4AAC where rate > 96000: rate = 48000
            default: break
            }
        }
        target.sampleRate = rate
        target.channelsPerFrame = channels
        if target.isPCM {
            let bytes = (target.bitsPerChannel + 7) / 8
            target.bytesPerFrame = bytes * channels
            target.bytesPerPacket = target.bytesPerFrame
        }
        do throws(AudioError) {
            // Channels and rate come from the source (checked when it was opened) or the
            // command line: refuse what no buffer should be sized from.
            try target.checkPlausible(component: "afconvert", code: .invalidArgument)
        } catch {
            var e = naming(output, error)
            e.message += " (nothing was written)"
            throw e
        }
        let encoder: AudioEncoder
        do {
            encoder = try AudioEncoder(to: target, sourceBitDepth: Int(sourceBits), settings: settings.encoder)
            // Check the container before creating anything.
            try AudioFileWriter.check(encoder.outputFormat, in: type)
        } catch {
            var e = naming(output, error)
            e.message += " (nothing was written)"
            throw e
        }
        let reader: ExtendedAudioFile
        do {
            reader = try ExtendedAudioFile(path: readPath, clientFormat: encoder.inputFormat)
        } catch {
            throw naming(input, renaming(readPath, to: input, error))
        }
        reader.sampleRateConverterQuality = settings.sampleRateConverterQuality
        var options = settings.writerOptions
        if options.tags.isEmpty {
            for key in [InfoKey.title, InfoKey.artist, InfoKey.album, InfoKey.year, InfoKey.genre, InfoKey.comments, InfoKey.trackNumber, InfoKey.composer] {
                if let v = source.infoDictionary[key] { options.tags[key] = v }
            }
        }
        let destination = try SafeOutputFile(path: output, mode: .replaceOnSuccess, inputs: [readPath])
        let writer: AudioFileWriter
        do {
            writer = try AudioFileWriter(output: destination, fileType: type, dataFormat: encoder.outputFormat,
                                         magicCookie: encoder.magicCookie, options: options)
        } catch {
            var e = error
            e.message += destination.kind == .device ? " (\(output) is a device, written in place)"
                : destination.existed ? " (\(output) was left as it was)" : " (nothing was written)"
            throw e
        }
        do {
            let p = encoder.primeInfo.leadingFrames
            if p > 0 { writer.packetTableInfo = AudioFilePacketTableInfo(numberValidFrames: 0, primingFrames: Int32(p), remainderFrames: 0) }
            let buffer = try AudioPCMBuffer(format: encoder.inputFormat, frameCapacity: 4096)
            let expected = Double(max(1, source.validFrames)) * rate / sf.sampleRate
            var done: Int64 = 0
            var lastReport = -1.0
            while true {
                let n = try reader.read(into: buffer)
                if n == 0 { break }
                done += Int64(n)
                try writer.writePackets(try encoder.encode(buffer))
                let fraction = min(1, Double(done) / expected)
                if let progress, fraction - lastReport >= 0.01 { progress(fraction); lastReport = fraction }
            }
            try writer.writePackets(try encoder.finish())
            if let cookie = encoder.magicCookie, encoder.outputFormat.formatID == .flac { writer.magicCookie = cookie }
            let info = encoder.packetTableInfo
            if !encoder.outputFormat.isPCM && encoder.outputFormat.formatID != .ulaw && encoder.outputFormat.formatID != .alaw {
                writer.packetTableInfo = info
            }
            try writer.close()
            progress?(1)
            return AudioFileConversionResult(fileType: type, dataFormat: encoder.outputFormat, validFrames: info.numberValidFrames,
                                             packetCount: writer.packetCount, packetTableInfo: info)
        } catch {
            writer.discard()
            var e = renaming(readPath, to: input, error)
            if destination.kind == .device {
                e.message += " (\(output) holds what was written before the error)"
            } else if destination.existed {
                e.message += " (\(output) was left as it was; the unfinished output was removed)"
            } else {
                e.message += " (the partial output \(output) was removed)"
            }
            throw e
        }
    }

    /// `error` with `path` (a spooled copy) replaced by `name` (what the user gave).
    package static func renaming(_ path: String, to name: String, _ error: AudioError) -> AudioError {
        guard path != name else { return error }
        var e = error
        e.message = replacing(path, with: name, in: e.message)
        return e
    }

    /// `text` with every `old` replaced by `new` (no Foundation here).
    package static func replacing(_ old: String, with new: String, in text: String) -> String {
        guard !old.isEmpty else { return text }
        var out = ""
        var rest = Substring(text)
        while let r = rest.firstRange(of: old) {
            out += rest[..<r.lowerBound] + new
            rest = rest[r.upperBound...]
        }
        return out + rest
    }

    /// `error` with its message starting with `path` unless it names it already: the tools'
    /// one-line errors say which file they are about.
    package static func naming(_ path: String, _ error: AudioError) -> AudioError {
        guard !error.message.contains(path) else { return error }
        var e = error
        e.message = "\(path): " + e.message
        return e
    }
}
