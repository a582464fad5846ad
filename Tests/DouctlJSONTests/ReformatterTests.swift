import DouctlJSON
import Testing

@Suite("Reformatter")
struct ReformatterTests {
    func reformat(_ input: String, _ format: JSONFormat = .pretty) throws -> String {
        text(try JSONReformatter.reformat(bytes(input), format: format))
    }

    @Test func prettyAndCompact() throws {
        let input = #" { "a" : [ 1 , { "b" : null } , [ ] , { } ] , "c" : "x" } "#
        #expect(try reformat(input, .compact) == #"{"a":[1,{"b":null},[],{}],"c":"x"}"#)
        #expect(try reformat(input) == """
            {
              "a": [
                1,
                {
                  "b": null
                },
                [],
                {}
              ],
              "c": "x"
            }
            """)
    }

    @Test func keepsNumberTextKeyOrderAndDuplicates() throws {
        #expect(try reformat(#"{"z":1.0,"a":1e400,"z":12345678901234567890123,"n":-0}"#, .compact)
            == #"{"z":1.0,"a":1e400,"z":12345678901234567890123,"n":-0}"#)
    }

    @Test func stringsAreNormalizedLikeJq() throws {
        #expect(try reformat(#""https:\/\/img.doubanio.com\/a.jpg""#) == #""https://img.doubanio.com/a.jpg""#)
        #expect(try reformat(#""\u4e2d\u6587 \ud83d\ude00 \u00e9""#) == "\"中文 😀 é\"")
        #expect(try reformat(#""\u0001\u001F\u007f\u0008\u000c\u000A\u000d\u0009\"\\\u0022\u005c""#)
            == #""\u0001\u001f\u007f\b\f\n\r\t\"\\\"\\""#)
        #expect(try reformat("\"raw \u{7F} delete\"") == #""raw \u007f delete""#)
        #expect(try reformat(#""\ud800 lone""#) == "\"\u{FFFD} lone\"")
        #expect(text(try JSONReformatter.reformat([0x22, 0xE4, 0x41, 0x42, 0xFF, 0x22], format: .compact)) == "\"\u{FFFD}AB\u{FFFD}\"")
    }

    @Test func canonicalInputComesBackByteForByte() throws {
        let input = #"{"id":"3170000000","text":"豆瓣 😀 /path","n":[1,2.50,-3e+2],"t":true,"f":false,"x":null}"#
        #expect(try reformat(input, .compact) == input)
    }

    @Test func byteOrderMarkAndWhitespace() throws {
        let input = [0xEF, 0xBB, 0xBF] + bytes("\r\n\t [\n1\r\n,\t2 ]\n\n")
        #expect(try JSONReformatter.reformat(input, format: .compact) == bytes("[1,2]"))
    }

    @Test func matchesTheTreePrinterOnGeneratedDocuments() throws {
        var generator = DocumentGenerator(seed: 42)
        generator.duplicateKeys = true
        generator.invalidUTF8 = true
        for _ in 0..<1_000 {
            let document = generator.document()
            let tree = try JSONParser.parse(document)
            #expect(try JSONReformatter.reformat(document, format: .pretty) == tree.serialized(.pretty))
            #expect(try JSONReformatter.reformat(document, format: .compact) == tree.serialized(.compact))
            #expect(try JSONReformatter.reformat(document, format: JSONFormat(pretty: true, indent: 3)) == tree.serialized(JSONFormat(pretty: true, indent: 3)))
        }
    }

    @Test func chunksAreAtLeast64KiBExceptTheLast() throws {
        var input = bytes("[")
        for index in 0..<40_000 {
            if index > 0 { input.append(UInt8(ascii: ",")) }
            input += bytes(#"{"id":\#(index),"text":"广播 \/ \u4e2d \#(index)"}"#)
        }
        input += bytes("]")
        var chunks: [[UInt8]] = []
        try input.withUnsafeBytes { raw in
            try Result { () throws(JSONParseError) in
                try JSONReformatter.reformat(raw, format: .pretty) { chunks.append(Array($0)) }
            }.get()
        }
        #expect(chunks.count > 3)
        #expect(chunks.dropLast().allSatisfy { $0.count >= JSONReformatter.chunkSize })
        #expect(Array(chunks.joined()) == (try JSONParser.parse(input)).serialized(.pretty))
    }

    @Test func hugeStringInOneToken() throws {
        let long = String(repeating: "豆瓣\\/x", count: 100_000)
        let output = try reformat("[\"\(long)\"]", .compact)
        #expect(output == "[\"" + String(repeating: "豆瓣/x", count: 100_000) + "\"]")
    }

    @Test func errorsMatchTheParser() {
        for input in ["", "[1,", #"{"a" 1}"#, "[1] x", "\"abc", "01", "[\"\\q\"]", "nul"] {
            let parsed = parseResult(bytes(input))
            let reformatted = reformatResult(bytes(input), .compact)
            guard case .failure(let parseError) = parsed, case .failure(let reformatError) = reformatted else {
                Issue.record("\(input) should fail in both")
                continue
            }
            #expect(parseError == reformatError)
        }
    }

    @Test func outputBeforeAnErrorMayBeEmitted() {
        // A long valid prefix, then garbage: chunks may already be out, then the error comes.
        var input = bytes("[")
        for _ in 0..<20_000 { input += bytes(#""abcdefghij","#) }
        input += bytes("x]")
        var emitted = 0
        let result = input.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) in
                try JSONReformatter.reformat(raw, format: .compact) { emitted += $0.count }
            }
        }
        guard case .failure(let error) = result else {
            Issue.record("garbage was accepted")
            return
        }
        #expect(error.message == "unexpected 'x', expected a value")
        #expect(error.offset == input.count - 2)
        #expect(emitted >= JSONReformatter.chunkSize)
    }
}
