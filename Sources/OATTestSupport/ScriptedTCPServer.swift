#if canImport(Glibc)
import Glibc
#endif
import OATCore

/// A loopback TCP server that answers each connection with a script of raw bytes, pauses and a
/// close: for clients facing servers that break HTTP (huge or malformed heads, bad chunking,
/// early closes). Connections are served one after another on one thread; every request head is
/// recorded.
public final class ScriptedTCPServer: @unchecked Sendable {
    /// One step of a reply.
    public enum Step: Sendable {
        /// Writes these bytes (a write error ends the reply).
        case send([UInt8])
        /// Writes this text (UTF-8).
        case text(String)
        /// Writes `count` bytes of `byte` in pieces (huge heads without holding them in memory twice).
        case repeated(UInt8, count: Int)
        /// Waits this many seconds.
        case pause(Double)
        /// Keeps the connection open without sending until the server stops.
        case hang
    }

    /// The port on 127.0.0.1.
    public let port: Int
    private let listenFD: Int32
    private let scripts: [[Step]]
    private let state = Locked((requests: [String](), stopping: false, open: Int32(-1)))
    private var thread: JoinableThread?

    /// Serves `scripts[i]` to the i-th connection (the last script to any later one).
    public init(_ scripts: [[Step]]) throws(AudioError) {
        self.scripts = scripts.isEmpty ? [[]] : scripts
        let (fd, bound) = try listenOnLoopback(component: "ScriptedTCPServer", backlog: 16)
        port = bound
        listenFD = fd
        thread = try serveOnThread(listening: fd, name: "scripted-tcp") { [self] in serve() }
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT` + `path`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// The request heads received, in order.
    public var requests: [String] { state.withLock { $0.requests } }

    /// Stops serving, closes the open connection and joins the thread. Idempotent.
    public func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopping = true }
            if s.open >= 0 { shutdown(s.open, Int32(SHUT_RDWR)) }
            return !s.stopping
        }
        guard first else { return }
        shutdown(listenFD, Int32(SHUT_RDWR))
        thread?.join()
        Glibc.close(listenFD)
    }

    private func serve() {
        var index = 0
        while true {
            let c = accept(listenFD, nil, nil)
            if c < 0 {
                if errno == EINTR { continue }
                return
            }
            let go = state.withLock { s -> Bool in
                if s.stopping { return false }
                s.open = c
                return true
            }
            if !go { Glibc.close(c); return }
            var head: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 4096)
            while head.count < 64 * 1024 {
                let n = buf.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                head += buf[0..<n]
                if String(decoding: head, as: UTF8.self).contains("\r\n\r\n") { break }
            }
            state.withLock { $0.requests.append(String(decoding: head, as: UTF8.self)) }
            run(scripts[min(index, scripts.count - 1)], on: c)
            index += 1
            state.withLock { s in s.open = -1 }
            Glibc.close(c)
        }
    }

    private func run(_ script: [Step], on fd: Int32) {
        for step in script {
            if state.withLock({ $0.stopping }) { return }
            switch step {
            case .send(let b): if !write(b, fd) { return }
            case .text(let t): if !write(Array(t.utf8), fd) { return }
            case .repeated(let byte, let count):
                let piece = [UInt8](repeating: byte, count: 16 * 1024)
                var left = count
                while left > 0 {
                    if !write(Array(piece.prefix(left)), fd) { return }
                    left -= min(left, piece.count)
                }
            case .pause(let s):
                var ts = timespec(tv_sec: Int(s), tv_nsec: Int((s - Double(Int(s))) * 1e9))
                nanosleep(&ts, nil)
            case .hang:
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                while !state.withLock({ $0.stopping }) {
                    if poll(&p, 1, 50) > 0 {
                        var b: UInt8 = 0
                        if recv(fd, &b, 1, 0) <= 0 { return }
                    }
                }
            }
        }
    }

    private func write(_ bytes: [UInt8], _ fd: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }
}
