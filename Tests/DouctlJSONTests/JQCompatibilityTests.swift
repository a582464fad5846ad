import DouctlJSON
import Foundation
import Testing
import DouctlTestSupport

/// Output must equal jq 1.6's byte for byte (`jq .`, `jq -c .`, `jq --indent N .`). Numbers are
/// integers here because jq reprints other numbers through a double, while we keep their text.
/// The jq binary the output is checked against (the project's reference for `douctl api` output).
@Suite("jq compatibility")
struct JQCompatibilityTests {
    /// Runs jq over `input` (a stream of JSON documents) and returns its stdout.
    static func jq(_ arguments: [String], _ input: [UInt8]) throws -> [UInt8] {
        let jqPath = try Tools.require("jq")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("douctl-json-\(UUID().uuidString).json")
        try Data(input).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: jqPath)
        process.arguments = arguments + [file.path]
        let output = Pipe()
        process.standardOutput = output
        try process.runAlone()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "jq failed")
        return [UInt8](data)
    }

    static func documents() -> [[UInt8]] {
        var generator = DocumentGenerator(seed: 2024)
        generator.integerNumbersOnly = true
        generator.invalidUTF8 = true
        var documents = (0..<400).map { _ in generator.document() }
        // Deep nesting to 100, alternating arrays and objects, with empties at the bottom.
        var deep = ""
        for level in 0..<100 { deep += level % 3 == 0 ? #"{"level \#(level)":"# : "[" }
        deep += #"[[], {}, [{}], {"e": []}, "底"]"#
        for level in (0..<100).reversed() { deep += level % 3 == 0 ? "}" : "]" }
        documents.append(bytes(deep))
        documents.append(bytes(#"[[],{},[[]],[{}],{"a":{}},{"b":[[],[]]},[[[[]]]]]"#))
        documents.append(bytes(#""https:\/\/img9.doubanio.com\/view\/photo\/l\/public\/p2.jpg""#))
        documents.append(bytes(#"{"text":"\u4e2d\u6587\n\"\u8c46\u74e3\"\t\\ \u0000\u001f\u007f\u0080 \ud83d\ude00 \udc00 /"}"#))
        documents.append(bytes("\"raw\u{7F}DEL and 中文 and 😀 and \u{2028}\""))
        documents.append(bytes("   \r\n\t {  \"a\" :\n[ 1 ,\t-2 ] }  "))
        documents.append(bytes("-0"))
        documents.append(bytes("[true,false,null,0,-1,1000000]"))
        documents.append([0x22, 0xF0, 0x9F, 0x41, 0x22])
        documents.append([0x5B, 0x22, 0xE4, 0x22, 0x2C, 0x22, 0xC0, 0xAF, 0x22, 0x5D])
        return documents
    }

    func compare(_ arguments: [String], _ format: JSONFormat) throws {
        let documents = Self.documents()
        var stream: [UInt8] = []
        var reformatted: [UInt8] = []
        var printed: [UInt8] = []
        for document in documents {
            stream += document + [0x0A]
            reformatted += try JSONReformatter.reformat(document, format: format) + [0x0A]
            try JSONParser.parse(document).write(to: &printed, format: format)
            printed.append(0x0A)
        }
        let expected = try Self.jq(arguments, stream)
        #expect(expected.count > 10_000)
        #expect(reformatted == expected, "reformatter differs from jq \(arguments) at \(firstDifference(reformatted, expected))")
        #expect(printed == expected, "tree printer differs from jq \(arguments) at \(firstDifference(printed, expected))")
    }

    func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> String {
        let index = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
        let context = { (bytes: [UInt8]) in String(decoding: bytes[max(0, index - 40)..<min(bytes.count, index + 40)], as: UTF8.self) }
        return "byte \(index): ours «\(context(a))» jq «\(context(b))»"
    }

    @Test func prettyMatchesJqDot() throws { try compare(["."], .pretty) }

    @Test func compactMatchesJqC() throws { try compare(["-c", "."], .compact) }

    @Test func indentFourMatchesJqIndent4() throws { try compare(["--indent", "4", "."], JSONFormat(pretty: true, indent: 4)) }

    @Test func indentZeroMatchesJqIndent0() throws { try compare(["--indent", "0", "."], JSONFormat(pretty: true, indent: 0)) }

    @Test func byteOrderMarkMatchesJq() throws {
        let document = [0xEF, 0xBB, 0xBF] + bytes(#"{"a":[1,"中"]}"#)
        let expected = try Self.jq(["."], document)
        #expect(try JSONReformatter.reformat(document, format: .pretty) + [0x0A] == expected)
    }
}
