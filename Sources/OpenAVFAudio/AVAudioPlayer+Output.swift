// The parts of AVAudioPlayer underneath: the engine every player plays through (one per
// process, so several players mix and share one device clock), the file that remembers a decode
// error, and the level meter fed by a tap.
import Foundation
import OpenAudioToolbox
internal import OATUnits
#if canImport(Glibc)
import Glibc
#endif

/// The engine the ``AVAudioPlayer``s of the process play through: each player attaches its
/// player node (and a time-pitch unit when it changes rate) to this engine's main mixer, so
/// several players mix into one output stream and share one clock (``deviceTime``), as Apple's
/// players share the output device. The engine runs while at least one player is playing or
/// paused and stops when none is (its clock then reads 0 again, as Apple's device time does).
final class AVAudioPlayerOutput: @unchecked Sendable {
    static let shared = AVAudioPlayerOutput()

    private let lock = NSLock()
    let engine = AVAudioEngine()
    /// The players playing or paused.
    private var active = Set<ObjectIdentifier>()

    /// Attaches `chain` (a player node, then the effects after it) and connects it to the main
    /// mixer. On a running engine the graph is rewired in place (the other players go on).
    func attach(_ chain: [AVAudioNode]) {
        lock.lock(); defer { lock.unlock() }
        let mixer = engine.mainMixerNode
        for node in chain { engine.attach(node) }
        for (a, b) in zip(chain, chain.dropFirst()) { engine.connect(a, to: b, format: nil) }
        if let last = chain.last { engine.connect(last, to: mixer, format: nil) }
    }

    /// Detaches `chain`.
    func detach(_ chain: [AVAudioNode]) {
        lock.lock(); defer { lock.unlock() }
        for node in chain.reversed() { engine.detach(node) }
    }

    /// Marks `player` as playing or paused, starting the engine when it is the first; false
    /// when the device cannot start.
    func activate(_ player: AnyObject) -> Bool {
        lock.lock(); defer { lock.unlock() }
        active.insert(ObjectIdentifier(player))
        if engine.isRunning { return true }
        do {
            try engine.start()
            return true
        } catch {
            active.remove(ObjectIdentifier(player))
            return false
        }
    }

    /// `player` is neither playing nor paused any more: the engine stops with the last one.
    func deactivate(_ player: AnyObject) {
        lock.lock(); defer { lock.unlock() }
        guard active.remove(ObjectIdentifier(player)) != nil else { return }
        if active.isEmpty && engine.isRunning { engine.stop() }
    }

    /// The output's clock in seconds: frames rendered since the engine started, at its rate; 0
    /// while it is stopped.
    var deviceTime: TimeInterval {
        guard let time = engine.outputNode.lastRenderTime, time.sampleRate > 0 else { return 0 }
        return Double(time.sampleTime) / time.sampleRate
    }

    /// The engine's sample rate (the device's), once it runs.
    var rate: Double { engine.renderRate }
}

/// An ``AVAudioFile`` that keeps the first error a read threw (the player node ends a segment
/// early when its file cannot be read; the player reports why).
final class AVAudioPlayerFile: AVAudioFile, @unchecked Sendable {
    private let errorLock = NSLock()
    private var readError: (any Error)?

    override func read(into buffer: AVAudioPCMBuffer, frameCount frames: AVAudioFrameCount) throws {
        do {
            try super.read(into: buffer, frameCount: frames)
        } catch {
            errorLock.lock()
            if readError == nil { readError = error }
            errorLock.unlock()
            throw error
        }
    }

    /// The error a read threw since the last call, if any.
    func takeError() -> (any Error)? {
        errorLock.lock(); defer { errorLock.unlock() }
        defer { readError = nil }
        return readError
    }
}

/// Levels per channel of what a tap saw: the peak since the last ``update(silent:)`` and the
/// mean square of the most recent tenth of a second; ``update(silent:)`` turns them into the
/// dBFS values the player reports. The tap's thread adds, the caller's reads: one lock, no
/// render-thread work.
final class AVAudioPlayerMeter: @unchecked Sendable {
    static let floor: Float = -160
    /// The averaging window, in seconds.
    static let window = 0.1
    private let lock = NSLock()
    private var peak: [Float] = []
    /// Recent buffers: per-channel sums of squares and frame counts, newest last.
    private var recent: [(squares: [Double], frames: Int)] = []
    private var rate: Double = 48000
    private var fresh = false
    private var gain: Float = 1
    private(set) var averageDB: [Float] = []
    private(set) var peakDB: [Float] = []

    /// The volume the levels are scaled by (the player's volume is applied after the tap).
    func setGain(_ g: Float) { lock.lock(); gain = max(0, g); lock.unlock() }

    /// Tap thread: adds a buffer's levels.
    func add(_ buffer: AVAudioPCMBuffer) {
        guard let data = buffer.floatChannelData else { return }
        let channels = Int(buffer.format.channelCount)
        let n = Int(buffer.frameLength)
        guard n > 0 else { return }
        let stride = buffer.stride
        var squares = [Double](repeating: 0, count: channels)
        lock.lock(); defer { lock.unlock() }
        if peak.count != channels {
            peak = Array(repeating: 0, count: channels)
            recent.removeAll()
        }
        for c in 0..<channels {
            let p = data[c]
            var top = peak[c]
            var sum = 0.0
            for i in 0..<n {
                let x = p[i * stride] * gain
                top = max(top, abs(x))
                sum += Double(x) * Double(x)
            }
            peak[c] = top
            squares[c] = sum
        }
        rate = buffer.format.sampleRate
        recent.append((squares, n))
        // Keep the buffers the window needs (with the one that reaches past it).
        var total = 0
        var keep = 0
        for entry in recent.reversed() {
            keep += 1
            total += entry.frames
            if Double(total) >= Self.window * rate { break }
        }
        if keep < recent.count { recent.removeFirst(recent.count - keep) }
        fresh = true
    }

    /// Takes the levels: the peak since the last update and the RMS of the last tenth of a
    /// second (the previous values when no audio came since; silence when `silent`).
    func update(silent: Bool) {
        lock.lock(); defer { lock.unlock() }
        if silent {
            averageDB = averageDB.map { _ in Self.floor }
            peakDB = peakDB.map { _ in Self.floor }
            return
        }
        guard fresh, !recent.isEmpty else { return }
        let frames = recent.reduce(0) { $0 + $1.frames }
        averageDB = (0..<peak.count).map { c in
            Self.decibels(Float((recent.reduce(0.0) { $0 + $1.squares[c] } / Double(frames)).squareRoot()))
        }
        peakDB = peak.map { Self.decibels($0) }
        for c in 0..<peak.count { peak[c] = 0 }
        fresh = false
    }

    /// Forgets the levels (metering switched off, playback stopped).
    func reset() {
        lock.lock(); defer { lock.unlock() }
        for c in 0..<peak.count { peak[c] = 0 }
        recent.removeAll()
        fresh = false
        averageDB = averageDB.map { _ in Self.floor }
        peakDB = peakDB.map { _ in Self.floor }
    }

    func average(_ channel: Int) -> Float {
        lock.lock(); defer { lock.unlock() }
        return channel >= 0 && channel < averageDB.count ? averageDB[channel] : Self.floor
    }

    func peak(_ channel: Int) -> Float {
        lock.lock(); defer { lock.unlock() }
        return channel >= 0 && channel < peakDB.count ? peakDB[channel] : Self.floor
    }

    /// 20·log10(x), at least -160 (silence).
    static func decibels(_ linear: Float) -> Float {
        linear > 0 ? max(floor, 20 * log10(linear)) : floor
    }
}

/// Apple's error for data no audio file type recognises (`kAudioFileUnsupportedFileTypeError`,
/// 'typ?') where the file layer reports invalid data: the first bytes are probed, and a
/// recognised but broken file keeps the file layer's status.
func refineOpenError(_ error: any Error, prefix: [UInt8], whole: Bool) -> any Error {
    let ns = error as NSError
    guard ns.domain == NSOSStatusErrorDomain,
          ns.code == Int(kAudioFileInvalidFileError) || ns.code == Int(kAudioFileUnsupportedDataFormatError) else { return error }
    if case .audio? = StreamFormatDetector.sniff(prefix, isComplete: whole) { return error }
    return avError(kAudioFileUnsupportedFileTypeError, "AVAudioPlayer: the data is of no audio file type this reads")
}

/// The first 64 KB of the file at `url` (empty when it cannot be read), and whether that is all.
func filePrefix(_ url: URL) -> (bytes: [UInt8], whole: Bool) {
    guard let handle = try? FileHandle(forReadingFrom: url) else { return ([], false) }
    defer { try? handle.close() }
    let data = (try? handle.read(upToCount: 65536)) ?? Data()
    return ([UInt8](data), data.count < 65536)
}

/// The file extension a uniform type identifier (or an extension given as the hint) stands for,
/// so in-memory data is probed as the type the caller named.
func fileExtension(forTypeHint hint: String?) -> String? {
    guard let hint = hint?.lowercased(), !hint.isEmpty else { return nil }
    let known: [String: String] = [
        "com.microsoft.waveform-audio": "wav", "public.aiff-audio": "aiff", "public.aifc-audio": "aifc",
        "com.apple.coreaudio-format": "caf", "public.mp3": "mp3", "com.apple.m4a-audio": "m4a",
        "public.mpeg-4": "mp4", "public.mpeg-4-audio": "m4a", "public.aac-audio": "aac", "public.adts": "aac",
        "org.xiph.flac": "flac", "org.xiph.ogg-audio": "ogg", "org.xiph.opus": "opus", "public.au-audio": "au",
    ]
    if let ext = known[hint] { return ext }
    let bare = ["wav", "wave", "aif", "aiff", "aifc", "caf", "mp3", "m4a", "mp4", "aac", "adts", "flac", "ogg", "opus", "au"]
    return bare.contains(hint) ? hint : nil
}

/// Opens in-memory audio: the bytes go to a private temporary file (mode 0600, created new)
/// that is unlinked as soon as it is open (the reader keeps its descriptor), as
/// `AudioFileOpenWithCallbacks` does.
func openPlayerFile(data: Data, typeHint: String?) throws -> AVAudioPlayerFile {
    guard !data.isEmpty else { throw avError(kAudioFileInvalidFileError, "AVAudioPlayer: the data is empty") }
    let ext = fileExtension(forTypeHint: typeHint).map { ".\($0)" } ?? ""
    let path = "\(NSTemporaryDirectory())/oat-avaudioplayer-\(getpid())-\(UInt64.random(in: 0...UInt64.max))\(ext)"
    let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw avError(kAudioFilePermissionsError, "AVAudioPlayer: cannot create a temporary file for the data") }
    defer { unlink(path) }
    let ok = data.withUnsafeBytes { raw -> Bool in
        var offset = 0
        while offset < raw.count {
            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n <= 0 { return false }
            offset += n
        }
        return true
    }
    close(fd)
    guard ok else { throw avError(kAudioFilePermissionsError, "AVAudioPlayer: cannot write the data to a temporary file") }
    return try AVAudioPlayerFile(forReading: URL(fileURLWithPath: path), commonFormat: .pcmFormatFloat32, interleaved: false)
}
