#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCommands
import DouctlSystem

Interrupt.install()
exit(Douctl.main(.current()))
