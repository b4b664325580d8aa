// afplay: a thin main. The tool's code is the library target OATToolAfplay, which the
// multi-call binary oat-tools (Sources/oat-tools, what the Debian package installs) also runs.
import OATToolAfplay

runAfplay(arguments: Array(CommandLine.arguments.dropFirst()))
