// oat-tools: afplay, afinfo, afconvert and afrecord in one program, busybox style: the name it is
// run by (argv[0]'s last path component, e.g. the link /usr/bin/afplay) picks the tool, or
// `oat-tools TOOL [ARGUMENTS...]` names it. One copy of the Swift runtime and of the package's
// code serves the four tools (the Debian package installs this, docs/shipping.md). Each tool's
// code is a library target (OATToolAfplay, ...) that its own thin executable runs as well.
import OATToolAfconvert
import OATToolAfinfo
import OATToolAfplay
import OATToolAfrecord
#if canImport(Glibc)
import Glibc
#endif

let tools = ["afplay", "afinfo", "afconvert", "afrecord"]
var arguments = Array(CommandLine.arguments.dropFirst())
var name = CommandLine.arguments.first.map { String($0.split(separator: "/", omittingEmptySubsequences: false).last ?? "") } ?? ""
if !tools.contains(name), let first = arguments.first, tools.contains(first) {
    name = first
    arguments.removeFirst()
}
switch name {
case "afplay": runAfplay(arguments: arguments)
case "afinfo": runAfinfo(arguments: arguments)
case "afconvert": runAfconvert(arguments: arguments)
case "afrecord": runAfrecord(arguments: arguments)
default:
    let message = "usage: oat-tools TOOL [ARGUMENTS...], or run it by a link named after the tool\n"
        + "  TOOL: \(tools.joined(separator: ", "))\n"
    _ = message.withCString { write(2, $0, strlen($0)) }
    exit(2)
}
