import DouctlJSON
import Testing

/// The incremental reformatter against the one-shot one: wherever the chunks split a
/// document, it prints the same bytes and accepts and rejects the same documents.
@Suite("Stream reformatter")
struct StreamReformatterTests {
    static let documents: [String] = [
        #" { "a" : [ 1 , { "b" : null } , [ ] , { } ] , "c" : "x" } "#,
        #"{"z":1.0,"a":1e400,"z":12345678901234567890123,"n":-0}"#,
        #""https:\/\/img.doubanio.com\/a.jpg""#,
        #""\u4e2d\u6587 \ud83d\ude00 \u00e9""#,
        #""\u0001\u001F\u007f\u0008\u000c\u000A\u000d\u0009\"\\\u0022\u005c""#,
        "\"raw \u{7F} delete 中文 😀\"",
        #""\ud800 lone""#,
        "\u{FEFF}[1,2]",
        "[[[[[]]]],{\"\":{}}]", "[]", "{}", "0", "-0.5e-3", "true", "false", "null", "\"\"",
        "[true,false,null,\"a\\\\\",\"\\\\\\\"\"]",
        // Invalid: each must be rejected wherever it is split.
        "", " ", "\u{FEFF}", "[", "[1,]", "[1 2]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{1:2}", "01", "-", "1.",
        "1e", "tru", "truex", "nul", "[1]]", "[1] x", "\"abc", "\"\\\"", "\"\\x\"", "\"a\nb\"", "[1,\n", "}", "]",
        "{\"a\" 1}", "\u{FEFF}\u{FEFF}1", "[nulll]", "[-]", "[+1]", "[.5]", "[1.5.5]",
    ]

    func chunked(_ input: [UInt8], _ format: JSONFormat, size: Int) -> Result<[UInt8], JSONParseError> {
        Result { () throws(JSONParseError) in try JSONStreamReformatter.reformat(input, format: format, chunkSize: size) }
    }

    func expectSame(_ input: [UInt8], sizes: [Int], sourceLocation: SourceLocation = #_sourceLocation) {
        for format in [JSONFormat.pretty, .compact] {
            let expected = reformatResult(input, format)
            for size in sizes {
                let got = chunked(input, format, size: size)
                switch (expected, got) {
                case (.success(let want), .success(let have)):
                    #expect(text(have) == text(want), "chunks of \(size): \(text(input).debugDescription)", sourceLocation: sourceLocation)
                case (.failure, .failure):
                    break
                default:
                    Issue.record("chunks of \(size) of \(text(input).debugDescription): one-shot \(expected), stream \(got)", sourceLocation: sourceLocation)
                }
            }
        }
    }

    @Test func everySplitOfSmallDocuments() {
        for document in Self.documents {
            let input = bytes(document)
            expectSame(input, sizes: Array(1...max(1, input.count)))
        }
    }

    @Test func everySplitOfInvalidUTF8() {
        expectSame([0x22, 0xE4, 0x41, 0x42, 0xFF, 0x22], sizes: Array(1...6))
        expectSame([0x5B, 0x22, 0xE4, 0xB8, 0xAD, 0x22, 0x5D], sizes: Array(1...7))
    }

    @Test func randomDocumentsAtRandomSplits() {
        var generator = DocumentGenerator(seed: 0x57_2EA4)
        generator.invalidUTF8 = true
        generator.duplicateKeys = true
        for round in 0..<300 {
            var document = generator.document()
            // Some damaged: a byte dropped or changed, the end cut off.
            if round % 3 == 1, !document.isEmpty {
                document.remove(at: generator.int(0...(document.count - 1)))
            } else if round % 3 == 2, !document.isEmpty {
                document = Array(document.prefix(generator.int(0...(document.count - 1))))
            }
            expectSame(document, sizes: [1, 2, 3, 7, generator.int(1...64), 1 << 16])
        }
    }

    @Test func nestingStopsAtTheOneShotLimit() {
        let deepest = String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000)
        let tooDeep = String(repeating: "[", count: 1001) + String(repeating: "]", count: 1001)
        expectSame(bytes(deepest), sizes: [1, 333])
        expectSame(bytes(tooDeep), sizes: [1, 333])
    }

    @Test func outputComesBeforeTheEnd() throws {
        // An endless array: output is emitted while it is still open, in bounded chunks.
        var emitted = 0
        let reformatter = JSONStreamReformatter(format: .compact) { emitted += $0.count }
        try bytes("[").withUnsafeBytes { raw in try reformatter.feed(raw) }
        let element = bytes(#"{"id":1,"text":"hello"},"#)
        for _ in 0..<10_000 {
            try element.withUnsafeBytes { raw in try reformatter.feed(raw) }
        }
        #expect(emitted >= 150_000)
    }

    @Test func aHugeSingleStringIsAnErrorNotAnAllocation() throws {
        let reformatter = JSONStreamReformatter(format: .compact) { _ in }
        try bytes("[\"").withUnsafeBytes { raw in try reformatter.feed(raw) }
        let block = [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20)
        var failure: JSONParseError?
        for _ in 0..<70 where failure == nil {
            let result = block.withUnsafeBytes { raw in
                Result { () throws(JSONParseError) in try reformatter.feed(raw) }
            }
            if case .failure(let error) = result { failure = error }
        }
        #expect(failure?.message.contains("longer than 64 MiB") == true)
    }
}
