import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What a test needs from the machine (the reference corpus, a PulseAudio binary, ffmpeg, a
/// built tool, root for a tmpfs) and what happens when it is missing: the test is skipped,
/// visibly (Swift Testing reports the skip and why), except in CI (`CI=true`), where the setup
/// installs everything: there the test runs and fails on the missing resource. No test passes
/// by returning early.
///
/// On a test or suite: `@Test(.requires(TestResource.corpusMissing))`; inside it, where the
/// resource is used: `let root = try TestResource.corpusRoot()` (a failure naming what is
/// missing, also in CI).
public enum TestResource {
    /// True in CI (the environment has `CI=true`): a missing resource fails the run there.
    public static var inCI: Bool {
        guard let v = getenv("CI") else { return false }
        let s = String(cString: v).lowercased()
        return s == "true" || s == "1" || s == "yes"
    }

    /// For `.enabled(if:)`: true when nothing is missing (`missing` nil), and in CI whatever is
    /// missing (the test then runs and fails on it).
    public static func isUsable(_ missing: String?) -> Bool { missing == nil || inCI }

    /// The comment a skip shows: what is missing and how to get it.
    public static func comment(_ missing: String?) -> Comment {
        Comment(rawValue: missing.map { "skipped: \($0)" } ?? "")
    }

    /// Why corpus tests cannot run (`../shared/corpus` absent and `OAT_CORPUS` unset), or nil.
    public static var corpusMissing: String? { Corpus.root == nil ? Corpus.absentMessage : nil }

    /// Why tests that start a private PulseAudio daemon cannot run, or nil.
    public static var pulseAudioMissing: String? {
        if let reason = PulseTestDaemon.unavailableReason { return reason }
        if ChildProcess.which("parec") == nil { return "parec is not installed (pulseaudio-utils; Scripts/setup.sh installs it)" }
        return nil
    }

    /// Why tests through ALSA's `pulse` plugin cannot run (the plugin is missing), or nil.
    public static var alsaPulsePluginMissing: String? {
        let dirs = ["/usr/lib/x86_64-linux-gnu/alsa-lib", "/usr/lib/aarch64-linux-gnu/alsa-lib", "/usr/lib/alsa-lib", "/usr/lib64/alsa-lib"]
        if dirs.contains(where: { access($0 + "/libasound_module_pcm_pulse.so", R_OK) == 0 }) { return nil }
        return "ALSA's pulse plugin is not installed (libasound2-plugins; Scripts/setup.sh installs it)"
    }

    /// Why tests that run the `ffmpeg` (and `ffprobe`) commands cannot run, or nil.
    public static var ffmpegMissing: String? {
        if ChildProcess.which("ffmpeg") == nil { return "ffmpeg is not installed (Scripts/setup.sh installs it)" }
        if ChildProcess.which("ffprobe") == nil { return "ffprobe is not installed (Scripts/setup.sh installs ffmpeg)" }
        return nil
    }

    /// The first of several reasons, or nil when none is set.
    public static func first(_ reasons: String?...) -> String? { reasons.compactMap { $0 }.first }

    /// Inside a test: records a failure naming what is missing, and throws, when `missing` is
    /// set (a test that reaches here without it cannot mean anything).
    public static func require(_ missing: String?, sourceLocation: SourceLocation = #_sourceLocation) throws {
        if let missing {
            try #require(Bool(false), "required resource missing: \(missing)", sourceLocation: sourceLocation)
        }
    }

    /// The corpus folder, or a failure saying it is missing.
    public static func corpusRoot(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try require(corpusMissing, sourceLocation: sourceLocation)
        return Corpus.root!
    }

    /// `relative` inside the corpus, or a failure naming the missing corpus or file.
    public static func corpusFile(_ relative: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let path = try corpusRoot(sourceLocation: sourceLocation) + "/" + relative
        if access(path, R_OK) != 0 {
            try require("corpus file \(relative) is missing", sourceLocation: sourceLocation)
        }
        return path
    }

    /// A list of test arguments that comes from the corpus (or another resource): the list
    /// itself, after checking that it is not empty when `missing` is nil or in CI; an empty list
    /// otherwise (the suite is skipped by its trait). Use in the test that asserts the list.
    public static func nonEmpty<T>(_ list: [T], _ what: String, missing: String?, sourceLocation: SourceLocation = #_sourceLocation) {
        if isUsable(missing) {
            #expect(!list.isEmpty, "\(what) is empty\(missing.map { ": \($0)" } ?? "")", sourceLocation: sourceLocation)
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test when `missing` is nil; skips it, saying why, when a resource is missing
    /// outside CI; in CI always runs it (it fails on the missing resource).
    public static func requires(_ missing: String?, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(if: TestResource.isUsable(missing), TestResource.comment(missing), sourceLocation: sourceLocation)
    }
}
