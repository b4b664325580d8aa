// afinfo: a thin main. The tool's code is the library target OATToolAfinfo, which the
// multi-call binary oat-tools (Sources/oat-tools, what the Debian package installs) also runs.
import OATToolAfinfo

runAfinfo(arguments: Array(CommandLine.arguments.dropFirst()))
