import DouctlJSON
import Testing

/// The incremental reformatter against the one-shot one: wherever the chunks split a
/// document, it prints the same bytes, accepts and rejects the same documents, and
/// rejects them with the same error (message, offset, line, column).
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
        // Errors at non-ASCII characters, which are described whole however the chunks cut them.
        "[1,中]", "{\"中文\":1 文}", "[\"豆瓣\"😀]", "\"a\"é", "[1.中]", "[1中]", "[-é]", "[1e😀]", "[tru中]", "[true中]",
        "\u{FEFF}中", "\u{FEFF}\u{FEFF}", "{\"a\":1}\u{FEC0}", "[\"\\中\"]",
        // Numbers and literals that stop early, judged by what follows as the one-shot scanner does.
        "100-2", "[100-2]", "[nullfalse]", "truex", "[fa\u{1}lse]", "[t", "[1e", "[-", "[01]", "[1.]", "{\"a\":1.e5}",
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
                case (.failure(let want), .failure(let have)):
                    #expect(have == want, "chunks of \(size): \(text(input).debugDescription)", sourceLocation: sourceLocation)
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
        // A byte order mark that is not one, however it is split: EF BB then a continuation
        // byte is U+FEC0; EF then an ASCII byte is a lone byte.
        expectSame([0xEF, 0xBB, 0x80, 0x31], sizes: Array(1...4))
        expectSame([0xEF, 0x31], sizes: [1, 2])
        expectSame([0xEF, 0xBB], sizes: [1, 2])
        expectSame([0x5B, 0x31, 0x5D, 0xE4, 0xB8], sizes: Array(1...5))
    }

    @Test func outputBeforeAnErrorIsTheOneShots() {
        // Past several 64 KiB flushes, then an error: what was printed before it is the same.
        var generator = DocumentGenerator(seed: 0x0E44)
        generator.whitespace = false
        var input = bytes("[")
        while input.count < 300_000 {
            input += generator.document()
            input.append(UInt8(ascii: ","))
        }
        for tail in ["1 2]", "\"abc", "tru]", "1.x]", "中]", "{\"a\":1 中}"] {
            let document = input + bytes(tail)
            for format in [JSONFormat.pretty, .compact] {
                var oneShot: [UInt8] = []
                let oneShotError = document.withUnsafeBytes { raw in
                    Result { () throws(JSONParseError) in
                        try JSONReformatter.reformat(raw, format: format) { oneShot.append(contentsOf: $0) }
                    }
                }
                for size in [4_096, 65_536, 100_003] {
                    var streamed: [UInt8] = []
                    let reformatter = JSONStreamReformatter(format: format) { streamed.append(contentsOf: $0) }
                    let streamError = Result { () throws(JSONParseError) in try reformatter.feedAll(document, chunkSize: size) }
                    #expect(oneShot.count > 65_536 && streamed == oneShot, "\(tail), chunks of \(size)")
                    switch (oneShotError, streamError) {
                    case (.failure(let want), .failure(let have)): #expect(have == want, "\(tail), chunks of \(size)")
                    default: Issue.record("\(tail), chunks of \(size): one-shot \(oneShotError), stream \(streamError)")
                    }
                }
            }
        }
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

/// The one-pass string path: a string read whole from one chunk, and the same string cut
/// anywhere by a chunk boundary, print what the one-shot reformatter prints.
@Suite("Stream reformatter strings")
struct StreamReformatterStringTests {
    /// Every kind of byte a string holds: plain ASCII, each escape, \u escapes that become
    /// controls, quotes, U+007F and surrogate pairs, raw 2-, 3- and 4-byte UTF-8, U+007F raw.
    static let strings: [String] = [
        #""plain ascii text, long enough to cross a word or two""#,
        #""https:\/\/img3.doubanio.com\/icon\/ul230845597-36.jpg""#,
        #""\" \\ \/ \b \f \n \r \t""#,
        #""\u4e2d\u6587 \uD83D\uDE00 \u00e9 \u0041 \u0022 \u005c \u002F \u007f \u0000 \u001f \u0008""#,
        #""\ud800 lone high, \udc00 lone low, \ud83d\u0041 high then not low""#,
        "\"中文 豆瓣 é ß 😀 \u{10FFFF} \u{7F} raw delete\"",
        "\"中\\u6587 mixed \\/ é\\n😀\"",
        #""""#, #""\\""#, #""\"""#,
    ]

    /// Feeds `input` as two chunks split at `split`, collecting what is printed.
    func twoChunks(_ input: [UInt8], _ format: JSONFormat, split: Int) -> Result<[UInt8], JSONParseError> {
        var output: [UInt8] = []
        let reformatter = JSONStreamReformatter(format: format) { output.append(contentsOf: $0) }
        return input.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) -> [UInt8] in
                try reformatter.feed(UnsafeRawBufferPointer(rebasing: raw[0..<split]))
                try reformatter.feed(UnsafeRawBufferPointer(rebasing: raw[split...]))
                try reformatter.finish()
                return output
            }
        }
    }

    func expectSameAtEverySplit(_ input: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        for format in [JSONFormat.pretty, .compact] {
            let expected = reformatResult(input, format)
            for split in 0...input.count {
                switch (expected, twoChunks(input, format, split: split)) {
                case (.success(let want), .success(let have)):
                    #expect(have == want, "split at \(split) of \(text(input).debugDescription)", sourceLocation: sourceLocation)
                case (.failure(let want), .failure(let have)):
                    #expect(have == want, "split at \(split) of \(text(input).debugDescription)", sourceLocation: sourceLocation)
                case (let want, let have):
                    Issue.record("split at \(split) of \(text(input).debugDescription): one-shot \(want), stream \(have)", sourceLocation: sourceLocation)
                }
            }
        }
    }

    @Test func aStringSplitAtEveryByte() {
        for string in Self.strings {
            expectSameAtEverySplit(bytes(string))
            // As a key and as a value, between other tokens.
            expectSameAtEverySplit(bytes("{\(string):[\(string),1,true],\"k\":\(string)}"))
        }
    }

    @Test func invalidUTF8SplitAtEveryByte() {
        // A cut 3-byte sequence, a stray continuation, a bad lead, an overlong form, a surrogate,
        // past U+10FFFF, each beside an escape (jq repairs the decoded text as a whole).
        let documents: [[UInt8]] = [
            [0x22, 0xE4, 0xB8, 0x22], [0x22, 0x80, 0x41, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0xE0, 0x80, 0x80, 0x22],
            [0x22, 0xED, 0xA0, 0x80, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xE4, 0x5C, 0x6E, 0x22],
            [0x22, 0xF0, 0x9F, 0x5C, 0x75, 0x30, 0x30, 0x65, 0x39, 0x22], [0x5B, 0x22, 0xE4, 0xB8, 0xAD, 0xFF, 0x22, 0x5D],
        ]
        for document in documents { expectSameAtEverySplit(document) }
    }

    @Test func malformedStringsSplitAtEveryByte() {
        for document in [
            "[\"abc\\x\"]", "[\"a\\u12G4\"]", "[\"a\\u12\"]", "[\"tab\there\"]", "[\"nl\nhere\"]", "[\"unterminated",
            "[\"ends in a backslash\\", "[\"a\\\"]", "{\"k\u{1}\":1}",
        ] {
            expectSameAtEverySplit(bytes(document))
        }
    }

    @Test func stringsLongerThanAChunk() {
        // Longer than the 64 KiB chunks the reformatter is fed: each crosses several boundaries,
        // with escapes and multi-byte characters falling on them.
        let piece = #"douban \/ 中文 \u4e2d\ud83d\ude00 😀 \" \n é"#
        let long = "\"" + String(repeating: piece, count: 8_000) + "\""
        let input = bytes("[" + long + ",{" + long + ":" + long + "}]")
        for format in [JSONFormat.pretty, .compact] {
            let expected = reformatResult(input, format)
            for size in [65_536, 4_099, 7] {
                let got = Result { () throws(JSONParseError) in try JSONStreamReformatter.reformat(input, format: format, chunkSize: size) }
                #expect((try? got.get()) == (try? expected.get()), "chunks of \(size)")
            }
        }
    }
}
