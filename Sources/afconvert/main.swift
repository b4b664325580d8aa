// afconvert: a thin main. The tool's code is the library target OATToolAfconvert, which the
// multi-call binary oat-tools (Sources/oat-tools, what the Debian package installs) also runs.
import OATToolAfconvert

runAfconvert(arguments: Array(CommandLine.arguments.dropFirst()))
