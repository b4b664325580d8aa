/// The release of OpenAudioToolbox this build comes from.
///
/// The tools print it with `--version`; `CHANGELOG.md` lists what each release changed, and the
/// repository's `vMAJOR.MINOR.PATCH` tags mark the releases (semantic versioning: before 1.0 a
/// minor release may change the Swift API, a patch release never does).
public enum OpenAudioToolboxVersion {
    /// The version as `MAJOR.MINOR.PATCH`.
    public static let string = "0.1.0"

    /// The line a tool prints for `--version`, e.g. `afplay (OpenAudioToolbox) 0.1.0`.
    public static func line(tool: String) -> String {
        "\(tool) (OpenAudioToolbox) \(string)\n"
    }
}
