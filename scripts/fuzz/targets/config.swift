// Fuzz target: the config.json loader (profiles, presets, keys), and its write-back round trip.
@testable import DouctlCore
import DouctlJSON

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let json = try? JSONParser.parse(bytes) else { return 0 }
    let config: ConfigFile
    do {
        config = try ConfigFile.decode(json, path: "/fuzz/config.json")
    } catch {
        _ = "\(error)"
        return 0
    }
    // What douctl writes back must load again, unchanged.
    let written = config.encoded()
    guard let again = try? ConfigFile.decode(written, path: "/fuzz/config.json") else {
        fuzzFailure("a loaded config does not load again after writing")
    }
    if again != config { fuzzFailure("config changed across a write and a load") }
    return 0
}
