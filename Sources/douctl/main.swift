#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCommands
import DouctlHTTP
import DouctlSystem

Interrupt.install()
let status = Douctl.main(.current())
CurlLibrary.settle()
exit(status)
