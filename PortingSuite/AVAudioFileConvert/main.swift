// Converts a file with AVFAudio, as Apple's sample code and countless apps do: open the input
// with AVAudioFile, pull its buffers through an AVAudioConverter (input block, output statuses)
// to 48 kHz, and write them with another AVAudioFile whose settings the output's extension
// picks. Written for macOS/iOS; only the import differs.
//
// usage: porting-avaudiofile-convert INPUT OUTPUT (.wav: 16-bit PCM; .caf: 32-bit float;
// .m4a: AAC 128 kbps)
#if canImport(AVFoundation)
import AVFoundation
#else
import OpenAVFAudio
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write((message + "\n").data(using: .utf8)!)
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else { fail("usage: porting-avaudiofile-convert INPUT OUTPUT") }
let inputURL = URL(fileURLWithPath: arguments[1])
let outputURL = URL(fileURLWithPath: arguments[2])

do {
    let inputFile = try AVAudioFile(forReading: inputURL)
    let channels = inputFile.processingFormat.channelCount
    var settings: [String: Any] = [AVSampleRateKey: 48000.0, AVNumberOfChannelsKey: channels]
    switch outputURL.pathExtension {
    case "m4a":
        settings[AVFormatIDKey] = kAudioFormatMPEG4AAC
        settings[AVEncoderBitRateKey] = 128000
    case "caf":
        settings[AVFormatIDKey] = kAudioFormatLinearPCM
        settings[AVLinearPCMBitDepthKey] = 32
        settings[AVLinearPCMIsFloatKey] = true
    default:
        settings[AVFormatIDKey] = kAudioFormatLinearPCM
        settings[AVLinearPCMBitDepthKey] = 16
    }
    let outputFile = try AVAudioFile(forWriting: outputURL, settings: settings)
    guard let converter = AVAudioConverter(from: inputFile.processingFormat, to: outputFile.processingFormat) else {
        fail("no converter from \(inputFile.processingFormat) to \(outputFile.processingFormat)")
    }
    converter.sampleRateConverterQuality = AVAudioQuality.high.rawValue
    guard let inputBuffer = AVAudioPCMBuffer(pcmFormat: inputFile.processingFormat, frameCapacity: 4096),
          let outputBuffer = AVAudioPCMBuffer(pcmFormat: outputFile.processingFormat, frameCapacity: 4096) else {
        fail("cannot allocate buffers")
    }
    var readError: Error?
    var done = false
    while !done {
        var error: NSError?
        let status = converter.convert(to: outputBuffer, error: &error) { _, outStatus in
            do {
                try inputFile.read(into: inputBuffer)
            } catch {
                readError = error
                outStatus.pointee = .endOfStream
                return nil
            }
            if inputBuffer.frameLength == 0 {
                outStatus.pointee = .endOfStream
                return nil
            }
            outStatus.pointee = .haveData
            return inputBuffer
        }
        switch status {
        case .haveData, .inputRanDry:
            try outputFile.write(from: outputBuffer)
        case .endOfStream:
            done = true
        case .error:
            fail("conversion failed: \(error?.localizedDescription ?? "unknown error")")
        @unknown default:
            fail("unknown converter status")
        }
    }
    if let readError { fail("read failed: \(readError)") }
    print("wrote \(outputFile.length) frames at \(outputFile.fileFormat.sampleRate) Hz from \(inputFile.length) at \(inputFile.fileFormat.sampleRate) Hz")
} catch {
    fail("error: \(error)")
}
