#if canImport(Glibc)
import Glibc
#endif
import OATCore

/// A private Icecast2 server for tests: its own configuration, log and web directories in a
/// scratch directory, listening on 127.0.0.1 on a free port, started by the test and stopped by
/// PID. Mounts are fed by real source clients (``startSource(mount:file:format:contentType:loop:)``
/// runs `ffmpeg -re ... icecast://`), and titles are set through the admin interface
/// (``setTitle(mount:_:)``), as a station would.
///
/// Icecast refuses to run as root unless it changes its owner: as root, the configuration has
/// `<changeowner>` to the Debian package's `icecast2` user and the scratch directory is handed to
/// that user.
public final class IcecastTestServer: @unchecked Sendable {
    /// The scratch directory (configuration, logs).
    public let directory: String
    /// The port it listens on (127.0.0.1).
    public let port: Int
    /// The source password.
    public let sourcePassword = IcecastTestServer.sourcePW
    private static let sourcePW = "oat-source"
    /// The admin password (user `admin`).
    public let adminPassword = IcecastTestServer.adminPW
    private static let adminPW = "oat-admin"
    /// The server process.
    public private(set) var process: ChildProcess?
    private var sources: [String: ChildProcess] = [:]

    /// Why the server cannot run here, or nil.
    public static var unavailableReason: String? {
        if ChildProcess.which("icecast2") == nil { return "icecast2 is not installed (Scripts/setup.sh installs it)" }
        if ChildProcess.which("ffmpeg") == nil { return "ffmpeg is not installed (the source client)" }
        return nil
    }

    /// Writes the configuration and starts the server, waiting until it accepts connections.
    public init() throws(AudioError) {
        guard let binary = ChildProcess.which("icecast2") else {
            throw AudioError(.deviceUnavailable, component: "IcecastTestServer", Self.unavailableReason ?? "no icecast2")
        }
        var template = Array("/tmp/oat-icecast-XXXXXX".utf8CString)
        guard let dir = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw AudioError(.io, component: "IcecastTestServer", "cannot create a scratch directory")
        }
        let dirPath = String(cString: dir)
        directory = dirPath
        mkdir("\(dirPath)/log", 0o755)
        var owner = ""
        if getuid() == 0 {
            // Icecast will not run as root: run as the package's user and let it write its logs.
            guard let pw = getpwnam("icecast2") else {
                removeTree(dirPath)
                throw AudioError(.deviceUnavailable, component: "IcecastTestServer", "running as root needs the icecast2 user (install the icecast2 package)")
            }
            let group = getgrgid(pw.pointee.pw_gid).map { String(cString: $0.pointee.gr_name) } ?? "icecast"
            owner = "<security><chroot>0</chroot><changeowner><user>icecast2</user><group>\(group)</group></changeowner></security>"
            chmod(dirPath, 0o755)
            chown("\(dirPath)/log", pw.pointee.pw_uid, pw.pointee.pw_gid)
        }
        // The port is free when chosen, but another test's server (or a client's local port) can
        // take it before Icecast binds it; then Icecast exits, and a bare TCP check could even
        // succeed against the other server. So the server counts as up only when our Icecast
        // answers its admin interface with our password; otherwise it is stopped and started
        // again on another port.
        var log: [UInt8] = []
        for _ in 0..<4 {
            let candidate = try Self.freePort()
            guard writeFile("\(dirPath)/icecast.xml", Array(Self.configuration(port: candidate, directory: dirPath, owner: owner,
                                                                                 sourcePassword: Self.sourcePW, adminPassword: Self.adminPW).utf8)) else {
                removeTree(dirPath)
                throw AudioError(.io, component: "IcecastTestServer", "cannot write the configuration")
            }
            chmod("\(dirPath)/icecast.xml", 0o644)
            let p = try ChildProcess.spawn(binary, ["-c", "\(dirPath)/icecast.xml"], outputPath: "\(dirPath)/stdout.log")
            let deadline = HostTime.now() + HostTime.ticks(seconds: 10)
            while HostTime.now() < deadline && p.isRunning {
                if Self.tcpAccepts(port: candidate),
                   let r = try? LoopbackHTTP.get(port: candidate, path: "/admin/listmounts", user: "admin", password: Self.adminPW, maxBody: 1 << 16),
                   r.status == 200, p.isRunning {
                    port = candidate
                    process = p
                    return
                }
                usleep(10_000)
            }
            log = (Corpus.read("\(dirPath)/stdout.log") ?? []) + (Corpus.read("\(dirPath)/log/error.log") ?? [])
            p.killNow()
        }
        removeTree(dirPath)
        throw AudioError(.deviceUnavailable, component: "IcecastTestServer", "icecast2 did not come up (4 ports tried)",
                         underlying: String(decoding: log.suffix(2000), as: UTF8.self))
    }

    /// The server's configuration for `port`.
    private static func configuration(port: Int, directory: String, owner: String, sourcePassword: String, adminPassword: String) -> String {
        let web = "/usr/share/icecast2"
        return """
        <icecast>
          <location>loopback</location><admin>test@localhost</admin>
          <limits><clients>64</clients><sources>8</sources><queue-size>1048576</queue-size>
            <client-timeout>30</client-timeout><header-timeout>15</header-timeout><source-timeout>10</source-timeout>
            <burst-on-connect>1</burst-on-connect><burst-size>65536</burst-size></limits>
          <authentication><source-password>\(sourcePassword)</source-password><relay-password>\(sourcePassword)</relay-password>
            <admin-user>admin</admin-user><admin-password>\(adminPassword)</admin-password></authentication>
          <hostname>127.0.0.1</hostname>
          <listen-socket><port>\(port)</port><bind-address>127.0.0.1</bind-address></listen-socket>
          <fileserve>1</fileserve>
          <paths><basedir>\(web)</basedir><logdir>\(directory)/log</logdir><webroot>\(web)/web</webroot><adminroot>\(web)/admin</adminroot>
            <alias source="/" destination="/status.xsl"/></paths>
          <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog><loglevel>3</loglevel><logsize>10000</logsize></logging>
          \(owner)
        </icecast>

        """
    }

    /// The URL of `mount` (e.g. `/radio.mp3`).
    public func url(_ mount: String) -> String { "http://127.0.0.1:\(port)\(mount)" }

    /// Starts a source client: `ffmpeg -re` sends `file` to `mount` without re-encoding
    /// (`-c copy`) in the container `format` (`mp3`, `adts`, `ogg`), looping when `loop` is set;
    /// waits until the mount is live.
    public func startSource(mount: String, file: String, format: String, contentType: String, loop: Bool = false) throws(AudioError) {
        guard let ffmpeg = ChildProcess.which("ffmpeg") else {
            throw AudioError(.deviceUnavailable, component: "IcecastTestServer", "ffmpeg is not installed")
        }
        var args = ["-hide_banner", "-loglevel", "error", "-nostdin", "-re"]
        if loop { args += ["-stream_loop", "-1"] }
        args += ["-i", file, "-map", "0:a", "-c", "copy", "-content_type", contentType, "-ice_name", "OAT test"]
        // Ogg pages of 0.2 s instead of the muxer's 1 s: a live station's latency.
        if format == "ogg" { args += ["-page_duration", "200000"] }
        args += ["-f", format,
                 "icecast://source:\(sourcePassword)@127.0.0.1:\(port)\(mount)"]
        let name = String(mount.map { $0 == "/" ? "_" : $0 })
        let p = try ChildProcess.spawn(ffmpeg, args, outputPath: "\(directory)/source\(name).log")
        sources[mount] = p
        let deadline = HostTime.now() + HostTime.ticks(seconds: 10)
        while HostTime.now() < deadline {
            if !p.isRunning { break }
            if let r = try? LoopbackHTTP.get(port: port, path: "/admin/listmounts", user: "admin", password: adminPassword, maxBody: 1 << 16),
               String(decoding: r.body, as: UTF8.self).contains("mount=\"\(mount)\"") {
                return
            }
            usleep(20_000)
        }
        let log = Corpus.read("\(directory)/source\(name).log") ?? []
        throw AudioError(.network, component: "IcecastTestServer", "the source client for \(mount) did not go live",
                         underlying: String(decoding: log.suffix(1000), as: UTF8.self))
    }

    /// Sets the title of `mount` through the admin interface (`mode=updinfo`); true on success.
    @discardableResult
    public func setTitle(mount: String, _ title: String) -> Bool {
        let path = "/admin/metadata?mount=\(Self.percentEncoded(mount))&mode=updinfo&song=\(Self.percentEncoded(title))"
        guard let r = try? LoopbackHTTP.get(port: port, path: path, user: "admin", password: adminPassword, maxBody: 1 << 16) else { return false }
        return r.status == 200
    }

    /// Stops the source client of `mount` (by PID).
    public func stopSource(mount: String) {
        sources.removeValue(forKey: mount)?.terminate()
    }

    /// Stops every source client and the server (by PID) and removes the scratch directory.
    public func stop() {
        for (_, p) in sources { p.terminate() }
        sources.removeAll()
        process?.terminate()
        process = nil
        removeTree(directory)
    }

    deinit { stop() }

    static func percentEncoded(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(Character(UnicodeScalar(b)))
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%\(hex[Int(b >> 4)])\(hex[Int(b & 15)])"
            }
        }
        return out
    }

    /// A free TCP port on 127.0.0.1 (bound to port 0, then released).
    public static func freePort() throws(AudioError) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AudioError(.io, component: "IcecastTestServer", "cannot create a socket") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw AudioError(.io, component: "IcecastTestServer", "cannot bind a port") }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// True if 127.0.0.1:`port` accepts a TCP connection.
    public static func tcpAccepts(port: Int) -> Bool {
        guard let fd = try? LoopbackHTTP.connect(port: port) else { return false }
        close(fd)
        return true
    }
}

/// A minimal HTTP/1.0 GET over loopback for test harnesses (admin requests, recording what a
/// server sends). Not a client for the player: that is the project's byte sources.
public enum LoopbackHTTP {
    /// A response: status, lower-cased header fields, body bytes.
    public struct Response: Sendable {
        /// The status code (200 for `ICY 200 OK`).
        public var status: Int
        /// Header fields, names lower-cased.
        public var headers: [String: String]
        /// The body (up to the requested maximum).
        public var body: [UInt8]
    }

    static func connect(port: Int) throws(AudioError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AudioError(.network, component: "LoopbackHTTP", "cannot create a socket") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw AudioError(.network, component: "LoopbackHTTP", "cannot connect to 127.0.0.1:\(port)")
        }
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// GETs `path` from 127.0.0.1:`port`, reading at most `maxBody` body bytes (or for at most
    /// `seconds` seconds); basic auth when `user` is given; `headers` are added.
    public static func get(port: Int, path: String, user: String? = nil, password: String = "", headers: [String] = [],
                           maxBody: Int, seconds: Double = 10) throws(AudioError) -> Response {
        let fd = try connect(port: port)
        defer { close(fd) }
        var request = "GET \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\nUser-Agent: oat-tests\r\n"
        if let user { request += "Authorization: Basic \(base64(Array("\(user):\(password)".utf8)))\r\n" }
        for h in headers { request += "\(h)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw AudioError(.network, component: "LoopbackHTTP", "cannot send the request for \(path)")
        }
        var data: [UInt8] = []
        var headerEnd: Int?
        var chunk = [UInt8](repeating: 0, count: 16384)
        let deadline = HostTime.now() + HostTime.ticks(seconds: seconds)
        while HostTime.now() < deadline {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += chunk[0..<n]
            if headerEnd == nil, let end = find(data, Array("\r\n\r\n".utf8)) { headerEnd = end + 4 }
            if let h = headerEnd, data.count - h >= maxBody { break }
        }
        guard let h = headerEnd else { throw AudioError(.network, component: "LoopbackHTTP", "no response head for \(path)") }
        let head = String(decoding: data[0..<h], as: UTF8.self).split(separator: "\r\n")
        let statusParts = head.first?.split(separator: " ") ?? []
        let status = statusParts.count > 1 ? Int(statusParts[1]) ?? 0 : 0
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: " ")
        }
        return Response(status: status, headers: fields, body: Array(data[h..<min(data.count, h + maxBody)]))
    }

    static func find(_ data: [UInt8], _ needle: [UInt8]) -> Int? {
        guard data.count >= needle.count else { return nil }
        for i in 0...(data.count - needle.count) where data[i] == needle[0] && Array(data[i..<(i + needle.count)]) == needle { return i }
        return nil
    }

    static func base64(_ bytes: [UInt8]) -> String {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var out = ""
        var i = 0
        while i < bytes.count {
            let b0 = Int(bytes[i]), b1 = i + 1 < bytes.count ? Int(bytes[i + 1]) : 0, b2 = i + 2 < bytes.count ? Int(bytes[i + 2]) : 0
            out.append(table[b0 >> 2])
            out.append(table[(b0 & 3) << 4 | b1 >> 4])
            out.append(i + 1 < bytes.count ? table[(b1 & 15) << 2 | b2 >> 6] : "=")
            out.append(i + 2 < bytes.count ? table[b2 & 63] : "=")
            i += 3
        }
        return out
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = self
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
