// Fuzz target: the JSON parser, the tree writer and the streaming reformatter.
// Differential: JSONReformatter promises to accept and reject exactly what JSONParser does and to
// print what the parsed tree prints, so any disagreement is a finding, not just a crash.
import DouctlJSON

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let parsed = try? JSONParser.parse(bytes)
    for format in [JSONFormat.pretty, .compact] {
        let reformatted = try? JSONReformatter.reformat(bytes, format: format)
        guard let parsed else {
            if reformatted != nil { fuzzFailure("reformatter accepted what the parser rejected") }
            continue
        }
        guard let reformatted else { fuzzFailure("reformatter rejected what the parser accepted") }
        let written = parsed.serialized(format)
        if written != reformatted { fuzzFailure("reformatter and writer disagree (\(format))") }
        // What douctl prints must read back as the same value.
        guard let again = try? JSONParser.parse(written) else { fuzzFailure("output does not parse again") }
        if again != parsed { fuzzFailure("output parses to a different value") }
    }
    if let parsed {
        _ = parsed.stringValue; _ = parsed.int64Value; _ = parsed.doubleValue; _ = parsed.scalarText
        _ = parsed.description
    }
    return 0
}
