// System Sound Services (Apple's AudioServices.h): short sounds from files played through the
// default output, as iOS and macOS code plays clicks and alerts. A sound is the file checked once
// when it is made (it must open as audio and last at most 30 s, Apple's limit); each play runs an
// AudioFilePlayer on the output OAT_OUTPUT names (PulseAudio by default), independent of the
// others, and its completion comes once the device has played the last frame.
import AudioToolboxKit
import OATCore
import OATDevices
import OATQueueEngine
import Dispatch
import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A system sound (Apple's `SystemSoundID`).
public typealias SystemSoundID = UInt32
/// A property of System Sound Services (Apple's `AudioServicesPropertyID`).
public typealias AudioServicesPropertyID = UInt32
/// Called when a system sound finished playing (Apple's `AudioServicesSystemSoundCompletionProc`):
/// the sound and the client data given to ``AudioServicesAddSystemSoundCompletion(_:_:_:_:_:)``.
public typealias AudioServicesSystemSoundCompletionProc = @convention(c) (SystemSoundID, UnsafeMutableRawPointer?) -> Void

/// No error (Apple's `kAudioServicesNoError`).
public let kAudioServicesNoError: OSStatus = 0
/// The property is not one of System Sound Services' (`'pty?'`).
public let kAudioServicesUnsupportedPropertyError: OSStatus = OSStatus(bitPattern: fourCC("pty?"))
/// The property data's size is wrong (`'!siz'`).
public let kAudioServicesBadPropertySizeError: OSStatus = OSStatus(bitPattern: fourCC("!siz"))
/// The specifier's size is wrong (`'!spc'`): the specifier is a `SystemSoundID`.
public let kAudioServicesBadSpecifierSizeError: OSStatus = OSStatus(bitPattern: fourCC("!spc"))
/// No such system sound, or it could not be played (-1500).
public let kAudioServicesSystemSoundUnspecifiedError: OSStatus = -1500
/// The system sound server did not answer (-1501; not raised here).
public let kAudioServicesSystemSoundClientTimedOutError: OSStatus = -1501
/// The file lasts more than 30 s, the most a system sound may (-1502).
public let kAudioServicesSystemSoundExceededMaximumDurationError: OSStatus = -1502

/// Vibrates a phone that can (Apple's `kSystemSoundID_Vibrate`): here nothing is played and the
/// completion comes at once.
public let kSystemSoundID_Vibrate: SystemSoundID = 0x0000_0FFF
/// The user's alert sound (macOS; Apple's `kSystemSoundID_UserPreferredAlert`): none is set here,
/// so nothing is played and the completion comes at once.
public let kSystemSoundID_UserPreferredAlert: SystemSoundID = 0x0000_1000
/// Flashes the screen (macOS; Apple's `kSystemSoundID_FlashScreen`): nothing here.
public let kSystemSoundID_FlashScreen: SystemSoundID = 0x0000_0FFE

/// `UInt32`, 1 (the default) or 0: whether the sound follows the user's sound-effects setting
/// (`'isui'`; kept: it changes nothing here). Specifier: the `SystemSoundID`.
public let kAudioServicesPropertyIsUISound: AudioServicesPropertyID = fourCC("isui")
/// `UInt32`, 0 (the default) or 1: whether a sound playing when the process exits plays to its
/// end (`'ifdi'`; kept: here a sound ends with the process). Specifier: the `SystemSoundID`.
public let kAudioServicesPropertyCompletePlaybackIfAppDies: AudioServicesPropertyID = fourCC("ifdi")

/// The most a system sound may last, in seconds (Apple's limit).
let systemSoundMaximumSeconds = 30.0

/// One system sound and what was set for it.
final class SystemSound: @unchecked Sendable {
    let path: String
    var isUISound: UInt32 = 1
    var completePlaybackIfAppDies: UInt32 = 0
    var completion: (proc: AudioServicesSystemSoundCompletionProc, clientData: UnsafeMutableRawPointer?, runLoop: CFRunLoop)?
    init(path: String) { self.path = path }
}

/// A completion block handed to another thread (Apple's block type carries no `Sendable`; it is
/// called once, on the completion queue).
struct SystemSoundCompletion: @unchecked Sendable {
    let block: () -> Void
}

/// The sounds made and the plays under way.
enum SystemSounds {
    struct State {
        var sounds: [SystemSoundID: SystemSound] = [:]
        var next: SystemSoundID = 0x2000
        var playing: [Int: AudioFilePlayer] = [:]
        var nextPlay = 0
    }
    static let state = Locked(State())
    /// Completions run here, one at a time (Apple: "a serial queue").
    static let completions = DispatchQueue(label: "OpenAudioToolbox.SystemSoundCompletions")

    static func sound(_ id: SystemSoundID) -> SystemSound? { state.withLock { $0.sounds[id] } }

    /// Plays `id` and then calls its registered completion and `block`.
    static func play(_ id: SystemSoundID, block: SystemSoundCompletion?) {
        guard let sound = sound(id) else {
            // Vibrate, the user's alert, or an unknown ID: nothing to play.
            finish(id, sound: nil, block: block)
            return
        }
        let player: AudioFilePlayer
        do {
            player = try AudioFilePlayer(paths: [sound.path], output: { format throws(AudioError) in
                try AudioOutput.open(CompatOutput.spec(), format: format).device
            })
        } catch {
            finish(id, sound: sound, block: block)
            return
        }
        let key = state.withLock { s -> Int in
            s.nextPlay += 1
            s.playing[s.nextPlay] = player
            return s.nextPlay
        }
        let done = Atomic<Bool>(false)
        let end: @Sendable () -> Void = {
            guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return }
            // Off the player's own thread: stopping it there would wait for itself.
            completions.async {
                let p = state.withLock { $0.playing.removeValue(forKey: key) }
                p?.stop()
                finish(id, sound: sound, block: block)
            }
        }
        player.eventHandler = { event in
            switch event {
            case .state(.ended), .state(.stopped), .itemFailed: end()
            default: break
            }
        }
        do { try player.play() } catch { end() }
    }

    /// Calls the sound's registered completion (on its run loop) and `block` (on the queue).
    static func finish(_ id: SystemSoundID, sound: SystemSound?, block: SystemSoundCompletion?) {
        if let c = state.withLock({ _ in sound?.completion }) {
            let clientData = UInt(bitPattern: c.clientData)
            let proc = c.proc
            c.runLoop.perform { proc(id, UnsafeMutableRawPointer(bitPattern: clientData)) }
        }
        if let block { completions.async { block.block() } }
    }
}

/// Makes a system sound of the audio file at `inFileURL` (Apple's
/// `AudioServicesCreateSystemSoundID`): any file AudioFileOpenURL reads, at most 30 s long.
/// Errors: the file's open error (`kAudioFileFileNotFoundError`, `kAudioFileUnsupportedFileTypeError`...),
/// `kAudioServicesSystemSoundExceededMaximumDurationError` for a longer file.
public func AudioServicesCreateSystemSoundID(_ inFileURL: CFURL, _ outSystemSoundID: UnsafeMutablePointer<SystemSoundID>) -> OSStatus {
    var file: AudioFileID?
    let status = AudioFileOpenURL(inFileURL, .readPermission, 0, &file)
    guard status == noErr, let file else { return status == noErr ? kAudioServicesSystemSoundUnspecifiedError : status }
    defer { AudioFileClose(file) }
    var seconds: Float64 = 0
    var size = UInt32(MemoryLayout<Float64>.size)
    if AudioFileGetProperty(file, kAudioFilePropertyEstimatedDuration, &size, &seconds) == noErr, seconds > systemSoundMaximumSeconds {
        return kAudioServicesSystemSoundExceededMaximumDurationError
    }
    let sound = SystemSound(path: inFileURL.path)
    outSystemSoundID.pointee = SystemSounds.state.withLock { s in
        let id = s.next
        s.next &+= 1
        s.sounds[id] = sound
        return id
    }
    return kAudioServicesNoError
}

/// Disposes of a system sound (Apple's `AudioServicesDisposeSystemSoundID`); plays under way end
/// on their own. An unknown ID is `kAudioServicesSystemSoundUnspecifiedError`.
@discardableResult
public func AudioServicesDisposeSystemSoundID(_ inSystemSoundID: SystemSoundID) -> OSStatus {
    SystemSounds.state.withLock { $0.sounds.removeValue(forKey: inSystemSoundID) } != nil ? kAudioServicesNoError : kAudioServicesSystemSoundUnspecifiedError
}

/// Plays a system sound and returns at once (Apple's `AudioServicesPlaySystemSound`); the
/// completion registered with ``AudioServicesAddSystemSoundCompletion(_:_:_:_:_:)`` runs when it
/// ends. Several plays may overlap.
public func AudioServicesPlaySystemSound(_ inSystemSoundID: SystemSoundID) {
    SystemSounds.play(inSystemSoundID, block: nil)
}

/// Plays a system sound as an alert (Apple's `AudioServicesPlayAlertSound`): as
/// ``AudioServicesPlaySystemSound(_:)`` (no vibration here).
public func AudioServicesPlayAlertSound(_ inSystemSoundID: SystemSoundID) {
    SystemSounds.play(inSystemSoundID, block: nil)
}

/// Plays a system sound and calls `inCompletionBlock` once it has been played, or at once when it
/// cannot be (Apple's `AudioServicesPlaySystemSoundWithCompletion`), on a serial queue.
public func AudioServicesPlaySystemSoundWithCompletion(_ inSystemSoundID: SystemSoundID, _ inCompletionBlock: (() -> Void)?) {
    SystemSounds.play(inSystemSoundID, block: inCompletionBlock.map { SystemSoundCompletion(block: $0) })
}

/// As ``AudioServicesPlaySystemSoundWithCompletion(_:_:)``, as an alert (Apple's
/// `AudioServicesPlayAlertSoundWithCompletion`).
public func AudioServicesPlayAlertSoundWithCompletion(_ inSystemSoundID: SystemSoundID, _ inCompletionBlock: (() -> Void)?) {
    SystemSounds.play(inSystemSoundID, block: inCompletionBlock.map { SystemSoundCompletion(block: $0) })
}

/// Registers `inCompletionRoutine` to run on `inRunLoop` (nil: the main run loop) each time the
/// sound ends (Apple's `AudioServicesAddSystemSoundCompletion`); the mode is accepted (one mode
/// here). An unknown ID is `kAudioServicesSystemSoundUnspecifiedError`.
public func AudioServicesAddSystemSoundCompletion(_ inSystemSoundID: SystemSoundID, _ inRunLoop: CFRunLoop?, _ inRunLoopMode: CFString?,
                                                  _ inCompletionRoutine: AudioServicesSystemSoundCompletionProc,
                                                  _ inClientData: UnsafeMutableRawPointer?) -> OSStatus {
    SystemSounds.state.withLock { s in
        guard let sound = s.sounds[inSystemSoundID] else { return kAudioServicesSystemSoundUnspecifiedError }
        sound.completion = (inCompletionRoutine, inClientData, inRunLoop ?? CFRunLoop.main)
        return kAudioServicesNoError
    }
}

/// Removes the sound's completion routine (Apple's `AudioServicesRemoveSystemSoundCompletion`).
public func AudioServicesRemoveSystemSoundCompletion(_ inSystemSoundID: SystemSoundID) {
    SystemSounds.state.withLock { s in s.sounds[inSystemSoundID]?.completion = nil }
}

/// The property's size and whether it can be set (Apple's `AudioServicesGetPropertyInfo`): both
/// properties are a `UInt32`, settable, with the `SystemSoundID` as specifier.
public func AudioServicesGetPropertyInfo(_ inPropertyID: AudioServicesPropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeRawPointer?,
                                         _ outPropertyDataSize: UnsafeMutablePointer<UInt32>?,
                                         _ outWritable: UnsafeMutablePointer<DarwinBoolean>?) -> OSStatus {
    guard inPropertyID == kAudioServicesPropertyIsUISound || inPropertyID == kAudioServicesPropertyCompletePlaybackIfAppDies else {
        return kAudioServicesUnsupportedPropertyError
    }
    guard inSpecifierSize == UInt32(MemoryLayout<SystemSoundID>.size), inSpecifier != nil else { return kAudioServicesBadSpecifierSizeError }
    outPropertyDataSize?.pointee = UInt32(MemoryLayout<UInt32>.size)
    outWritable?.pointee = true
    return kAudioServicesNoError
}

/// Reads a property of a system sound (Apple's `AudioServicesGetProperty`).
public func AudioServicesGetProperty(_ inPropertyID: AudioServicesPropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeRawPointer?,
                                     _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>, _ outPropertyData: UnsafeMutableRawPointer?) -> OSStatus {
    let info = AudioServicesGetPropertyInfo(inPropertyID, inSpecifierSize, inSpecifier, nil, nil)
    guard info == kAudioServicesNoError, let inSpecifier else { return info }
    guard ioPropertyDataSize.pointee >= UInt32(MemoryLayout<UInt32>.size), let outPropertyData else { return kAudioServicesBadPropertySizeError }
    let id = inSpecifier.loadUnaligned(as: SystemSoundID.self)
    guard let sound = SystemSounds.sound(id) else { return kAudioServicesSystemSoundUnspecifiedError }
    let value = SystemSounds.state.withLock { _ in inPropertyID == kAudioServicesPropertyIsUISound ? sound.isUISound : sound.completePlaybackIfAppDies }
    outPropertyData.storeBytes(of: value, as: UInt32.self)
    ioPropertyDataSize.pointee = UInt32(MemoryLayout<UInt32>.size)
    return kAudioServicesNoError
}

/// Sets a property of a system sound (Apple's `AudioServicesSetProperty`): 0 or 1.
public func AudioServicesSetProperty(_ inPropertyID: AudioServicesPropertyID, _ inSpecifierSize: UInt32, _ inSpecifier: UnsafeRawPointer?,
                                     _ inPropertyDataSize: UInt32, _ inPropertyData: UnsafeRawPointer?) -> OSStatus {
    let info = AudioServicesGetPropertyInfo(inPropertyID, inSpecifierSize, inSpecifier, nil, nil)
    guard info == kAudioServicesNoError, let inSpecifier else { return info }
    guard inPropertyDataSize == UInt32(MemoryLayout<UInt32>.size), let inPropertyData else { return kAudioServicesBadPropertySizeError }
    let id = inSpecifier.loadUnaligned(as: SystemSoundID.self)
    guard let sound = SystemSounds.sound(id) else { return kAudioServicesSystemSoundUnspecifiedError }
    let value: UInt32 = inPropertyData.loadUnaligned(as: UInt32.self) != 0 ? 1 : 0
    SystemSounds.state.withLock { _ in
        if inPropertyID == kAudioServicesPropertyIsUISound { sound.isUISound = value } else { sound.completePlaybackIfAppDies = value }
    }
    return kAudioServicesNoError
}
