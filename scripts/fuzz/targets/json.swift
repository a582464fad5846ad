// Fuzz target: the JSON parser, the tree writer, the one-shot reformatter and the incremental one.
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
    // The incremental reformatter, fed in chunks of a size the input picks (1 to 64 bytes,
    // or whole), prints what the one-shot one prints, and rejects what it rejects with the
    // same error.
    let chunkSize = size > 0 && data[0] & 0x40 != 0 ? Int(data[0] & 0x3F) + 1 : max(size, 1)
    for format in [JSONFormat.pretty, .compact] {
        let oneShot = Result { () throws(JSONParseError) in try JSONReformatter.reformat(bytes, format: format) }
        let streamed = Result { () throws(JSONParseError) in try JSONStreamReformatter.reformat(bytes, format: format, chunkSize: chunkSize) }
        if oneShot != streamed { fuzzFailure("stream reformatter and one-shot reformatter disagree (\(format), chunks of \(chunkSize))") }
    }
    if let parsed {
        _ = parsed.stringValue; _ = parsed.int64Value; _ = parsed.doubleValue; _ = parsed.scalarText
        _ = parsed.description
    }
    return 0
}
