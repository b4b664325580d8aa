/// The one error type of OpenAudioToolbox.
///
/// Every failure carries a ``Code`` the caller can act on, the component that raised it, a
/// message, and where it applies the byte offset in the input and the underlying C or network
/// error. Its ``description`` is a single line suitable for a command-line tool's stderr.
public struct AudioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is; stable for programmatic handling.
    public enum Code: String, Sendable, Equatable, CaseIterable {
        /// The input is malformed (bad header, impossible size, broken sync).
        case invalidData
        /// The input is well formed but uses a format or feature that is not supported.
        case unsupportedFormat
        /// The input asked for more than a configured limit allows (buffer, chunk, count).
        case limitExceeded
        /// Reading or writing a file or stream failed.
        case io
        /// A network request failed.
        case network
        /// The requested audio device does not exist or cannot be opened.
        case deviceUnavailable
        /// An audio device went away while in use.
        case deviceLost
        /// The operation is not valid in the object's current state.
        case invalidState
        /// An argument is out of range or malformed.
        case invalidArgument
        /// A property or value is not known (yet).
        case valueUnknown
        /// The operation was cancelled (a stop, a dispose, a byte source's cancellation).
        case cancelled
        /// Nothing arrived within a configured time (a stalled stream, a silent server).
        case timedOut
    }

    /// What kind of failure this is.
    public var code: Code
    /// The component that raised the error, e.g. `"WAV parser"`, `"AudioFile"`.
    public var component: String
    /// A human-readable account of what went wrong.
    public var message: String
    /// The byte offset in the input where the problem was found, if it concerns input data.
    public var offset: Int64?
    /// The underlying error (a C status code, `errno` text, HTTP status) if there is one.
    public var underlying: String?
    /// The matching Audio Toolbox `OSStatus`, for the compatibility API.
    public var osStatus: Int32?

    /// Creates an error.
    public init(_ code: Code, component: String, _ message: String, offset: Int64? = nil,
                underlying: String? = nil, osStatus: Int32? = nil) {
        self.code = code
        self.component = component
        self.message = message
        self.offset = offset
        self.underlying = underlying
        self.osStatus = osStatus
    }

    /// `component: message (at byte N) [underlying]`, on one line.
    public var description: String {
        var s = "\(component): \(message)"
        if let offset { s += " (at byte \(offset))" }
        if let underlying { s += " [\(underlying)]" }
        return s
    }
}
