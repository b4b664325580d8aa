// HTTPByteSource, request outcomes: libcurl errors and response heads turned into ByteSourceInfo
// or a TransferFault (retryable or not, with its Retry-After).
import OATCore
import COATCurlHeaders
import COATCurl
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Request outcomes

/// Why a transfer failed, and whether it is worth retrying.
struct TransferFault: Error {
    var error: AudioError
    var retryable: Bool
    var retryAfter: Double?
    /// A trickle (bytes arriving, but too few): the connection never counts as healthy.
    var slow = false
}

extension HTTPByteSource.Core {
    /// The fault of a transfer that ended with a libcurl error (or before its head).
    func fault(of t: HTTPTransferState) -> TransferFault {
        if t.interimOverflow {
            return TransferFault(error: AudioError(.limitExceeded, component: component,
                "\(displayURL) sent more than \(HTTPTransferState.maximumInterimResponses) interim (1xx) responses before its answer"), retryable: false)
        }
        if t.headerOverflow {
            return TransferFault(error: AudioError(.limitExceeded, component: component,
                "response head from \(displayURL) exceeds \(options.maximumHeaderBytes) bytes"), retryable: false)
        }
        if let s = t as? SocketTransfer {
            return s.fault ?? TransferFault(error: AudioError(.network, component: component, "\(displayURL) closed the connection before the response head"), retryable: true)
        }
        guard let t = t as? CurlTransfer else {
            return TransferFault(error: AudioError(.network, component: component, "cannot read \(displayURL)"), retryable: true)
        }
        let code = t.result
        let message = t.message
        let underlying = "curl \(code.rawValue): \(message)"
        switch code {
        case CURLE_TOO_MANY_REDIRECTS:
            var n = 0
            _ = oat_curl_getinfo_long(t.easy, CURLINFO_REDIRECT_COUNT, &n)
            return TransferFault(error: AudioError(.network, component: component,
                "too many redirects from \(displayURL): the chain is longer than \(options.maximumRedirects) (followed \(n))", underlying: underlying), retryable: false)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM:
            return TransferFault(error: AudioError(.network, component: component,
                "TLS certificate of \(displayURL) was not accepted (set allowsInsecureTLS to skip verification)", underlying: underlying), retryable: false)
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return TransferFault(error: AudioError(.invalidArgument, component: component, "cannot fetch \(displayURL)", underlying: underlying), retryable: false)
        case CURLE_WRITE_ERROR:
            return TransferFault(error: AudioError(.network, component: component, "transfer of \(displayURL) aborted", underlying: underlying), retryable: false)
        case CURLE_OPERATION_TIMEDOUT:
            return TransferFault(error: AudioError(.timedOut, component: component, "connecting to \(displayURL) timed out", underlying: underlying), retryable: true)
        case CURLE_OK:
            return TransferFault(error: AudioError(.network, component: component, "\(displayURL) closed the connection before the response head"), retryable: true)
        default:
            return TransferFault(error: AudioError(.network, component: component, "cannot read \(displayURL)", underlying: underlying), retryable: true)
        }
    }

    /// Checks the final response head; on success, arms the body and returns its info.
    func evaluateHead(_ t: HTTPTransferState, offset: Int64, audioBase: Int64, source: HTTPByteSource) -> Result<ByteSourceInfo, TransferFault> {
        let status = t.status
        guard (200..<300).contains(status) else {
            let fail: TransferFault
            let retryAfter = t.header("retry-after").flatMap(parseRetryAfter)
            switch status {
            case 429, 500...599:
                fail = TransferFault(error: AudioError(.network, component: component, "\(displayURL) answered HTTP \(status)", underlying: "HTTP \(status)"),
                                     retryable: true, retryAfter: retryAfter)
            case 416:
                fail = TransferFault(error: AudioError(.invalidArgument, component: component, "\(displayURL) has no byte \(offset) (HTTP 416)", underlying: "HTTP 416"), retryable: false)
            case 300..<400:
                fail = TransferFault(error: AudioError(.network, component: component, "\(displayURL) answered HTTP \(status) without a usable Location", underlying: "HTTP \(status)"), retryable: false)
            default:
                fail = TransferFault(error: AudioError(.network, component: component, "\(displayURL) answered HTTP \(status)\(statusName(status))", underlying: "HTTP \(status)"), retryable: false)
            }
            finishTransfer()
            return .failure(fail)
        }
        let finalURL = t.effectiveURL ?? url
        var contentType: String? = nil
        if let ct = t.header("content-type") {
            let main = ct.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            let trimmed = main.trimmingBlanks().lowercased()
            if !trimmed.isEmpty { contentType = trimmed }
        }
        let contentLength = t.header("content-length").flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
        var total: Int64? = nil
        var start: Int64 = 0
        if status == 206 {
            guard let cr = t.header("content-range"), let range = parseContentRange(cr) else {
                finishTransfer()
                return .failure(TransferFault(error: AudioError(.invalidData, component: component,
                    "\(displayURL) answered 206 without a valid Content-Range"), retryable: false))
            }
            guard range.first == offset else {
                finishTransfer()
                return .failure(TransferFault(error: AudioError(.invalidData, component: component,
                    "\(displayURL) answered the range request for byte \(offset) with bytes from \(range.first)"), retryable: false))
            }
            start = offset
            total = range.total
        } else {
            total = contentLength
            if offset > 0 {
                guard offset <= options.maximumRangeSkip else {
                    finishTransfer()
                    return .failure(TransferFault(error: AudioError(.unsupportedFormat, component: component,
                        "\(displayURL) ignored the range request for byte \(offset) (answered 200); skipping more than \(options.maximumRangeSkip) bytes is refused"), retryable: false))
                }
                t.discard = offset
                start = offset
            }
        }
        let acceptRanges = t.header("accept-ranges")?.lowercased().contains("bytes") ?? false
        var icy: ICYStationInfo? = nil
        let hasICY = t.headers.contains { $0.name.hasPrefix("icy-") || $0.name.hasPrefix("ice-") }
        if hasICY {
            icy = ICYStationInfo(name: t.header("icy-name"), genre: t.header("icy-genre"), url: t.header("icy-url"),
                                 description: t.header("icy-description"),
                                 bitRate: t.header("icy-br").flatMap { Int($0.split(separator: ",").first ?? "") },
                                 metaInterval: t.header("icy-metaint").flatMap { Int($0) })
        }
        // With ICY metadata interleaved, lengths and ranges count metadata bytes too: the audio
        // stream has no usable length and cannot be resumed by byte.
        let demuxes = options.requestsICYMetadata && icy?.metaInterval != nil
        if demuxes { total = nil }
        let seekable = !demuxes && total != nil && (acceptRanges || status == 206)
        let live = total == nil || t.headers.contains { $0.name.hasPrefix("icy-") }
        let i = ByteSourceInfo(url: finalURL, contentType: contentType, totalLength: total, startOffset: start,
                               isSeekable: seekable, isLive: live, headers: t.headers, icy: icy)
        if options.requestsICYMetadata, let metaint = icy?.metaInterval {
            // For a 200 to a range request the body starts at 0 and `discard` drops the skip.
            let base = t.discard > 0 ? audioBase - t.discard : audioBase
            do {
                t.demuxer = try ICYDemuxer(metaInterval: metaint, audioOffset: base, charset: options.icyCharset)
            } catch {
                finishTransfer()
                return .failure(TransferFault(error: AudioError(error.code, component: component, "\(displayURL): \(error.message)"), retryable: false))
            }
        }
        t.arm()
        return .success(i)
    }
}

extension String {
    init(format1 value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(tenths % 10)"
    }
}

private func statusName(_ status: Int) -> String {
    switch status {
    case 401: return " (unauthorized)"
    case 403: return " (forbidden)"
    case 404: return " (not found)"
    case 410: return " (gone)"
    default: return ""
    }
}

/// Parses `Retry-After`: delta seconds or an HTTP date; returns seconds from now.
func parseRetryAfter(_ value: String) -> Double? {
    let v = value.trimmingBlanks()
    if let s = Int(v) { return s >= 0 ? Double(s) : nil }
    guard let t = parseHTTPDate(v) else { return nil }
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return max(0, Double(t) - Double(now.tv_sec))
}

/// Parses an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`,
/// or asctime `Sun Nov  6 08:49:37 1994`) to seconds since 1970; nil when it is none of them.
func parseHTTPDate(_ value: String) -> Int? {
    let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    let tokens = value.lowercased().split { $0 == " " || $0 == "," || $0 == "-" || $0 == "\t" }.map(String.init)
    guard tokens.count >= 5, tokens.count <= 8 else { return nil }
    var month: Int? = nil, day: Int? = nil, year: Int? = nil, time: (Int, Int, Int)? = nil
    for t in tokens {
        if let m = months.firstIndex(of: t) { month = m + 1; continue }
        if t.contains(":") {
            let p = t.split(separator: ":").compactMap { Int($0) }
            guard p.count == 3, (0...23).contains(p[0]), (0...59).contains(p[1]), (0...60).contains(p[2]) else { return nil }
            time = (p[0], p[1], p[2])
            continue
        }
        if let n = Int(t), t.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            if t.count == 4 { year = n } else if t.count <= 2 && day == nil && (1...31).contains(n) { day = n } else if t.count == 2 && year == nil {
                year = n < 70 ? 2000 + n : 1900 + n
            } else { return nil }
            continue
        }
        guard t == "gmt" || t == "utc" || t.allSatisfy({ $0.isLetter }) else { return nil }
    }
    guard let month, let day, let year, let time, year >= 1970, year < 10000 else { return nil }
    // Days from 1970-01-01 (the civil-from-days inverse).
    let y = month <= 2 ? year - 1 : year
    let era = y / 400
    let yoe = y - era * 400
    let mp = (month + 9) % 12
    let doy = (153 * mp + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    let days = era * 146_097 + doe - 719_468
    return days * 86_400 + time.0 * 3600 + time.1 * 60 + time.2
}
