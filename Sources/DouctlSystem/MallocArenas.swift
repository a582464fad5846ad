#if canImport(Glibc)
import Glibc
#endif

/// glibc's malloc gives busy threads up to 8 arenas per core, each keeping its own free pages.
/// A server that runs each connection on a thread of its own sees its RSS creep as arenas fill
/// up; limiting them trades a little contention for a flat footprint.
public enum MallocArenas {
    /// Limits glibc to `count` arenas; does nothing elsewhere. `mallopt` is looked up at run
    /// time because Swift's Glibc module does not export <malloc.h>.
    public static func limit(to count: Int32) {
        #if os(Linux)
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let arenaMax: Int32 = -8  // M_ARENA_MAX in <malloc.h>
        _ = mallopt(arenaMax, count)
        #endif
    }
}
