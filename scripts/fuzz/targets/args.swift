// Fuzz target: the argument parser over douctl's real command tree. Input: argv, NUL-separated.
import DouctlArguments
import DouctlCommands

let parser = ArgumentParser(root: Douctl.rootSpec)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let argv = ["douctl"] + pieces(data, size)
    do {
        _ = try parser.parse(argv)
    } catch {
        // The error line a user would see, "did you mean" included.
        _ = error.description
    }
    // Without the program name too, the way some callers pass it.
    _ = try? parser.parse(Array(argv.dropFirst()))
    return 0
}
