#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCommands
import DouctlSystem

// First, before anything can open a file or a socket: a closed 0, 1 or 2 becomes /dev/null.
if !StandardDescriptors.ensureOpen() { exit(3) }
Interrupt.install()
// Then out with _exit, past the libraries' exit handlers (ProcessExit says why).
ProcessExit.finish(Douctl.main(.current()))
