import DouctlJSON
import Testing

/// The stream reformatter's string copy reads 16-byte windows and takes their marks (quotes,
/// escapes, non-ASCII bytes, controls) from a bit mask. Differential tests against the
/// one-shot reformatter (`JSONScanner`, a separate implementation): every kind of mark at
/// every offset of a window and across its end, in keys and values, well formed or not,
/// whole in one chunk and cut by chunk ends, must print the same bytes or fail with the
/// same error (message, offset, line, column).
@Suite("Stream reformatter string windows")
struct StreamStringWindowTests {
    /// What a string may hold that the copy must look at, each alone: escapes kept and
    /// rewritten, \u escapes of every kind (a control, a quote, a surrogate pair, lone and bad
    /// ones), raw UTF-8 of each length and at the edges of each lead's range, ill-formed
    /// UTF-8, controls, U+007F, and a quote that ends the string early.
    static let wellFormed: [[UInt8]] = [
        bytes(#"\/"#), bytes(#"\""#), bytes(#"\\"#), bytes(#"\n"#), bytes(#"\b"#), bytes(#"\f"#), bytes(#"\r"#), bytes(#"\t"#),
        bytes(#"\u4e2d"#), bytes(#"\u0000"#), bytes(#"\u001F"#), bytes(#"\u0022"#), bytes(#"\u005c"#), bytes(#"\u007f"#),
        bytes(#"\u00e9"#), bytes(#"\u002F"#), bytes(#"\uD83D\uDE00"#), bytes(#"\ud800"#), bytes(#"\udc00x"#),
        bytes(#"\ud83d\u0041"#), bytes(#"\/\/\/\/"#), bytes(#"\\\""#),
        bytes("中"), bytes("中文豆瓣"), bytes("é"), bytes("😀"), bytes("\u{7FF}"), bytes("\u{800}"), bytes("\u{D7FF}"),
        bytes("\u{E000}"), bytes("\u{FFFF}"), bytes("\u{10000}"), bytes("\u{10FFFF}"), [0x7F],
    ]
    static let illFormed: [[UInt8]] = [
        bytes(#"\u12G4"#), bytes(#"\u12"#), bytes(#"\x"#),
        [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xF0, 0x80, 0x80, 0x80],
        [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xC0, 0xAF], [0xC1, 0xBF], [0xC2], [0xF5, 0x80, 0x80, 0x80],
        [0xFF], [0x80], [0xBF, 0xBF], [0xE4, 0xB8], [0xE4, 0x41], [0xF0, 0x9F, 0x98], [0xE4, 0xB8, 0xAD, 0xAD],
        [0x01], [0x1F], [0x09], [0x0A], [0x22],
    ]
    static let pieces = wellFormed + illFormed

    func streamed(_ input: [UInt8], _ format: JSONFormat, size: Int) -> Result<[UInt8], JSONParseError> {
        Result { () throws(JSONParseError) in try JSONStreamReformatter.reformat(input, format: format, chunkSize: size) }
    }

    func expectSame(_ input: [UInt8], sizes: [Int], sourceLocation: SourceLocation = #_sourceLocation) {
        for format in [JSONFormat.pretty, .compact] {
            let expected = reformatResult(input, format)
            for size in sizes {
                switch (expected, streamed(input, format, size: size)) {
                case (.success(let want), .success(let have)):
                    #expect(have == want, "chunks of \(size): \(text(input).debugDescription)", sourceLocation: sourceLocation)
                case (.failure(let want), .failure(let have)):
                    #expect(have == want, "chunks of \(size): \(text(input).debugDescription)", sourceLocation: sourceLocation)
                case (let want, let have):
                    Issue.record("chunks of \(size) of \(text(input).debugDescription): one-shot \(want), stream \(have)",
                                 sourceLocation: sourceLocation)
                }
            }
        }
    }

    @Test func everyMarkAtEveryOffsetOfAWindow() {
        for piece in Self.pieces {
            for offset in 0...40 {
                // A string whose mark falls at `offset` from its first content byte, with
                // enough after it that the copy reads whole windows to past its end.
                let string = bytes("\"") + Array(repeating: UInt8(ascii: "a"), count: offset) + piece
                    + Array(repeating: UInt8(ascii: "b"), count: 60 - offset) + bytes("\"")
                let document = bytes("[") + string + bytes(",{") + string + bytes(":") + string + bytes("},1]")
                // Whole in one chunk, and cut by chunk ends near the windows' reach.
                expectSame(document, sizes: [1 << 16, 47, 48, 49, 64 + offset])
                // An error after it on the same line: its column counts the characters
                // the copy stepped over.
                expectSame(bytes("[") + string + bytes(" x]"), sizes: [1 << 16, 49])
            }
        }
    }

    @Test func marksSideBySideAcrossWindowEnds() {
        // Runs of marks with nothing between them, so that one item ends where the next
        // begins and items straddle each 16-byte boundary at every phase.
        for piece in Self.pieces where !piece.contains(0x22) || piece.first == 0x5C {
            for lead in 0...16 {
                var string = bytes("\"") + Array(repeating: UInt8(ascii: "x"), count: lead)
                for _ in 0..<12 { string += piece }
                string += bytes("\"")
                expectSame(bytes("[") + string + bytes(",") + string + bytes("]"), sizes: [1 << 16, 29])
            }
        }
    }

    @Test func randomStringsAgainstTheOneShot() {
        var random = SeededGenerator(seed: 0x5EED_16B)
        func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
        for round in 0..<400 {
            var document = bytes("[")
            for element in 0..<int(1...6) {
                if element > 0 { document += bytes(int(0...3) == 0 ? " ,\n " : ",") }
                var string = bytes("\"")
                for _ in 0..<int(0...40) {
                    switch int(0...5) {
                    case 0, 1: string += Array(repeating: UInt8(ascii: "p"), count: int(0...20))
                    case 2: string += bytes(["中文", "é", "😀", "《》", "\u{10FFFF}"][int(0...4)])
                    case 3, 4: string += Self.wellFormed[int(0...(Self.wellFormed.count - 1))]
                    default:
                        // Now and then one that fails (raw invalid UTF-8 is repaired, not refused).
                        if round % 4 == 0 { string += Self.pieces[int(0...(Self.pieces.count - 1))] }
                    }
                }
                string += bytes("\"")
                document += int(0...1) == 0 ? string : bytes("{") + string + bytes(":") + string + bytes("}")
            }
            document += bytes("]")
            expectSame(document, sizes: [1 << 16, int(1...300), 7])
        }
    }

    // MARK: - runs of 3-byte characters, taken a window at a time

    /// Six 3-byte characters with leads the window test takes whole (E4, E6, E8, E7, E8, E4).
    static let cjkRun = bytes("中文豆瓣读书")

    /// The documents each string is tried in: as a value and as a key, before a string with
    /// more characters in the same window, and before an error on the same line (whose column
    /// counts the characters the copy stepped over).
    func expectSameInDocuments(_ string: [UInt8], sizes: [Int], sourceLocation: SourceLocation = #_sourceLocation) {
        let quoted = bytes("\"") + string + bytes("\"")
        expectSame(bytes("[") + quoted + bytes(",\"豆瓣\",{") + quoted + bytes(":") + quoted + bytes("},1]"),
                   sizes: sizes, sourceLocation: sourceLocation)
        expectSame(bytes("[") + quoted + bytes(",\"书\" x]"), sizes: sizes, sourceLocation: sourceLocation)
        expectSame(bytes("{") + quoted + bytes(":1,\"读\":2} x"), sizes: [1 << 16], sourceLocation: sourceLocation)
    }

    @Test func cjkRunsCrossingWindowEnds() {
        // Each character of the run straddles a window's end at every phase (the leads fall
        // at offsets 13 to 17 and on), and other non-ASCII bytes and escapes break the run:
        // leads that narrow their second byte (E0, ED), 2- and 4-byte characters, \/ and
        // \u escapes, an escaped quote.
        let others: [[UInt8]] = [
            [], bytes("\u{800}"), bytes("\u{FFF}"), bytes("\u{D7FF}"), bytes("\u{D000}"), bytes("é"), bytes("\u{7FF}"), bytes("😀"),
            bytes("\u{10FFFF}"), bytes("\u{FFFF}"), bytes("\u{E000}"), bytes(#"\/"#), bytes(#"\u4e2d"#), bytes(#"\""#), bytes("ab"),
        ]
        for lead in 0...20 {
            for other in others {
                for before in 0...3 {
                    let string = Array(repeating: UInt8(ascii: "a"), count: lead) + Array(Self.cjkRun.prefix(3 * before)) + other
                        + Self.cjkRun + Self.cjkRun + Self.cjkRun
                    expectSameInDocuments(string, sizes: [1 << 16, 29, 47, 50, 64 + lead])
                }
            }
        }
    }

    @Test func cjkRunWithABadByteAtEachPosition() {
        // One byte of a run replaced: an ASCII letter, a continuation byte where a lead
        // belongs, every kind of lead where a continuation belongs, bytes that never occur,
        // and a quote that ends the string inside a character.
        let run = Self.cjkRun + Self.cjkRun + Self.cjkRun + Self.cjkRun
        let replacements: [UInt8] = [0x41, 0x80, 0xBF, 0xC2, 0xDF, 0xE0, 0xE4, 0xED, 0xEF, 0xF0, 0xF4, 0xF8, 0xFF, 0x22, 0x5C, 0x01]
        for lead in [0, 1, 13, 14, 15, 16, 17, 30] {
            for position in 0..<run.count {
                for replacement in replacements {
                    var damaged = run
                    damaged[position] = replacement
                    let string = Array(repeating: UInt8(ascii: "a"), count: lead) + damaged
                    let quoted = bytes("\"") + string + bytes("\"")
                    expectSame(bytes("[") + quoted + bytes(",") + quoted + bytes(" x]"), sizes: [1 << 16, 45])
                }
            }
        }
    }

    @Test func cjkDocumentCutAtEveryByte() {
        // The input ends inside a character, a string, anywhere: the error (or the output)
        // is the one-shot reformatter's, with the characters counted in its column.
        let string = bytes("\"ab") + Self.cjkRun + bytes("é😀") + Self.cjkRun + Self.cjkRun + bytes("\"")
        let document = bytes("[") + string + bytes(",{") + string + bytes(":") + string + bytes("}]")
        for cut in 0...document.count {
            expectSame(Array(document.prefix(cut)), sizes: [1 << 16, 16, 31])
        }
    }

    @Test func shortStringsOfEveryLength() {
        // Keys and values that end within the first one or two windows, plain or with a mark
        // just before their end, followed by each thing that may come after a string.
        for length in 0...40 {
            for last: [UInt8] in [[], bytes("中"), bytes(#"\/"#), bytes("é"), [0x7F]] {
                let string = Array(repeating: UInt8(ascii: "k"), count: length) + last
                let quoted = bytes("\"") + string + bytes("\"")
                for document in [
                    bytes("{") + quoted + bytes(":") + quoted + bytes(",") + quoted + bytes(":[") + quoted + bytes(",") + quoted + bytes("]}"),
                    bytes("{") + quoted + bytes(" : ") + quoted + bytes(" , ") + quoted + bytes(":null}"),
                    bytes("[") + quoted + bytes("]"),
                    bytes("[") + quoted + bytes(",1.5,-0.25,true,false,null,12345678901234567890.5,0,-7]"),
                    bytes("{") + quoted + bytes(",1}"),
                ] {
                    expectSame(document, sizes: [1 << 16, 33, 7])
                }
            }
        }
    }
}
