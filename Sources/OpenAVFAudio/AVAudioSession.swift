// AVAudioSession: iOS's audio session, so iOS code that configures it unguarded ports with its
// import changed. Linux has no system audio policy: the category, mode and options are kept and
// reported back; the route, rates and latencies come from the devices this project plays to
// (PulseAudio's sinks and sources, else ALSA's); route-change and interruption notifications are
// driven by PulseAudio's device events (PulseAudioDeviceWatcher) while the session is active.
import Foundation
import OpenAudioToolbox
internal import OATDevices
internal import OATCore
#if canImport(Glibc)
import Glibc
#endif

/// The route-change reason in a ``AVAudioSession/routeChangeNotification``'s `userInfo` (an
/// `NSNumber`/`UInt` holding an ``AVAudioSession/RouteChangeReason`` raw value).
public let AVAudioSessionRouteChangeReasonKey = "AVAudioSessionRouteChangeReasonKey"
/// The route before the change in a ``AVAudioSession/routeChangeNotification``'s `userInfo`
/// (an ``AVAudioSessionRouteDescription``).
public let AVAudioSessionRouteChangePreviousRouteKey = "AVAudioSessionRouteChangePreviousRouteKey"
/// The interruption type in an ``AVAudioSession/interruptionNotification``'s `userInfo` (an
/// `NSNumber`/`UInt` holding an ``AVAudioSession/InterruptionType`` raw value).
public let AVAudioSessionInterruptionTypeKey = "AVAudioSessionInterruptionTypeKey"
/// The options of an ended interruption (an `NSNumber`/`UInt` holding
/// ``AVAudioSession/InterruptionOptions`` raw values).
public let AVAudioSessionInterruptionOptionKey = "AVAudioSessionInterruptionOptionKey"
/// Why an interruption began (an `NSNumber`/`UInt` holding an
/// ``AVAudioSession/InterruptionReason`` raw value), in began interruptions only, as on Apple.
public let AVAudioSessionInterruptionReasonKey = "AVAudioSessionInterruptionReasonKey"

/// A channel of a port (Apple's `AVAudioSessionChannelDescription`).
open class AVAudioSessionChannelDescription: NSObject, @unchecked Sendable {
    /// The channel's name (`Left`, `Right`, `Channel 3`, ...).
    open private(set) var channelName: String
    /// The channel's index in its port's ``AVAudioSessionPortDescription/channels``.
    open private(set) var channelNumber: Int
    /// The ``AVAudioSessionPortDescription/uid`` of the port it belongs to.
    open private(set) var owningPortUID: String
    /// Where the channel sits (`kAudioChannelLabel_Left`, ...; `kAudioChannelLabel_Unknown` past stereo).
    open private(set) var channelLabel: OpenAudioToolbox.AudioChannelLabel

    init(name: String, number: Int, port: String, label: OpenAudioToolbox.AudioChannelLabel) {
        channelName = name
        channelNumber = number
        owningPortUID = port
        channelLabel = label
        super.init()
    }
}

/// An input or output port of a route (Apple's `AVAudioSessionPortDescription`): here a
/// PulseAudio sink or source, or an ALSA device.
open class AVAudioSessionPortDescription: NSObject, @unchecked Sendable {
    /// What kind of port it is (guessed from the device's name: Bluetooth, HDMI, USB, the
    /// built-in analog codec, a virtual sink or monitor; line out/in otherwise).
    open private(set) var portType: AVAudioSession.Port
    /// The device's description (PulseAudio's, e.g. `Built-in Audio Analog Stereo`).
    open private(set) var portName: String
    /// The device's name (a PulseAudio sink or source name, or an ALSA PCM name): unique and
    /// stable while the device exists.
    open private(set) var uid: String
    /// The port's channels.
    open private(set) var channels: [AVAudioSessionChannelDescription]?
    /// False: no port here has hardware voice processing.
    open var hasHardwareVoiceCallProcessing: Bool { false }
    /// Data sources (none are listed here).
    open var dataSources: [AVAudioSessionDataSourceDescription]? { nil }
    /// The selected data source (none here).
    open var selectedDataSource: AVAudioSessionDataSourceDescription? { nil }
    /// The preferred data source (none here).
    open var preferredDataSource: AVAudioSessionDataSourceDescription? { nil }

    /// Refuses: there are no data sources to choose.
    open func setPreferredDataSource(_ dataSource: AVAudioSessionDataSourceDescription?) throws {
        if dataSource != nil { throw avError(kAudioSessionErrorUnsupportedProperty, "AVAudioSessionPortDescription: no data sources here") }
    }

    init(type: AVAudioSession.Port, name: String, uid: String, channelCount: Int) {
        portType = type
        portName = name
        self.uid = uid
        super.init()
        channels = (0..<max(0, channelCount)).map { i in
            let label: OpenAudioToolbox.AudioChannelLabel = channelCount == 1 ? kAudioChannelLabel_Mono
                : i == 0 ? kAudioChannelLabel_Left : i == 1 ? kAudioChannelLabel_Right : kAudioChannelLabel_Unknown
            let name = channelCount == 1 ? "Mono" : i == 0 ? "Left" : i == 1 ? "Right" : "Channel \(i + 1)"
            return AVAudioSessionChannelDescription(name: name, number: i, port: uid, label: label)
        }
    }

    /// Ports are equal when they name the same device.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? AVAudioSessionPortDescription else { return false }
        return other.uid == uid && other.portType == portType
    }

    /// Hashes the device's name.
    open override var hash: Int { uid.hashValue }

    /// `<port TYPE "NAME" (UID)>`.
    open override var description: String { "<AVAudioSessionPortDescription \(portType.rawValue) \"\(portName)\" (\(uid))>" }
}

/// A data source of a port (Apple's `AVAudioSessionDataSourceDescription`); no port lists any here.
open class AVAudioSessionDataSourceDescription: NSObject, @unchecked Sendable {
    /// The data source's identifier.
    open private(set) var dataSourceID: NSNumber = 0
    /// The data source's name.
    open private(set) var dataSourceName: String = ""
}

/// The ports audio goes in and out through (Apple's `AVAudioSessionRouteDescription`).
open class AVAudioSessionRouteDescription: NSObject, @unchecked Sendable {
    /// The input port (the source the engine's input node would capture), if any.
    open private(set) var inputs: [AVAudioSessionPortDescription]
    /// The output port (the sink the engine would play to), if any.
    open private(set) var outputs: [AVAudioSessionPortDescription]

    init(inputs: [AVAudioSessionPortDescription], outputs: [AVAudioSessionPortDescription]) {
        self.inputs = inputs
        self.outputs = outputs
        super.init()
    }

    /// Routes are equal when their inputs and outputs name the same devices.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? AVAudioSessionRouteDescription else { return false }
        return other.inputs.map(\.uid) == inputs.map(\.uid) && other.outputs.map(\.uid) == outputs.map(\.uid)
    }

    /// Hashes the devices' names.
    open override var hash: Int { (inputs.map(\.uid) + outputs.map(\.uid)).hashValue }

    /// `<route inputs: [...] outputs: [...]>`.
    open override var description: String { "<AVAudioSessionRouteDescription inputs: \(inputs) outputs: \(outputs)>" }
}

/// iOS's audio session (Apple's `AVAudioSession`), as iOS code calls it.
///
/// What it does here: ``setCategory(_:mode:options:)`` and the other setters keep what they are
/// given (there is no system policy to negotiate with); ``setActive(_:options:)`` with true
/// starts watching the audio devices (PulseAudio's events) and posts
/// ``routeChangeNotification`` when the route's devices change (a sink or source unloaded,
/// added or made the default: `oldDeviceUnavailable`, `newDeviceAvailable`, `override`) and
/// ``interruptionNotification`` when the sound server goes away (`began`) and when it is back
/// (`ended`, with `shouldResume`). Notifications are posted on `NotificationCenter.default`
/// from the watcher's thread, as Apple posts them on a secondary thread.
///
/// ``setPreferredIOBufferDuration(_:)`` sets the PulseAudio target latency engines started
/// afterwards use (``ioBufferDuration``); the engines render at the output device's rate, which
/// is ``sampleRate``: the PulseAudio sink's unless ``setPreferredSampleRate(_:)`` asked for
/// another (engines started afterwards render at it and PulseAudio converts to the sink), an
/// ALSA PCM's own rate nearest the preferred one, a WAV file's or null output's chosen rate.
/// Recording needs no permission on Linux: ``recordPermission`` is `granted`.
///
/// Thread safety: every member may be called from any thread.
open class AVAudioSession: NSObject, @unchecked Sendable {
    // MARK: Types

    /// A category: how the app uses audio (Apple's `AVAudioSession.Category`).
    public struct Category: RawRepresentable, Hashable, Sendable {
        /// The category's name.
        public let rawValue: String
        /// A category with this name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A category with this name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// Sounds that mix with others and are silenced by the silent switch.
        public static let ambient = Category(rawValue: "AVAudioSessionCategoryAmbient")
        /// Routes to several outputs at once.
        public static let multiRoute = Category(rawValue: "AVAudioSessionCategoryMultiRoute")
        /// Recording and playback (VoIP, voice chat).
        public static let playAndRecord = Category(rawValue: "AVAudioSessionCategoryPlayAndRecord")
        /// Playback that matters (music players).
        public static let playback = Category(rawValue: "AVAudioSessionCategoryPlayback")
        /// Recording only.
        public static let record = Category(rawValue: "AVAudioSessionCategoryRecord")
        /// The default: sounds that stop other audio.
        public static let soloAmbient = Category(rawValue: "AVAudioSessionCategorySoloAmbient")
        /// Deprecated by Apple: audio processing without playback or recording.
        public static let audioProcessing = Category(rawValue: "AVAudioSessionCategoryAudioProcessing")
    }

    /// A mode: a specialisation of the category (Apple's `AVAudioSession.Mode`).
    public struct Mode: RawRepresentable, Hashable, Sendable {
        /// The mode's name.
        public let rawValue: String
        /// A mode with this name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A mode with this name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The default mode.
        public static let `default` = Mode(rawValue: "AVAudioSessionModeDefault")
        /// Game chat.
        public static let gameChat = Mode(rawValue: "AVAudioSessionModeGameChat")
        /// Measurement: minimal processing of input and output.
        public static let measurement = Mode(rawValue: "AVAudioSessionModeMeasurement")
        /// Movie playback.
        public static let moviePlayback = Mode(rawValue: "AVAudioSessionModeMoviePlayback")
        /// Spoken audio (podcasts, audio books).
        public static let spokenAudio = Mode(rawValue: "AVAudioSessionModeSpokenAudio")
        /// Video chat.
        public static let videoChat = Mode(rawValue: "AVAudioSessionModeVideoChat")
        /// Video recording.
        public static let videoRecording = Mode(rawValue: "AVAudioSessionModeVideoRecording")
        /// Voice chat (VoIP).
        public static let voiceChat = Mode(rawValue: "AVAudioSessionModeVoiceChat")
        /// Voice prompts (navigation).
        public static let voicePrompt = Mode(rawValue: "AVAudioSessionModeVoicePrompt")
    }

    /// Options of a category (Apple's `AVAudioSession.CategoryOptions`).
    public struct CategoryOptions: OptionSet, Sendable {
        /// The raw value.
        public let rawValue: UInt
        /// Options from a raw value.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Mix with other apps' audio.
        public static let mixWithOthers = CategoryOptions(rawValue: 0x1)
        /// Lower other apps' audio while this one plays.
        public static let duckOthers = CategoryOptions(rawValue: 0x2)
        /// Allow Bluetooth hands-free devices as input.
        public static let allowBluetooth = CategoryOptions(rawValue: 0x4)
        /// Play to the speaker rather than the receiver.
        public static let defaultToSpeaker = CategoryOptions(rawValue: 0x8)
        /// Interrupt spoken audio of other apps and mix with the rest.
        public static let interruptSpokenAudioAndMixWithOthers = CategoryOptions(rawValue: 0x11)
        /// Allow Bluetooth A2DP outputs.
        public static let allowBluetoothA2DP = CategoryOptions(rawValue: 0x20)
        /// Allow AirPlay outputs.
        public static let allowAirPlay = CategoryOptions(rawValue: 0x40)
        /// Keep the session running when the built-in microphone is muted.
        public static let overrideMutedMicrophoneInterruption = CategoryOptions(rawValue: 0x80)
    }

    /// Options of ``setActive(_:options:)`` (Apple's `AVAudioSession.SetActiveOptions`).
    public struct SetActiveOptions: OptionSet, Sendable {
        /// The raw value.
        public let rawValue: UInt
        /// Options from a raw value.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Tell other sessions they may resume (on deactivation).
        public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 1)
    }

    /// How the session shares its route (Apple's `AVAudioSession.RouteSharingPolicy`).
    public enum RouteSharingPolicy: UInt, Sendable {
        /// The system's default routing.
        case `default` = 0
        /// Long-form audio (music, podcasts).
        case longFormAudio = 1
        /// Routes chosen independently of other apps.
        case independent = 2
        /// Long-form video.
        case longFormVideo = 3
    }

    /// Why the route changed (Apple's `AVAudioSession.RouteChangeReason`).
    public enum RouteChangeReason: UInt, Sendable {
        /// Unknown.
        case unknown = 0
        /// A device appeared and the route moved to it.
        case newDeviceAvailable = 1
        /// The route's device went away.
        case oldDeviceUnavailable = 2
        /// The category changed.
        case categoryChange = 3
        /// The route was overridden (here: the default device was changed).
        case override = 4
        /// The device woke from sleep.
        case wakeFromSleep = 6
        /// No route suits the category.
        case noSuitableRouteForCategory = 7
        /// The route's configuration changed.
        case routeConfigurationChange = 8
    }

    /// The phase of an interruption (Apple's `AVAudioSession.InterruptionType`).
    public enum InterruptionType: UInt, Sendable {
        /// The interruption began (here: the sound server went away).
        case began = 1
        /// The interruption ended (here: the sound server is back).
        case ended = 0
    }

    /// Why an interruption began (Apple's `AVAudioSession.InterruptionReason`). Here an
    /// interruption begins when the sound server goes away: ``routeDisconnected``.
    public enum InterruptionReason: UInt, Sendable {
        /// Another session was activated.
        case `default` = 0
        /// The app was suspended (deprecated on Apple; never posted here).
        case appWasSuspended = 1
        /// The built-in microphone was muted (never posted here).
        case builtInMicMuted = 2
        /// The audio route went away (here: the sound server).
        case routeDisconnected = 4
    }

    /// Whether input and output share one I/O configuration (Apple's `AVAudioSession.IOType`).
    public enum IOType: UInt, Sendable {
        /// No preference.
        case notSpecified = 0
        /// Input and output at the same rate and I/O buffer duration.
        case aggregated = 1
    }

    /// Options of an ended interruption (Apple's `AVAudioSession.InterruptionOptions`).
    public struct InterruptionOptions: OptionSet, Sendable {
        /// The raw value.
        public let rawValue: UInt
        /// Options from a raw value.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The app may resume playing.
        public static let shouldResume = InterruptionOptions(rawValue: 1)
    }

    /// Whether the app may record (Apple's `AVAudioSession.RecordPermission`).
    public enum RecordPermission: UInt, Sendable {
        /// Not asked yet.
        case undetermined = 1970168948   // 'undt'
        /// Refused.
        case denied = 1684369017         // 'deny'
        /// Granted.
        case granted = 1735552628        // 'grnt'
    }

    /// An output override (Apple's `AVAudioSession.PortOverride`).
    public enum PortOverride: UInt, Sendable {
        /// No override.
        case none = 0
        /// The built-in speaker.
        case speaker = 1936747378        // 'spkr'
    }

    /// A kind of port (Apple's `AVAudioSession.Port`).
    public struct Port: RawRepresentable, Hashable, Sendable {
        /// The port type's name.
        public let rawValue: String
        /// A port type with this name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A port type with this name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// Line-level input.
        public static let lineIn = Port(rawValue: "LineIn")
        /// The built-in microphone.
        public static let builtInMic = Port(rawValue: "MicrophoneBuiltIn")
        /// A wired headset's microphone.
        public static let headsetMic = Port(rawValue: "MicrophoneWired")
        /// Line-level output.
        public static let lineOut = Port(rawValue: "LineOut")
        /// Headphones.
        public static let headphones = Port(rawValue: "Headphones")
        /// Bluetooth A2DP output.
        public static let bluetoothA2DP = Port(rawValue: "BluetoothA2DPOutput")
        /// The built-in receiver.
        public static let builtInReceiver = Port(rawValue: "Receiver")
        /// The built-in speaker.
        public static let builtInSpeaker = Port(rawValue: "Speaker")
        /// HDMI output.
        public static let HDMI = Port(rawValue: "HDMIOutput")
        /// AirPlay.
        public static let airPlay = Port(rawValue: "AirPlay")
        /// Bluetooth Low Energy output.
        public static let bluetoothLE = Port(rawValue: "BluetoothLEOutput")
        /// Bluetooth hands-free.
        public static let bluetoothHFP = Port(rawValue: "BluetoothHFP")
        /// USB audio.
        public static let usbAudio = Port(rawValue: "USBAudio")
        /// CarPlay.
        public static let carAudio = Port(rawValue: "CarAudio")
        /// A virtual device (here: null sinks and monitor sources).
        public static let virtual = Port(rawValue: "Virtual")
        /// PCI audio.
        public static let PCI = Port(rawValue: "PCI")
        /// FireWire audio.
        public static let fireWire = Port(rawValue: "FireWire")
        /// DisplayPort audio.
        public static let displayPort = Port(rawValue: "DisplayPort")
        /// AVB audio.
        public static let AVB = Port(rawValue: "AVB")
        /// Thunderbolt audio.
        public static let thunderbolt = Port(rawValue: "Thunderbolt")
    }

    // MARK: Notifications

    /// Posted when the session is interrupted and when the interruption ends; `userInfo` holds
    /// ``AVAudioSessionInterruptionTypeKey`` (and ``AVAudioSessionInterruptionOptionKey`` when it ends).
    public class var interruptionNotification: NSNotification.Name { NSNotification.Name("AVAudioSessionInterruptionNotification") }
    /// Posted when the route changes; `userInfo` holds ``AVAudioSessionRouteChangeReasonKey`` and
    /// ``AVAudioSessionRouteChangePreviousRouteKey``.
    public class var routeChangeNotification: NSNotification.Name { NSNotification.Name("AVAudioSessionRouteChangeNotification") }
    /// Posted when the media server was lost (not posted here: the interruption stands for it).
    public class var mediaServicesWereLostNotification: NSNotification.Name { NSNotification.Name("AVAudioSessionMediaServicesWereLostNotification") }
    /// Posted when the media server was reset (not posted here).
    public class var mediaServicesWereResetNotification: NSNotification.Name { NSNotification.Name("AVAudioSessionMediaServicesWereResetNotification") }
    /// Posted when other apps' primary audio starts or stops (not posted here).
    public class var silenceSecondaryAudioHintNotification: NSNotification.Name { NSNotification.Name("AVAudioSessionSilenceSecondaryAudioHintNotification") }

    // MARK: State

    private static let shared = AVAudioSession()

    /// The session (one per process, as on iOS).
    open class func sharedInstance() -> AVAudioSession { shared }

    private let lock = NSRecursiveLock()
    private var _category = Category.soloAmbient
    private var _mode = Mode.default
    private var _options: CategoryOptions = []
    private var _policy = RouteSharingPolicy.default
    private var _active = false
    private var _preferredRate: Double = 0
    private var _preferredIO: TimeInterval = 0
    private var _preferredInput: AVAudioSessionPortDescription?
    private var _allowHaptics = false
    private var _preferredChannels = (input: 0, output: 0)
    private var _ioType = IOType.notSpecified
    private var _permission = RecordPermission.undetermined
    private var watcher: SessionDeviceWatcher?

    override init() { super.init() }

    /// The category (``Category/soloAmbient`` until set).
    open var category: Category { lock.lock(); defer { lock.unlock() }; return _category }
    /// The mode (``Mode/default`` until set).
    open var mode: Mode { lock.lock(); defer { lock.unlock() }; return _mode }
    /// The category's options.
    open var categoryOptions: CategoryOptions { lock.lock(); defer { lock.unlock() }; return _options }
    /// The route-sharing policy.
    open var routeSharingPolicy: RouteSharingPolicy { lock.lock(); defer { lock.unlock() }; return _policy }
    /// Every category (all are available here).
    open var availableCategories: [Category] { [.ambient, .soloAmbient, .playback, .record, .playAndRecord, .multiRoute] }
    /// Every mode (all are available here).
    open var availableModes: [Mode] { [.default, .voiceChat, .gameChat, .videoRecording, .measurement, .moviePlayback, .videoChat, .spokenAudio, .voicePrompt] }

    /// Sets the category.
    open func setCategory(_ category: Category) throws {
        try setCategory(category, mode: mode, policy: routeSharingPolicy, options: [])
    }

    /// Sets the category and its options.
    open func setCategory(_ category: Category, options: CategoryOptions = []) throws {
        try setCategory(category, mode: mode, policy: routeSharingPolicy, options: options)
    }

    /// Sets the category, mode and options at once.
    open func setCategory(_ category: Category, mode: Mode, options: CategoryOptions = []) throws {
        try setCategory(category, mode: mode, policy: routeSharingPolicy, options: options)
    }

    /// Sets the category, mode, route-sharing policy and options at once. Throws when
    /// `defaultToSpeaker` is asked for outside ``Category/playAndRecord`` (as iOS does).
    open func setCategory(_ category: Category, mode: Mode, policy: RouteSharingPolicy, options: CategoryOptions = []) throws {
        if options.contains(.defaultToSpeaker) && category != .playAndRecord {
            throw avError(kAudioSessionErrorParamErr, "AVAudioSession.setCategory: defaultToSpeaker needs playAndRecord, not \(category.rawValue)")
        }
        lock.lock(); defer { lock.unlock() }
        _category = category
        _mode = mode
        _policy = policy
        _options = options
    }

    /// Sets the mode.
    open func setMode(_ mode: Mode) throws {
        lock.lock(); defer { lock.unlock() }
        _mode = mode
    }

    /// Activates the session (the route is watched and its notifications posted) or deactivates it.
    open func setActive(_ active: Bool, options: SetActiveOptions = []) throws {
        lock.lock()
        defer { lock.unlock() }
        guard active != _active else { return }
        _active = active
        if active {
            watcher = SessionDeviceWatcher(session: self)
        } else {
            let w = watcher
            watcher = nil
            lock.unlock()
            w?.stop()
            lock.lock()
        }
    }

    /// True between ``setActive(_:options:)`` with true and with false.
    var isActive: Bool { lock.lock(); defer { lock.unlock() }; return _active }

    // MARK: Hardware

    /// Asks for a sample rate (0: no preference): engines started afterwards render and open
    /// their device at it (PulseAudio converts to the sink's rate; an ALSA PCM gives its own
    /// rate nearest it); ``sampleRate`` reports the rate they get.
    open func setPreferredSampleRate(_ sampleRate: Double) throws {
        guard sampleRate >= 0, sampleRate.isFinite, sampleRate <= 384_000 else {
            throw avError(kAudioSessionErrorParamErr, "AVAudioSession.setPreferredSampleRate: \(sampleRate) Hz is not a rate")
        }
        lock.lock(); defer { lock.unlock() }
        _preferredRate = sampleRate
    }

    /// The preferred sample rate (0: none).
    open var preferredSampleRate: Double { lock.lock(); defer { lock.unlock() }; return _preferredRate }

    /// Asks for an I/O buffer duration in seconds (0: no preference): the PulseAudio target
    /// latency of engines started afterwards (at least 5 ms, at most 2 s).
    open func setPreferredIOBufferDuration(_ duration: TimeInterval) throws {
        guard duration >= 0, duration.isFinite else {
            throw avError(kAudioSessionErrorParamErr, "AVAudioSession.setPreferredIOBufferDuration: \(duration) s is not a duration")
        }
        lock.lock(); defer { lock.unlock() }
        _preferredIO = duration
    }

    /// The preferred I/O buffer duration (0: none).
    open var preferredIOBufferDuration: TimeInterval { lock.lock(); defer { lock.unlock() }; return _preferredIO }

    /// The rate engines render at: the output device's (the PulseAudio sink's, or the preferred
    /// rate when one is set, PulseAudio converting; an ALSA PCM's own rate nearest the preferred
    /// one; a WAV file's or the null output's `OAT_OUTPUT` `rate=`, else the preferred rate,
    /// else 48 kHz).
    open var sampleRate: Double { AVAudioEngine.deviceOutputFormat().sampleRate }

    /// The output buffering engines ask the device for, in seconds: the preferred duration
    /// (5 ms ... 2 s) if one was set, else PulseAudio's 0.1 s target (ALSA: four periods of 23 ms).
    open var ioBufferDuration: TimeInterval {
        let p = preferredIOBufferDuration
        if p > 0 { return min(2, max(0.005, p)) }
        return AudioOutput.Options().pulseLatency
    }

    /// The output latency in seconds: the I/O buffer the device holds.
    open var outputLatency: TimeInterval { ioBufferDuration }

    /// The input latency in seconds: one capture fragment (20 ms, PulseAudio's default here).
    open var inputLatency: TimeInterval { AudioInput.Options().pulseFragment }

    /// The output's channel count: the preferred count when one is set (engines started
    /// afterwards render and open their device with it), else the route's output port's (2
    /// without one; engines then use two).
    open var outputNumberOfChannels: Int {
        let p = preferredOutputNumberOfChannels
        return p > 0 ? p : maximumOutputNumberOfChannels
    }
    /// The input's channel count: the preferred count when one is set (the engine's input node
    /// captures that many), else the route's input port's (0 without one).
    open var inputNumberOfChannels: Int {
        let p = preferredInputNumberOfChannels
        return p > 0 ? p : maximumInputNumberOfChannels
    }
    /// The most output channels (the output port's; 2 without one).
    open var maximumOutputNumberOfChannels: Int { currentRoute.outputs.first?.channels?.count ?? 2 }
    /// The most input channels (the input port's; 0 without one).
    open var maximumInputNumberOfChannels: Int { currentRoute.inputs.first?.channels?.count ?? 0 }
    /// The preferred output channel count (0: none).
    open var preferredOutputNumberOfChannels: Int { lock.lock(); defer { lock.unlock() }; return _preferredChannels.output }
    /// The preferred input channel count (0: none).
    open var preferredInputNumberOfChannels: Int { lock.lock(); defer { lock.unlock() }; return _preferredChannels.input }

    /// Asks engines started afterwards to play `count` channels (1 ... ``maximumOutputNumberOfChannels``;
    /// 0: no preference): their output node, main mixer and device use that many (PulseAudio
    /// remixes to the sink; a WAV output has that many). Throws for a count out of range.
    open func setPreferredOutputNumberOfChannels(_ count: Int) throws {
        guard count == 0 || (1...max(1, maximumOutputNumberOfChannels)).contains(count) else {
            throw avError(kAudioSessionErrorParamErr, "AVAudioSession.setPreferredOutputNumberOfChannels: \(count) is not 1 ... \(maximumOutputNumberOfChannels)")
        }
        lock.lock(); defer { lock.unlock() }
        _preferredChannels.output = count
    }

    /// Asks the input node of engines made afterwards to capture `count` channels (1 ...
    /// ``maximumInputNumberOfChannels``; 0: no preference; PulseAudio remixes the source).
    /// Throws for a count out of range.
    open func setPreferredInputNumberOfChannels(_ count: Int) throws {
        guard count == 0 || (1...max(1, maximumInputNumberOfChannels)).contains(count) else {
            throw avError(kAudioSessionErrorParamErr, "AVAudioSession.setPreferredInputNumberOfChannels: \(count) is not 1 ... \(maximumInputNumberOfChannels)")
        }
        lock.lock(); defer { lock.unlock() }
        _preferredChannels.input = count
    }

    /// Accepts the preference: here the engine's input and output always share its rate and
    /// I/O buffer duration (the input is converted to the engine's rate), which is what
    /// ``IOType/aggregated`` asks for.
    open func setAggregatedIOPreference(_ inIOType: IOType) throws {
        lock.lock(); defer { lock.unlock() }
        _ioType = inIOType
    }

    /// The route the engines would use now: the output is `OAT_OUTPUT`'s PulseAudio sink if it
    /// names one, else the default sink (ALSA's default device without a PulseAudio server);
    /// the input is the preferred input, else `OAT_INPUT`'s source, else the default source.
    open var currentRoute: AVAudioSessionRouteDescription {
        let devices = SessionDevices.list()
        let preferred = preferredInput
        return devices.route(preferredInput: preferred?.uid)
    }

    /// Every input device (PulseAudio's sources, monitors included, or ALSA's capture devices).
    open var availableInputs: [AVAudioSessionPortDescription]? { SessionDevices.list().inputs.map(\.port) }

    /// The input chosen with ``setPreferredInput(_:)``, if any.
    open var preferredInput: AVAudioSessionPortDescription? { lock.lock(); defer { lock.unlock() }; return _preferredInput }

    /// Chooses the input the route uses (one of ``availableInputs``; nil: the default again).
    open func setPreferredInput(_ inPort: AVAudioSessionPortDescription?) throws {
        if let inPort, !(availableInputs ?? []).contains(where: { $0.uid == inPort.uid }) {
            throw avError(kAudioSessionErrorParamErr, "AVAudioSession.setPreferredInput: \(inPort.uid) is not an available input")
        }
        lock.lock(); defer { lock.unlock() }
        _preferredInput = inPort
    }

    /// The data sources of the current input port (Apple's `inputDataSources`): none here, as
    /// on a Mac (PulseAudio sources have no built-in microphone positions).
    open var inputDataSources: [AVAudioSessionDataSourceDescription]? { nil }

    /// The current input data source (none here: see ``inputDataSources``).
    open var inputDataSource: AVAudioSessionDataSourceDescription? { nil }

    /// Chooses the input port's data source (Apple's `setInputDataSource(_:)`). `nil` (no
    /// preference) succeeds; a source the input does not list throws `kAudioSessionErrorParamErr`
    /// naming it, as no port lists one here.
    open func setInputDataSource(_ dataSource: AVAudioSessionDataSourceDescription?) throws {
        guard let dataSource else { return }
        if !(inputDataSources ?? []).contains(where: { $0.dataSourceID == dataSource.dataSourceID }) {
            throw avError(kAudioSessionErrorParamErr,
                          "AVAudioSession.setInputDataSource: data source \(dataSource.dataSourceID) (\"\(dataSource.dataSourceName)\") is not one of the input's")
        }
    }

    /// Whether haptics and system sounds may play while recording (Apple's; default false).
    open var allowHapticsAndSystemSoundsDuringRecording: Bool { lock.lock(); defer { lock.unlock() }; return _allowHaptics }

    /// Allows haptics and system sounds while recording (Apple's
    /// `setAllowHapticsAndSystemSoundsDuringRecording(_:)`). Kept and reported; nothing here
    /// silences system sounds during a recording, so it changes no sound.
    open func setAllowHapticsAndSystemSoundsDuringRecording(_ inValue: Bool) throws {
        lock.lock(); defer { lock.unlock() }
        _allowHaptics = inValue
    }

    /// Accepts `.none` and `.speaker` (there is one output route here: nothing changes).
    open func overrideOutputAudioPort(_ portOverride: PortOverride) throws {}

    // MARK: Recording permission

    /// `granted` once asked (Linux asks no one; until then `undetermined`, as on a new iPhone).
    open var recordPermission: RecordPermission { lock.lock(); defer { lock.unlock() }; return _permission }

    /// Grants recording (nothing to ask on Linux) and calls `response` with true, on another thread.
    open func requestRecordPermission(_ response: @escaping (Bool) -> Void) {
        lock.lock(); _permission = .granted; lock.unlock()
        let box = UncheckedBox(response)
        Thread.detachNewThread { box.value(true) }
    }

    // MARK: Posting

    func post(routeChange reason: RouteChangeReason, previous: AVAudioSessionRouteDescription) {
        NotificationCenter.default.post(name: Self.routeChangeNotification, object: self,
                                        userInfo: [AVAudioSessionRouteChangeReasonKey: NSNumber(value: reason.rawValue),
                                                   AVAudioSessionRouteChangePreviousRouteKey: previous])
    }

    func post(interruption type: InterruptionType) {
        var info: [AnyHashable: Any] = [AVAudioSessionInterruptionTypeKey: NSNumber(value: type.rawValue)]
        if type == .ended { info[AVAudioSessionInterruptionOptionKey] = NSNumber(value: InterruptionOptions.shouldResume.rawValue) }
        if type == .began { info[AVAudioSessionInterruptionReasonKey] = NSNumber(value: InterruptionReason.routeDisconnected.rawValue) }
        NotificationCenter.default.post(name: Self.interruptionNotification, object: self, userInfo: info)
    }
}

/// `kAudioSessionErrorParamErr` / unsupported property: AVAudioSession's error codes
/// (`AVAudioSession.ErrorCode.badParam` is '!prm', unsupported is 'what'... here the
/// Audio Session statuses Apple's older API used).
let kAudioSessionErrorParamErr: OSStatus = -50
let kAudioSessionErrorUnsupportedProperty: OSStatus = 0x7768_743F // 'wht?'

struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
