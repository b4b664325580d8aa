// afrecord: a thin main. The tool's code is the library target OATToolAfrecord, which the
// multi-call binary oat-tools (Sources/oat-tools, what the Debian package installs) also runs.
import OATToolAfrecord

runAfrecord(arguments: Array(CommandLine.arguments.dropFirst()))
