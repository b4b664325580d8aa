import OATFiles
#if canImport(Glibc)
import Glibc
#endif

/// Finds the shared outside-reference corpus (`../shared/corpus` from the package root).
public enum Corpus {
    /// The package root, derived from this source file's location.
    public static var packageRoot: String {
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3) // Sources/OATTestSupport/Corpus.swift
        return parts.joined(separator: "/")
    }

    /// The corpus folder, or nil when it is absent (a user's clone has no `../shared`).
    public static var root: String? {
        if let env = getenv("OAT_CORPUS") { return String(cString: env) }
        let path = packageRoot + "/../shared/corpus"
        var st = stat()
        return stat(path, &st) == 0 ? path : nil
    }

    /// Why corpus tests are skipped, when they are.
    public static let absentMessage = "../shared/corpus is absent: corpus tests skipped (set OAT_CORPUS to its path to run them)"

    /// Every audio file of the corpus, as paths relative to the corpus root, sorted.
    /// Manifests, licences, TSV/JSON facts and minimp3 reference PCM are left out.
    public static func audioFiles() -> [String] {
        guard let root else { return [] }
        var result: [String] = []
        func walk(_ rel: String) {
            guard let dir = opendir(root + "/" + rel) else { return }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name == "." || name == ".." { continue }
                let path = rel.isEmpty ? name : rel + "/" + name
                var st = stat()
                guard stat(root + "/" + path, &st) == 0 else { continue }
                if (st.st_mode & S_IFMT) == S_IFDIR { walk(path); continue }
                let lower = name.lowercased()
                let skip = [".md", ".tsv", ".json", ".txt", ".pcm", ".py", ".sh"].contains { lower.hasSuffix($0) }
                    || lower.hasPrefix("license") || lower.hasPrefix("readme")
                if !skip { result.append(path) }
            }
        }
        walk("")
        return result.filter(matchesFilter).sorted()
    }

    /// `OAT_CORPUS_FILTER=a,b` restricts corpus tests to files whose path contains `a` or `b`.
    static func matchesFilter(_ path: String) -> Bool {
        guard let raw = getenv("OAT_CORPUS_FILTER") else { return true }
        let parts = String(cString: raw).split(separator: ",").map(String.init)
        return parts.isEmpty || parts.contains { path.contains($0) }
    }

    /// Reads a whole file.
    public static func read(_ path: String) -> [UInt8]? {
        guard let f = fopen(path, "rb") else { return nil }
        defer { fclose(f) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            if n <= 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    /// One row of a folder's `ffprobe.tsv`: FFmpeg's facts about a file.
    public struct ProbeRow: Sendable {
        /// Path relative to the corpus root.
        public var file: String
        /// All columns by name.
        public var columns: [String: String]
        /// A column as an integer, if it parses.
        public func int(_ name: String) -> Int? { columns[name].flatMap { Int($0) } }
    }

    /// All rows of every folder's `ffprobe.tsv`.
    public static func probeRows() -> [ProbeRow] {
        guard let root else { return [] }
        var rows: [ProbeRow] = []
        for folder in ["debian-sounds", "ffmpeg-generated", "flac-test-files", "minimp3-vectors",
                       "python-stdlib-audiodata", "scipy-wavfile-data", "tinytag-samples"] {
            guard let bytes = read(root + "/" + folder + "/ffprobe.tsv") else { continue }
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
            guard let header = lines.first?.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) else { continue }
            for line in lines.dropFirst() {
                let cells = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                var columns: [String: String] = [:]
                for (i, name) in header.enumerated() where i < cells.count { columns[name] = cells[i] }
                let row = ProbeRow(file: folder + "/" + (columns["file"] ?? ""), columns: columns)
                if matchesFilter(row.file) { rows.append(row) }
            }
        }
        return rows
    }
}
