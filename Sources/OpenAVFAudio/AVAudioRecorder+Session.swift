// One recording of an AVAudioRecorder: the input queue and the crash-safe file it writes, from
// prepareToRecord() to the end of the recording.
internal import OATCore
import Foundation
import OpenAudioToolbox
import Synchronization

/// What the queue's thread reports to the recorder.
enum RecorderEvent: Sendable {
    /// The queue stopped by itself: the duration was reached, or the device was lost (`lost`).
    case finished(lost: Bool)
    /// Encoding or writing failed.
    case failed(AudioError)
}

/// The file the queue's callback writes into.
final class RecorderSink: @unchecked Sendable {
    /// Set before the queue starts; used by the queue's thread while it runs, by the recorder
    /// after it stopped.
    var writer: AudioFileWriter?
    /// The first write error (queue's thread while running).
    var error: AudioError?
    /// Frames written (the packets' frames, priming included), read from any thread.
    let frames = Atomic<Int64>(0)
    /// Reports a failure once.
    var onFailure: (@Sendable (AudioError) -> Void)?
}

/// A recording in progress: the queue, its buffers and the file.
final class RecorderSession: @unchecked Sendable {
    let queue: AudioInputQueue
    let sink: RecorderSink
    let writer: AudioFileWriter
    let rate: Double
    let priming: Int64
    private let lost = Atomic<Bool>(false)
    private var finished = false

    /// Creates the queue and the file (the URL is created now when it does not exist; an
    /// existing file is replaced by ``finish()``), and enqueues the buffers.
    init(plan: RecorderPlan, url: URL, events: @escaping @Sendable (RecorderEvent, RecorderSession) -> Void) throws {
        let sink = RecorderSink()
        let queue: AudioInputQueue
        do {
            queue = try Self.makeQueue(plan, sink: sink)
        } catch {
            throw avError(kAudioFormatUnsupportedDataFormatError, "AVAudioRecorder: cannot encode \(plan.format): \(error.message)")
        }
        let format = queue.streamDescription
        var options = AudioFileWriterOptions()
        options.crashSafe = true
        options.checkpointSeconds = 0.5
        let writer: AudioFileWriter
        do {
            let output = try SafeOutputFile(path: url.path, mode: .recording)
            writer = try AudioFileWriter(output: output, fileType: plan.fileType, dataFormat: format, magicCookie: queue.magicCookie, options: options)
        } catch {
            throw avError(error.osStatus ?? kAudioFilePermissionsError, "AVAudioRecorder: cannot create \(url.path): \(error.message)")
        }
        if let p = queue.packetTableInfo?.primingFrames ?? queue.primingFrames, p > 0 {
            writer.packetTableInfo = AudioFilePacketTableInfo(numberValidFrames: 0, primingFrames: p, remainderFrames: 0)
        }
        self.queue = queue
        self.sink = sink
        self.writer = writer
        rate = format.sampleRate
        priming = Int64(queue.primingFrames ?? 0)
        sink.writer = writer
        // Buffers of about a tenth of a second, delivered at least every 50 ms (currentTime's step).
        queue.maximumBufferDuration = 0.05
        let frames = Int(rate / 10)
        let packets: Int, bytes: Int
        if format.bytesPerPacket > 0 {
            packets = max(1, frames / Int(max(1, format.framesPerPacket)))
            bytes = packets * Int(format.bytesPerPacket)
        } else {
            packets = frames / Int(format.framesPerPacket > 0 ? format.framesPerPacket : 1152) + 2
            bytes = packets * queue.maximumOutputPacketSize
        }
        do {
            for _ in 0..<4 {
                try queue.enqueue(try queue.allocateBuffer(byteCapacity: bytes, packetDescriptionCapacity: format.bytesPerPacket > 0 ? 0 : packets))
            }
        } catch {
            writer.discard()
            throw avError(error.osStatus ?? kAudio_ParamError, "AVAudioRecorder: \(error.message)")
        }
        sink.onFailure = { [weak self] e in if let self { events(.failed(e), self) } }
        queue.eventHandler = { [weak self] event in
            guard let self else { return }
            switch event {
            case .finished: events(.finished(lost: self.lost.load(ordering: .acquiring)), self)
            case .device(.lost): self.lost.store(true, ordering: .releasing)
            case .encoderError(let e): events(.failed(e), self)
            default: break
            }
        }
    }

    /// An input queue for `plan` whose callback writes into `sink`'s writer.
    static func makeQueue(_ plan: RecorderPlan, sink: RecorderSink) throws(AudioError) -> AudioInputQueue {
        try AudioInputQueue(format: plan.format, encoderSettings: plan.encoder, input: { f throws(AudioError) in
            try AudioInput.open(recorderInputSpec(), format: f).device
        }) { queue, delivery in
            let b = delivery.buffer
            if sink.error == nil, let writer = sink.writer {
                do throws(AudioError) {
                    try writer.writePackets(UnsafeRawBufferPointer(start: b.audioData.baseAddress, count: b.audioDataByteSize),
                                            descriptions: b.packetDescriptions, count: delivery.packetCount)
                    sink.frames.add(Int64(delivery.frameCount), ordering: .relaxed)
                } catch {
                    sink.error = error
                    sink.onFailure?(error)
                }
            }
            try? queue.enqueue(b)
        }
    }

    /// Seconds recorded so far (priming excluded).
    var recordedSeconds: Double {
        Double(max(0, sink.frames.load(ordering: .relaxed) - priming)) / rate
    }

    /// Stops the queue (everything captured is delivered and written) and finishes the file;
    /// true when the whole recording was written. Call once, with no queue callback running
    /// on this thread.
    func finish() -> Bool {
        guard !finished else { return true }
        finished = true
        queue.stop(immediately: false)
        queue.eventHandler = nil
        if let info = queue.packetTableInfo { writer.packetTableInfo = info }
        if queue.streamDescription.formatID == .flac, let cookie = queue.magicCookie { writer.magicCookie = cookie }
        var ok = sink.error == nil && queue.encoderError == nil
        do {
            try writer.close()
        } catch {
            _ = writer.safeOutput?.keepUnfinished()
            ok = false
        }
        queue.dispose(immediately: true)
        return ok
    }
}

/// The input a recorder records from: `OAT_INPUT`, else the session's preferred input, else auto.
func recorderInputSpec() -> AudioInputSpec {
    if let text = getenv("OAT_INPUT").map({ String(cString: $0) }), let spec = AudioInputSpec(parsing: text) { return spec }
    if let preferred = AVAudioSession.sharedInstance().preferredInput {
        return PulseAudioOutputDevice.serverAnswers() ? .pulse(source: preferred.uid) : .alsa(device: preferred.uid)
    }
    return .auto
}
