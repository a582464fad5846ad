import DouctlJSON
import Testing

@Suite("Printer")
struct PrinterTests {
    static let sample: JSON = [
        "id": 1, "name": "豆瓣", "tags": ["a", "b"], "empty": [], "none": [:], "nested": ["x": [[], [:], [[]]]],
        "ok": true, "no": false, "nil": nil,
    ]

    @Test func compactHasNoSpaces() {
        #expect(Self.sample.text(.compact) == #"{"id":1,"name":"豆瓣","tags":["a","b"],"empty":[],"none":{},"nested":{"x":[[],{},[[]]]},"ok":true,"no":false,"nil":null}"#)
        #expect(Self.sample.text() == Self.sample.text(.compact))
    }

    @Test func prettyMatchesJqLayout() {
        let expected = """
            {
              "id": 1,
              "name": "豆瓣",
              "tags": [
                "a",
                "b"
              ],
              "empty": [],
              "none": {},
              "nested": {
                "x": [
                  [],
                  {},
                  [
                    []
                  ]
                ]
              },
              "ok": true,
              "no": false,
              "nil": null
            }
            """
        #expect(Self.sample.text(.pretty) == expected)
    }

    @Test func scalarsAtTheTop() {
        #expect(JSON.null.text(.pretty) == "null")
        #expect(JSON.number("-1.5E+3").text(.pretty) == "-1.5E+3")
        #expect(JSON.string("x").text(.pretty) == #""x""#)
        #expect(JSON.array([]).text(.pretty) == "[]")
        #expect(JSON.object([:]).text(.pretty) == "{}")
    }

    @Test func customIndent() {
        let value: JSON = ["a": [1]]
        #expect(value.text(JSONFormat(pretty: true, indent: 4)) == "{\n    \"a\": [\n        1\n    ]\n}")
        // Like `jq --indent 0`: compact.
        #expect(value.text(JSONFormat(pretty: true, indent: 0)) == #"{"a":[1]}"#)
        #expect(value.text(JSONFormat(pretty: true, indent: -3)) == #"{"a":[1]}"#)
        // Clamped, not exploding.
        #expect(value.text(JSONFormat(pretty: true, indent: Int.max)) == value.text(JSONFormat(pretty: true, indent: 64)))
        #expect(value.text(JSONFormat(pretty: false, indent: 4)) == #"{"a":[1]}"#)
    }

    @Test func stringEscapesMatchJq() {
        let value = JSON.string("q\" b\\ s/ \u{8}\u{C}\n\r\t \u{0}\u{1}\u{1B}\u{1F} \u{7F} \u{80} é 中文 😀 \u{2028}")
        #expect(value.text() == #""q\" b\\ s/ \b\f\n\r\t \u0000\u0001\u001b\u001f \u007f "# + "\u{80} é 中文 😀 \u{2028}\"")
    }

    @Test func keysAreEscapedToo() {
        let value: JSON = ["a\"b\n": 1, "中": 2]
        #expect(value.text() == #"{"a\"b\n":1,"中":2}"#)
    }

    @Test func escapedSlashesAndUnicodeEscapesComeOutReadable() throws {
        let value = try JSONParser.parse(#"{"url":"https:\/\/img1.doubanio.com\/icon\/u1.jpg","t":"\u4e2d\u6587\ud83d\ude00"}"#)
        #expect(value.text() == #"{"url":"https://img1.doubanio.com/icon/u1.jpg","t":"中文😀"}"#)
    }

    @Test func invalidNumberTextIsWrittenAsNull() {
        #expect(JSON.array([.number("1"), .number("01"), .number("NaN"), .number(""), .number("1e5")]).text() == "[1,null,null,null,1e5]")
    }

    @Test func writeAppendsToExistingOutput() {
        var output = bytes("prefix:")
        JSON.array([1, "2"]).write(to: &output, format: .compact)
        #expect(text(output) == #"prefix:[1,"2"]"#)
        #expect(JSON.array([1]).serialized(.pretty) == bytes("[\n  1\n]"))
    }

    @Test func streamingWriteUsesBigChunks() {
        let big = JSON.array((0..<50_000).map { JSON.string("item \($0) 豆瓣") })
        var chunks: [[UInt8]] = []
        big.write(format: .pretty) { chunks.append(Array($0)) }
        #expect(chunks.count > 2)
        #expect(chunks.dropLast().allSatisfy { $0.count >= 64 * 1024 })
        #expect(chunks.joined().elementsEqual(big.serialized(.pretty)))
    }

    @Test func roundTripsThroughTextInBothFormats() throws {
        var generator = DocumentGenerator(seed: 7)
        generator.duplicateKeys = true
        generator.invalidUTF8 = true
        for _ in 0..<500 {
            let value = try JSONParser.parse(generator.document())
            #expect(try JSONParser.parse(value.text(.compact)) == value)
            #expect(try JSONParser.parse(value.text(.pretty)) == value)
            // Printing is a fixed point after one round.
            #expect(try JSONParser.parse(value.serialized(.pretty)).serialized(.pretty) == value.serialized(.pretty))
        }
    }

    @Test func valuesBuiltInCodeRoundTrip() throws {
        let value: JSON = ["text": "line1\nline2\t\"quoted\" \\ 中文 \u{0}", "list": [.int(Int64.min), .number("1e-7"), nil, true]]
        #expect(try JSONParser.parse(value.text()) == value)
        #expect(try JSONParser.parse(value.text(.pretty)) == value)
    }

    /// Printing is iterative: a value deeper than the parser accepts still prints.
    @Test func deepValuesBuiltInCodePrint() {
        let depth = JSONParser.maximumDepth
        var value: JSON = 0
        for level in 0..<depth { value = level % 2 == 0 ? [value] : ["k": value] }
        let compact = value.text()
        #expect(compact.hasPrefix(#"{"k":[{"k":["#))
        #expect(compact.utf8.count == 1 + depth / 2 * 2 + depth / 2 * 6)
        let pretty = value.serialized(.pretty)
        #expect(pretty.split(separator: UInt8(ascii: "\n")).count == 2 * depth + 1)
    }

    @Test func descriptionIsCompactJSON() {
        #expect(String(describing: JSON.array([1, "a"])) == #"[1,"a"]"#)
        #expect(String(describing: JSONObject([("a", nil)])) == #"{"a":null}"#)
    }
}
