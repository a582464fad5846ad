import DouctlJSON
import Testing

@Suite("Parser")
struct ParserTests {
    // MARK: Values

    @Test func scalars() throws {
        #expect(try JSONParser.parse("null") == .null)
        #expect(try JSONParser.parse("true") == .bool(true))
        #expect(try JSONParser.parse("false") == .bool(false))
        #expect(try JSONParser.parse("-12.5e+3") == .number("-12.5e+3"))
        #expect(try JSONParser.parse("\"hi\"") == .string("hi"))
        #expect(try JSONParser.parse("[]") == .array([]))
        #expect(try JSONParser.parse("{}") == .object(JSONObject()))
    }

    @Test func nestedValues() throws {
        let value = try JSONParser.parse(#"{"user":{"id":"1","tags":["a",{"b":[]}]},"count":2}"#)
        #expect(value["user"]?["id"] == "1")
        #expect(value["user"]?["tags"]?[1]?["b"] == .array([]))
        #expect(value["count"] == .number("2"))
        let expected: JSON = ["user": ["id": "1", "tags": ["a", ["b": []]]], "count": 2]
        #expect(value == expected)
    }

    @Test func keyOrderIsKept() throws {
        let value = try JSONParser.parse(#"{"z":1,"a":2,"m":3,"b":4}"#)
        #expect(value.objectValue?.keys == ["z", "a", "m", "b"])
        #expect(value.text() == #"{"z":1,"a":2,"m":3,"b":4}"#)
    }

    @Test func duplicateKeysAreKeptAndTheLastWins() throws {
        let value = try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#)
        #expect(value.objectValue?.keys == ["a", "b", "a"])
        #expect(value.objectValue?.count == 3)
        #expect(value["a"] == 3)
        #expect(value.text() == #"{"a":1,"b":2,"a":3}"#)
    }

    @Test(arguments: [
        "0", "-0", "1.0", "1e400", "-1E-400", "12345678901234567890123", "0.000000000000000000001",
        "1.5E+10", "9223372036854775808", "-9223372036854775809", "100e-2",
    ])
    func numberTextIsKeptExactly(_ number: String) throws {
        #expect(try JSONParser.parse(number) == .number(number))
        #expect(try JSONParser.parse("[\(number)]").text() == "[\(number)]")
    }

    @Test func escapesAreDecoded() throws {
        let value = try JSONParser.parse(#""\"\\\/\b\f\n\r\t\u0041\u00e9\u4e2D\u0000""#)
        #expect(value == .string("\"\\/\u{8}\u{C}\n\r\tAé中\u{0}"))
    }

    @Test func surrogatePairsBecomeOneScalar() throws {
        #expect(try JSONParser.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONParser.parse(#""\uD834\uDD1E!""#) == .string("𝄞!"))
    }

    @Test func loneSurrogatesBecomeReplacementCharacters() throws {
        #expect(try JSONParser.parse(#""\ud800""#) == .string("\u{FFFD}"))
        #expect(try JSONParser.parse(#""\ud800\u0041""#) == .string("\u{FFFD}A"))
        #expect(try JSONParser.parse(#""\udc00x""#) == .string("\u{FFFD}x"))
        #expect(try JSONParser.parse(#""\ud800\ud83d\ude00""#) == .string("\u{FFFD}😀"))
        #expect(try JSONParser.parse(#""\ude00\ud83d""#) == .string("\u{FFFD}\u{FFFD}"))
    }

    /// The same counts of U+FFFD that jq 1.6 produces (checked against the jq binary).
    @Test(arguments: [
        ([0xE4, 0xB8] as [UInt8], "\u{FFFD}"),
        ([0xF0, 0x9F, 0x41], "\u{FFFD}"),  // jq swallows the rest when a sequence runs past the end
        ([0xE4, 0x41, 0x42], "\u{FFFD}AB"),
        ([0xED, 0xA0, 0x80], "\u{FFFD}"),
        ([0xC0, 0x80], "\u{FFFD}\u{FFFD}"),
        ([0x80, 0x80], "\u{FFFD}\u{FFFD}"),
        ([0xF5, 0x80, 0x80, 0x80], "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}"),
        ([0xF4, 0x90, 0x80, 0x80], "\u{FFFD}"),
        ([0xE0, 0x80, 0x80, 0x41], "\u{FFFD}A"),
        ([0x41, 0xFF, 0x42], "A\u{FFFD}B"),
    ])
    func invalidUTF8BecomesReplacementCharacters(_ raw: [UInt8], _ expected: String) throws {
        let input = [UInt8(ascii: "\"")] + raw + [UInt8(ascii: "\"")]
        #expect(try JSONParser.parse(input) == .string(expected))
    }

    @Test func rawCJKAndEmojiStayAsTheyAre() throws {
        let value = try JSONParser.parse(#"{"名字":"豆瓣 😀 🇨🇳","ok":true}"#)
        #expect(value["名字"] == "豆瓣 😀 🇨🇳")
    }

    @Test func byteOrderMarkIsSkipped() throws {
        #expect(try JSONParser.parse([0xEF, 0xBB, 0xBF] + bytes(#"{"a":1}"#)) == ["a": 1])
        #expect(try JSONParser.parse("\u{FEFF}[1]") == [1])
        // Only at the very start.
        #expect(parseError(" \u{FEFF}[1]")?.message == "unexpected '\u{FEFF}' (U+FEFF), expected a value")
    }

    @Test(arguments: [" [1, 2] ", "\n\t[\r\n1\t,\n2\n]\r\n", "[1,2]", "\r\n[ 1 ,\t2 ]\n\n"])
    func whitespaceVariants(_ input: String) throws {
        #expect(try JSONParser.parse(input) == [1, 2])
    }

    @Test func inputFromAllThreeEntryPoints() throws {
        let text = #"{"a":[true,null]}"#
        let fromString = try JSONParser.parse(text)
        let fromBytes = try JSONParser.parse(bytes(text))
        let fromPointer = try bytes(text).withUnsafeBytes { raw in
            try Result { () throws(JSONParseError) -> JSON in try JSONParser.parse(raw) }.get()
        }
        #expect(fromString == fromBytes)
        #expect(fromBytes == fromPointer)
    }

    // MARK: Errors

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        let input: [UInt8]
        let message: String
        let offset: Int
        let line: Int
        let column: Int
        let truncated: Bool

        init(_ input: String, _ message: String, offset: Int, line: Int = 1, column: Int, truncated: Bool = false) {
            self.init(bytes(input), message, offset: offset, line: line, column: column, truncated: truncated)
        }

        init(_ input: [UInt8], _ message: String, offset: Int, line: Int = 1, column: Int, truncated: Bool = false) {
            self.input = input
            self.message = message
            self.offset = offset
            self.line = line
            self.column = column
            self.truncated = truncated
        }

        var testDescription: String { "\(String(decoding: input.prefix(40), as: UTF8.self)) → \(message)" }
    }

    static let errorCases: [ErrorCase] = [
        // Empty and truncated input.
        ErrorCase("", "empty input", offset: 0, column: 1),
        ErrorCase(" \n\t", "empty input", offset: 3, line: 2, column: 2),
        ErrorCase([0xEF, 0xBB, 0xBF], "empty input", offset: 3, column: 1),
        ErrorCase("[1,2", "unexpected end of input", offset: 4, column: 5, truncated: true),
        ErrorCase("{\"a\":1,\n\"b\":", "unexpected end of input", offset: 12, line: 2, column: 5, truncated: true),
        ErrorCase("{\"a\"", "unexpected end of input", offset: 4, column: 5, truncated: true),
        ErrorCase("[", "unexpected end of input", offset: 1, column: 2, truncated: true),
        ErrorCase("{", "unexpected end of input", offset: 1, column: 2, truncated: true),
        ErrorCase("[1,", "unexpected end of input", offset: 3, column: 4, truncated: true),
        ErrorCase("tru", "unexpected end of input", offset: 3, column: 4, truncated: true),
        ErrorCase("[nul", "unexpected end of input", offset: 4, column: 5, truncated: true),
        ErrorCase("-", "unexpected end of input", offset: 1, column: 2, truncated: true),
        ErrorCase("[1.", "unexpected end of input", offset: 3, column: 4, truncated: true),
        ErrorCase("1e", "unexpected end of input", offset: 2, column: 3, truncated: true),
        ErrorCase("1e+", "unexpected end of input", offset: 3, column: 4, truncated: true),
        // Strings.
        ErrorCase("[\"abc", "unterminated string", offset: 1, column: 2, truncated: true),
        ErrorCase("\"ab\\", "unterminated string", offset: 0, column: 1, truncated: true),
        ErrorCase("\"\\u12", "unterminated string", offset: 0, column: 1, truncated: true),
        ErrorCase("\"a\\qb\"", "invalid escape '\\q' in string", offset: 2, column: 3),
        ErrorCase("\"\\x41\"", "invalid escape '\\x' in string", offset: 1, column: 2),
        ErrorCase("\"\\u12G4\"", "invalid \\u escape (expected 4 hex digits)", offset: 1, column: 2),
        ErrorCase("\"\\u12\"", "invalid \\u escape (expected 4 hex digits)", offset: 1, column: 2),
        ErrorCase("\"a\nb\"", "control character U+000A must be escaped in a string", offset: 2, column: 3),
        ErrorCase("\"\t\"", "control character U+0009 must be escaped in a string", offset: 1, column: 2),
        ErrorCase([0x22, 0x00, 0x22], "control character U+0000 must be escaped in a string", offset: 1, column: 2),
        ErrorCase("\"\u{1F}\"", "control character U+001F must be escaped in a string", offset: 1, column: 2),
        // Numbers.
        ErrorCase("01", "leading zeros are not allowed in numbers", offset: 0, column: 1),
        ErrorCase("[-00]", "leading zeros are not allowed in numbers", offset: 2, column: 3),
        ErrorCase("-a", "unexpected 'a', expected a digit after '-'", offset: 1, column: 2),
        ErrorCase("-Infinity", "unexpected 'I', expected a digit after '-'", offset: 1, column: 2),
        ErrorCase("1.e5", "unexpected 'e', expected a digit after '.'", offset: 2, column: 3),
        ErrorCase("1ex", "unexpected 'x', expected a digit in the exponent", offset: 2, column: 3),
        ErrorCase("+1", "unexpected '+', expected a value", offset: 0, column: 1),
        ErrorCase(".5", "unexpected '.', expected a value", offset: 0, column: 1),
        ErrorCase("NaN", "unexpected 'N', expected a value", offset: 0, column: 1),
        ErrorCase("[1x]", "unexpected 'x', expected ',' or ']' after array element", offset: 2, column: 3),
        // Literals.
        ErrorCase("trux", "invalid literal (expected 'true')", offset: 0, column: 1),
        ErrorCase("[fals3]", "invalid literal (expected 'false')", offset: 1, column: 2),
        ErrorCase("nil", "invalid literal (expected 'null')", offset: 0, column: 1),
        // Structure.
        ErrorCase("{\"a\":1} x", "unexpected 'x' after the JSON value", offset: 8, column: 9),
        ErrorCase("1 2", "unexpected '2' after the JSON value", offset: 2, column: 3),
        ErrorCase("truex", "unexpected 'x' after the JSON value", offset: 4, column: 5),
        ErrorCase("[1]]", "unexpected ']' after the JSON value", offset: 3, column: 4),
        ErrorCase("{\"a\" 1}", "unexpected '1', expected ':' after object key", offset: 5, column: 6),
        ErrorCase("{\"a\":1 \"b\":2}", "unexpected '\"', expected ',' or '}' after object member", offset: 7, column: 8),
        ErrorCase("[1 2]", "unexpected '2', expected ',' or ']' after array element", offset: 3, column: 4),
        ErrorCase("{1:2}", "unexpected '1', expected an object key", offset: 1, column: 2),
        ErrorCase("{\"a\":1,}", "unexpected '}', expected an object key", offset: 7, column: 8),
        ErrorCase("[1,]", "unexpected ']', expected a value", offset: 3, column: 4),
        ErrorCase("]", "unexpected ']', expected a value", offset: 0, column: 1),
        ErrorCase("<html>", "unexpected '<', expected a value", offset: 0, column: 1),
        ErrorCase("'a'", "unexpected ''', expected a value", offset: 0, column: 1),
        ErrorCase("[1,\u{C}2]", "unexpected byte 0x0C, expected a value", offset: 3, column: 4),
        ErrorCase([0x00], "unexpected byte 0x00, expected a value", offset: 0, column: 1),
        ErrorCase([0x5B, 0xFF, 0x5D], "unexpected byte 0xFF, expected a value", offset: 1, column: 2),
        ErrorCase("错误", "unexpected '错' (U+9519), expected a value", offset: 0, column: 1),
        // Columns count characters, not bytes; lines count "\n".
        ErrorCase("{\"名字\": x}", "unexpected 'x', expected a value", offset: 11, column: 8),
        ErrorCase("[\n  1,\n  2\n  3]", "unexpected '3', expected ',' or ']' after array element", offset: 13, line: 4, column: 3),
        ErrorCase([0xEF, 0xBB, 0xBF] + bytes("[x]"), "unexpected 'x', expected a value", offset: 4, column: 2),
    ]

    @Test(arguments: errorCases)
    func errorMessageAndPosition(_ testCase: ErrorCase) throws {
        let error = try #require(parseError(testCase.input))
        #expect(error.message == testCase.message)
        #expect(error.offset == testCase.offset)
        #expect(error.line == testCase.line)
        #expect(error.column == testCase.column)
        #expect(error.isTruncated == testCase.truncated)
        // The reformatter reports exactly the same error.
        guard case .failure(let reformatError) = reformatResult(testCase.input, .pretty) else {
            Issue.record("the reformatter accepted what the parser rejected")
            return
        }
        #expect(reformatError == error)
    }

    @Test func errorDescriptionNamesThePosition() {
        let error = parseError("{\n  \"a\": [1,\n  2,")
        #expect(error?.description == "unexpected end of input at line 3, column 5")
    }

    // MARK: Depth

    @Test func nestingUpToTheLimitIsAccepted() throws {
        let depth = JSONParser.maximumDepth
        let input = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var value = try JSONParser.parse(input)
        var levels = 0
        while case .array(let elements) = value, let first = elements.first {
            value = first
            levels += 1
        }
        #expect(levels == depth - 1)
        #expect(value == .array([]))
    }

    @Test func nestingBeyondTheLimitIsAnError() {
        let depth = JSONParser.maximumDepth + 1
        let input = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let error = parseError(input)
        #expect(error?.message == "nesting deeper than \(JSONParser.maximumDepth) levels")
        #expect(error?.offset == JSONParser.maximumDepth)
        #expect(error?.isTruncated == false)
    }

    @Test func aMillionOpenBracketsIsAnErrorNotACrash() {
        let arrays = [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)
        #expect(parseError(arrays)?.offset == JSONParser.maximumDepth)
        var objects: [UInt8] = []
        for _ in 0..<200_000 { objects += bytes(#"{"a":"#) }
        #expect(parseError(objects)?.message == "nesting deeper than \(JSONParser.maximumDepth) levels")
        if case .success = reformatResult(arrays, .pretty) { Issue.record("the reformatter accepted a million brackets") }
    }

    /// Parsing, printing, comparing and releasing the deepest accepted tree must fit a 512 KiB thread
    /// stack (Swift releases nested values recursively, so this is what bounds `maximumDepth`).
    @Test func deepestTreeFitsInA512KiBThreadStack() {
        let depth = JSONParser.maximumDepth
        var input = ""
        for level in 0..<depth { input += level % 2 == 0 ? "[" : #"{"k":"# }
        input += "0"
        for level in (0..<depth).reversed() { input += level % 2 == 0 ? "]" : "}" }
        let source = input
        let succeeded = runOnThread(stackSize: 512 * 1024) {
            guard let value = try? JSONParser.parse(source), let again = try? JSONParser.parse(source) else {
                return false
            }
            return value == again && value.text() == source && value.text(.pretty).count > source.count
        }
        #expect(succeeded == true)
    }

    // MARK: Literals and accessors

    @Test func literalConformances() {
        let value: JSON = ["s": "text", "i": 42, "b": true, "n": nil, "a": [1, "x", false], "o": ["k": []]]
        #expect(value["s"] == .string("text"))
        #expect(value["i"] == .number("42"))
        #expect(value["b"] == .bool(true))
        #expect(value["n"] == .null)
        #expect(value["a"] == .array([.number("1"), .string("x"), .bool(false)]))
        #expect(value["o"] == .object(JSONObject([("k", .array([]))])))
        #expect(value.objectValue?.keys == ["s", "i", "b", "n", "a", "o"])
        #expect(JSON.int(-7) == .number("-7"))
        #expect(JSON.int(UInt64.max) == .number("18446744073709551615"))
    }

    @Test func subscripts() {
        let value: JSON = ["list": [10, 20], "k": "v"]
        #expect(value["list"]?[1] == 20)
        #expect(value["list"]?[2] == nil)
        #expect(value["list"]?[-1] == nil)
        #expect(value["missing"] == nil)
        #expect(value[0] == nil)
        #expect(JSON.string("x")["k"] == nil)
    }

    @Test func typedAccessors() {
        let string: JSON = "s"
        let bool: JSON = true
        let array: JSON = [1]
        let object: JSON = ["a": 1]
        #expect(string.stringValue == "s" && bool.stringValue == nil)
        #expect(bool.boolValue == true && string.boolValue == nil)
        #expect(array.arrayValue == [1] && object.arrayValue == nil)
        #expect(object.objectValue?["a"] == 1 && array.objectValue == nil)
        #expect(JSON.null.isNull && !string.isNull)
    }

    @Test(arguments: [
        ("42", Int64(42)), ("-7", -7), ("0", 0), ("-0", 0), ("1.0", 1), ("4e2", 400), ("4E+2", 400), ("100e-2", 1),
        ("1.50e1", 15), ("0.0e5", 0), ("9223372036854775807", Int64.max), ("-9223372036854775808", Int64.min),
        ("0e999999999999999999", 0), ("922337203685477580.7e1", 9_223_372_036_854_775_807),
    ] as [(String, Int64)])
    func int64FromIntegralNumbers(_ text: String, _ expected: Int64) {
        #expect(JSON.number(text).int64Value == expected)
        #expect(JSON.number(text).intValue == Int(expected))
    }

    @Test(arguments: [
        "1.5", "1e-2", "0.1", "9223372036854775808", "-9223372036854775809", "12345678901234567890123",
        "1e19", "1e999999999999999999", "5e-1", "abc", "", "01", "1.",
    ])
    func int64IsNilForFractionsOverflowAndJunk(_ text: String) {
        #expect(JSON.number(text).int64Value == nil)
    }

    @Test func int64FromIntegerStrings() {
        #expect(JSON.string("3170000000").int64Value == 3_170_000_000)
        #expect(JSON.string("-12").int64Value == -12)
        #expect(JSON.string("12a").int64Value == nil)
        #expect(JSON.string("1.0").int64Value == nil)
        #expect(JSON.string("99999999999999999999").int64Value == nil)
        #expect(JSON.bool(true).int64Value == nil)
    }

    @Test func doubleValue() {
        #expect(JSON.number("2.5e-3").doubleValue == 0.0025)
        #expect(JSON.number("-1").doubleValue == -1)
        #expect(JSON.number("1e400").doubleValue == .infinity)
        #expect(JSON.string("1").doubleValue == nil)
        #expect(JSON.number("nan").doubleValue == nil)
        #expect(JSON.number("0x10").doubleValue == nil)
    }

    @Test func scalarText() {
        #expect(JSON.string("豆瓣").scalarText == "豆瓣")
        #expect(JSON.number("1.0").scalarText == "1.0")
        #expect(JSON.bool(false).scalarText == "false")
        #expect(JSON.null.scalarText == "null")
        #expect(JSON.array([]).scalarText == nil)
        #expect(JSON.object([:]).scalarText == nil)
    }

    @Test func equalityIsStructuralAndOrdered() {
        #expect(JSON.number("1.0") != JSON.number("1"))
        let ab: JSON = ["a": 1, "b": 2]
        let ba: JSON = ["b": 2, "a": 1]
        #expect(ab != ba)
        #expect(ab == ["a": 1, "b": 2])
        #expect(JSON.array([1, 2]) != JSON.array([1]))
        #expect(JSON.array([1, [2, ["x": nil]]]) == JSON.array([1, [2, ["x": nil]]]))
        #expect(JSON.array([1, [2, ["x": nil]]]) != JSON.array([1, [2, ["y": nil]]]))
        #expect(JSON.string("1") != JSON.number("1"))
    }
}

@Suite("JSONObject")
struct JSONObjectTests {
    @Test func basics() {
        var object = JSONObject()
        #expect(object.isEmpty && object.count == 0)
        object.append("b", 1)
        object.append("a", 2)
        object.append("b", 3)
        #expect(object.keys == ["b", "a", "b"])
        #expect(object.values == [1, 2, 3])
        #expect(object.count == 3 && !object.isEmpty)
        #expect(object["b"] == 3)
        #expect(object["zzz"] == nil)
        #expect(object.map(\.key) == ["b", "a", "b"])
    }

    @Test func settingReplacesInPlaceAndDropsDuplicates() {
        var object = JSONObject([("b", 1), ("a", 2), ("b", 3), ("c", 4)])
        object["b"] = "new"
        #expect(object.keys == ["b", "a", "c"])
        #expect(object["b"] == "new")
        object["d"] = 5
        #expect(object.keys == ["b", "a", "c", "d"])
        object["a"] = 6
        #expect(object.values == ["new", 6, 4, 5])
    }

    @Test func settingNilRemovesEveryPairWithTheKey() {
        var object: JSONObject = ["x": 1, "y": 2, "x": 3]
        object["x"] = nil
        #expect(object.keys == ["y"])
        object["missing"] = nil
        #expect(object.keys == ["y"])
    }

    @Test func equalityComparesPairsInOrder() {
        #expect(JSONObject([("a", 1), ("b", 2)]) == ["a": 1, "b": 2])
        #expect(JSONObject([("a", 1), ("b", 2)]) != ["b": 2, "a": 1])
        #expect(JSONObject([("a", 1)]) != ["a": 1, "a": 1])
    }
}

