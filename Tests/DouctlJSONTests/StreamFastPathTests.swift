import DouctlJSON
import Testing

/// The stream reformatter's one-pass string path (`copyString`: checked and written eight
/// bytes at a time) against two references that do not share it: the one-shot reformatter
/// and, for valid documents, the parsed tree written out. Strings are built from the pieces
/// the fast path treats differently (runs of plain ASCII of every length round a word, 2-,
/// 3- and 4-byte characters, each escape, surrogate pairs whole and lone, U+007F, invalid
/// UTF-8, control characters), as keys and values, and cut by chunks at random places, so
/// the fast path's edges (the end of a chunk, the end of its window, the word loop's tail)
/// fall in the middle of every piece.
@Suite("Stream reformatter fast path")
struct StreamFastPathTests {
    static let validPieces: [String] = [
        "a", "ab", "abcdefg", "abcdefgh", "abcdefghijklmnop", "douban movie ", " ", "é", "ß", "中", "中文豆瓣", "😀", "\u{10FFFF}",
        "\u{800}", "\u{FFFF}", #"\/"#, #"\""#, #"\\"#, #"\b"#, #"\f"#, #"\n"#, #"\r"#, #"\t"#, #"\u4e2d"#, #"\u00e9"#,
        #"\u0041"#, #"\u0000"#, #"\u001f"#, #"\u007f"#, #"\u0022"#, #"\u005C"#, #"\ud83d\ude00"#, #"\ud800"#, #"\udc00"#,
        #"\ud800\u0041"#, #"\ud800\ud800"#, "https:\\/\\/img.doubanio.com\\/view\\/", "\u{7F}",
    ]
    /// Pieces that make a string invalid JSON or invalid UTF-8.
    static let damagingPieces: [[UInt8]] = [
        [0x01], [0x0A], [0x1F], [0x5C, 0x78], [0x5C, 0x75, 0x31, 0x47], [0x5C, 0x75, 0x31, 0x22], [0xFF], [0x80], [0xC0, 0xAF],
        [0xE4, 0xB8], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE0, 0x80, 0x80], [0xF0, 0x9F, 0x98],
    ]

    func string(_ generator: inout DocumentGenerator, damaged: Bool) -> [UInt8] {
        var out: [UInt8] = [0x22]
        let pieces = generator.chance(10) ? generator.int(40...400) : generator.int(0...12)
        for _ in 0..<pieces {
            if damaged && generator.chance(3) {
                out += generator.pick(Self.damagingPieces)
            } else {
                out += bytes(generator.pick(Self.validPieces))
            }
        }
        out.append(0x22)
        return out
    }

    func document(_ generator: inout DocumentGenerator, damaged: Bool) -> [UInt8] {
        var out = bytes("[")
        for index in 0..<generator.int(1...12) {
            if index > 0 { out += bytes(generator.pick([",", " , ", ",\n  "])) }
            if generator.chance(40) {
                out += bytes("{") + string(&generator, damaged: damaged) + bytes(":") + string(&generator, damaged: damaged) + bytes("}")
            } else {
                out += string(&generator, damaged: damaged)
            }
        }
        out += bytes("]")
        return out
    }

    func expectSameAsOneShot(_ input: [UInt8], chunkSizes: [Int], sourceLocation: SourceLocation = #_sourceLocation) {
        for format in [JSONFormat.pretty, .compact] {
            let expected = reformatResult(input, format)
            if case .success(let want) = expected, let tree = try? JSONParser.parse(input) {
                #expect(want == tree.serialized(format), "the one-shot against the tree: \(text(input).debugDescription)", sourceLocation: sourceLocation)
            }
            for size in chunkSizes {
                let got = Result { () throws(JSONParseError) in try JSONStreamReformatter.reformat(input, format: format, chunkSize: size) }
                switch (expected, got) {
                case (.success(let want), .success(let have)):
                    #expect(have == want, "chunks of \(size): \(text(input).debugDescription)", sourceLocation: sourceLocation)
                case (.failure(let want), .failure(let have)):
                    #expect(have == want, "chunks of \(size): \(text(input).debugDescription)", sourceLocation: sourceLocation)
                default:
                    Issue.record("chunks of \(size) of \(text(input).debugDescription): one-shot \(expected), stream \(got)", sourceLocation: sourceLocation)
                }
            }
        }
    }

    @Test func randomStringsAtRandomSplits() {
        var generator = DocumentGenerator(seed: 0xFA57_0A7)
        for round in 0..<400 {
            let input = document(&generator, damaged: round % 2 == 1)
            expectSameAsOneShot(input, chunkSizes: [1, 5, 8, 9, generator.int(2...40), generator.int(41...700), 1 << 16])
        }
    }

    @Test func validStringsAreAcceptedAndPrintedAsTheTree() throws {
        // A check on the generator as much as the path: half the documents must be valid,
        // or the comparison above would compare errors only.
        var generator = DocumentGenerator(seed: 0x0DD_BA11)
        for _ in 0..<100 {
            let input = document(&generator, damaged: false)
            let tree = try JSONParser.parse(input)
            #expect(try JSONStreamReformatter.reformat(input, format: .compact, chunkSize: generator.int(1...300)) == tree.serialized(.compact))
        }
    }

    @Test func stringsLongerThanTheFastPathsWindow() {
        // Over 64 KiB in one chunk: the fast path gives up at its window and the general
        // path prints the string; with each piece kind falling on the window's end.
        for piece in ["x", "中", "😀", #"\u4e2d"#, #"\ud83d\ude00"#, #"\/"#, "é"] {
            for shift in 0..<6 {
                let body = String(repeating: "a", count: shift) + String(repeating: piece, count: (70 * 1024) / piece.utf8.count)
                let input = bytes("[\"" + body + "\",{\"" + body + "\":1}]")
                expectSameAsOneShot(input, chunkSizes: [1 << 20, 65_536 + 3, 4_096])
            }
        }
        // And damaged just past the window, at its end, and just before it.
        for at in [65_534, 65_535, 65_536, 65_537, 65_540] {
            var input = bytes("[\"") + Array(repeating: UInt8(ascii: "b"), count: at) + [0x01] + bytes("c\"]")
            expectSameAsOneShot(input, chunkSizes: [1 << 20, 65_536])
            input = bytes("[\"") + Array(repeating: UInt8(ascii: "b"), count: at) + [0xE4, 0xB8] + bytes("\"]")
            expectSameAsOneShot(input, chunkSizes: [1 << 20, 65_536])
        }
    }

    @Test func errorsAtEveryChunkBoundary() {
        // A string whose error (a control character, a bad escape, a cut character at the
        // end) falls at each offset from a chunk's start.
        for damage in Self.damagingPieces {
            for before in 0..<18 {
                let input = bytes("{\"k\":[\"") + Array(repeating: UInt8(ascii: "q"), count: before) + damage + bytes("z\"]}")
                expectSameAsOneShot(input, chunkSizes: [8, 9, 16, 17])
            }
        }
    }

    @Test func deepNestingOfStrings() {
        let depth = 1000
        let input = bytes(String(repeating: "[\"中\\/x\",", count: depth - 1) + "[\"end\"" + String(repeating: "]", count: depth))
        expectSameAsOneShot(input, chunkSizes: [7, 4_096, 1 << 16])
    }

    @Test func aSmallOutputBufferIsNotGrownForAString() throws {
        // An envelope's status member gets a reformatter with a small buffer: strings longer
        // than its room take the general path, and print the same.
        var generator = DocumentGenerator(seed: 0x5_3A11)
        for _ in 0..<60 {
            let input = document(&generator, damaged: false)
            let size = generator.int(1...2_000)
            let want = try JSONReformatter.reformat(input, format: .compact)
            var have: [UInt8] = []
            let reformatter = JSONStreamReformatter(format: .compact, expectedSize: 512) { have.append(contentsOf: $0) }
            try reformatter.feedAll(input, chunkSize: size)
            #expect(have == want, "chunks of \(size): \(text(input).debugDescription)")
        }
    }

    // Issue 44, item 3: the word-at-a-time paths added for speed.

    @Test func everyUnicodeEscapeValueInBothCases() {
        // Every \uXXXX, decoded by word operations (`hex4`), against the one-shot scanner's
        // digit-by-digit decoding; upper case in odd blocks, mixed in the last.
        for block in 0..<16 {
            var input = bytes("[")
            for low in 0..<4096 {
                let unit = block << 12 | low
                var digits = String(unit, radix: 16)
                digits = String(repeating: "0", count: 4 - digits.count) + digits
                if block % 2 == 1 { digits = digits.uppercased() }
                if block == 15 && low % 3 == 0 { digits = String(digits.prefix(2)).uppercased() + digits.dropFirst(2) }
                if low > 0 { input += bytes(",") }
                input += bytes("\"a\\u" + digits + "b\"")
            }
            input += bytes("]")
            expectSameAsOneShot(input, chunkSizes: [1 << 16, 13])
        }
    }

    @Test func everyByteInEachDigitOfAUnicodeEscape() {
        // Each of the four digits replaced by each byte: letters past 'f', bytes next to the
        // digits' and letters' ranges, non-ASCII bytes (which must not carry into the next
        // digit), a quote or backslash.
        for base in ["4e2d", "00e9", "D83D", "0000"] {
            for position in 0..<4 {
                for byte in 0...255 {
                    var digits = bytes(base)
                    digits[position] = UInt8(byte)
                    let input = bytes("[\"x\\u") + digits + bytes("y\",\"\\u") + digits + bytes("\"]")
                    expectSameAsOneShot(input, chunkSizes: [1 << 16, 5])
                }
            }
        }
    }

    @Test func slashEscapesAndQuotesAtEveryOffsetOfAWord() {
        // `\/` and the closing quote, taken inside the word loop, at every offset from a
        // word's start and a chunk's end; a backslash as a chunk's last byte.
        for before in 0..<18 {
            for after in 0..<10 {
                let run = String(repeating: "a", count: before)
                let tail = String(repeating: "b", count: after)
                let input = bytes("[\"" + run + #"\/"# + tail + #"\/\/"# + "\",\"" + run + "\",{\"" + tail + #"\/"# + "\":\"" + run + "\"}]")
                expectSameAsOneShot(input, chunkSizes: [1 << 16, 8, 9, before + 3, before + 4, before + 5])
            }
        }
    }

    @Test func integersAndWhatEndsThem() {
        // The one-pass integer path and the general path it leaves the rest to, cut at
        // every place.
        let numbers = ["0", "-0", "7", "-7", "10", "-10", "1234567890123456789012345", "01", "-01", "00", "-", "--1", "1-", "1+",
                       "1.5", "1e5", "1E+5", "-0.0e-0", "1.", "1e", "12a", "1x", "-a", "1\"", "9 ", "9\n"]
        for number in numbers {
            for next in [",", "]", " ]", "}", ""] {
                let input = bytes("[" + number + next + "]")
                expectSameAsOneShot(input, chunkSizes: Array(1...input.count))
                let member = bytes("{\"k\":" + number + next + "}")
                expectSameAsOneShot(member, chunkSizes: Array(1...member.count))
            }
        }
    }

    @Test func fractionsLiteralsAndWhatEndsThem() {
        // The one-pass paths for a number with a fraction (digits eight at a time, each
        // length around a word's) and for literals, against what the general path does.
        let numbers = ["0.5", "-0.25", "1.5.5", "01.5", "-01.5", "1.a", "1.-", "1.5e", "1.5e3", "1.5E-3", "0.", "-.5", ".5",
                       "123456789.123456789012", "1234567.12345678", "12345678.1234567", "99999999.9", "1.99999999",
                       "12345678901234567890123456789012.5", "1234567890123456.1234567890123456", "1.0000000000000000000000001",
                       "true", "false", "null", "nullx", "truee", "falsey", "fals", "nul", "tru", "nulL", "True", "n", "f1"]
        for number in numbers {
            for next in [",", "]", " ]", "}", "", "x"] {
                let input = bytes("[" + number + next + "]")
                expectSameAsOneShot(input, chunkSizes: [1 << 16] + Array(1...min(input.count, 12)))
                let member = bytes("{\"k\":" + number + next + "}")
                expectSameAsOneShot(member, chunkSizes: [1 << 16, 3, 5, 7])
                // With room for the word-at-a-time reads: far from the chunk's end.
                let padded = bytes("[" + number + next + ",\"" + String(repeating: "p", count: 40) + "\"]")
                expectSameAsOneShot(padded, chunkSizes: [1 << 16])
            }
        }
    }
}
