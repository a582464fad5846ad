import DouctlJSON
import Testing

/// Random and mutated inputs (fixed seeds): nothing may trap, and the tree parser and the streaming
/// reformatter must agree on every input — the same error, or output identical to printing the tree.
@Suite("Fuzz")
struct FuzzTests {
    /// Bytes that make interesting JSON, plus a few that never should appear.
    static let alphabet = bytes(#"{}[]{}[]"":,:,0123456789-+.eEtruefalsn \#t\#n\#r\\u/bfaZ"#) + [0x00, 0x1F, 0x7F, 0x80, 0xBF, 0xC3, 0xA9, 0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0xFF, 0xEF, 0xBB]

    /// Checks that parser and reformatter agree on `input`; returns whether it was valid JSON.
    @discardableResult
    static func checkAgreement(_ input: [UInt8]) -> Bool {
        let parsed = parseResult(input)
        let pretty = reformatResult(input, .pretty)
        let compact = reformatResult(input, .compact)
        switch (parsed, pretty, compact) {
        case (.success(let tree), .success(let prettyOutput), .success(let compactOutput)):
            #expect(prettyOutput == tree.serialized(.pretty), "pretty output differs for \(input)")
            #expect(compactOutput == tree.serialized(.compact), "compact output differs for \(input)")
            // What we print is valid JSON that means the same thing.
            #expect(parseResult(compactOutput).map { $0 == tree } == .success(true), "output does not re-parse for \(input)")
            return true
        case (.failure(let error), .failure(let prettyError), .failure(let compactError)):
            #expect(error == prettyError && error == compactError, "different errors for \(input)")
            #expect(error.offset >= 0 && error.offset <= input.count)
            #expect(error.line >= 1 && error.column >= 1)
            return false
        default:
            Issue.record("parser and reformatter disagree on validity of \(input)")
            return false
        }
    }

    @Test func randomByteStrings() {
        var random = SeededGenerator(seed: 0xD0_0BA1)
        var valid = 0
        for _ in 0..<6_000 {
            let length = Int.random(in: 0...40, using: &random)
            var input: [UInt8] = []
            for _ in 0..<length {
                if Int.random(in: 0..<10, using: &random) < 8 {
                    input.append(Self.alphabet[Int.random(in: 0..<Self.alphabet.count, using: &random)])
                } else {
                    input.append(UInt8.random(in: 0...255, using: &random))
                }
            }
            if Self.checkAgreement(input) { valid += 1 }
        }
        // The alphabet is rich enough that some random strings are valid JSON.
        #expect(valid >= 30)
    }

    @Test func mutatedDocuments() {
        var generator = DocumentGenerator(seed: 0xF022)
        generator.duplicateKeys = true
        generator.invalidUTF8 = true
        var random = SeededGenerator(seed: 99)
        var validAfterMutation = 0
        var invalidAfterMutation = 0
        for _ in 0..<1_500 {
            let document = generator.document()
            #expect(Self.checkAgreement(document), "the generator made invalid JSON: \(document)")
            for _ in 0..<4 {
                var mutated = document
                let position = Int.random(in: 0..<mutated.count, using: &random)
                switch Int.random(in: 0..<5, using: &random) {
                case 0: mutated[position] = Self.alphabet[Int.random(in: 0..<Self.alphabet.count, using: &random)]
                case 1: mutated.insert(UInt8.random(in: 0...255, using: &random), at: position)
                case 2: mutated.remove(at: position)
                case 3: mutated.insert(contentsOf: mutated[position...].prefix(5), at: position)
                default: mutated[position] ^= 1 << UInt8.random(in: 0...7, using: &random)
                }
                if Self.checkAgreement(mutated) { validAfterMutation += 1 } else { invalidAfterMutation += 1 }
            }
        }
        #expect(validAfterMutation > 100 && invalidAfterMutation > 1_000)
    }

    /// Every prefix of a valid document either parses or fails as truncated: a cut-off reply is
    /// always reported as cut off.
    @Test func truncatedDocumentsAreReportedAsTruncated() {
        var generator = DocumentGenerator(seed: 0x7C07)
        generator.invalidUTF8 = true
        var random = SeededGenerator(seed: 5)
        for _ in 0..<1_500 {
            let document = generator.document()
            let cut = Int.random(in: 0..<document.count, using: &random)
            let prefix = Array(document[..<cut])
            let blank = prefix.allSatisfy { [0x20, 0x0A, 0x0D, 0x09].contains($0) }
            if !Self.checkAgreement(prefix), !blank {
                let error = parseError(prefix)
                #expect(error?.isTruncated == true, "\(prefix) failed with \(String(describing: error))")
            }
        }
    }

    @Test func deepAndWideShapes() {
        let shapes: [[UInt8]] = [
            [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000),
            [UInt8](repeating: UInt8(ascii: "{"), count: 100_000),
            Array(repeating: bytes(#"{"a":["#), count: 100_000).flatMap { $0 },
            bytes("[" + String(repeating: "0,", count: 200_000) + "0]"),
            bytes("[" + String(repeating: "[],{},", count: 50_000) + "\"\"]"),
            bytes(String(repeating: "[", count: 999) + "1" + String(repeating: "]", count: 999)),
            bytes(String(repeating: "[", count: 1_000) + String(repeating: "]", count: 999)),
        ]
        for shape in shapes { Self.checkAgreement(shape) }
        #expect(parseError(shapes[0])?.message == "nesting deeper than 1000 levels")
        #expect(parseError(shapes[5]) == nil)
        #expect(parseError(shapes[6])?.isTruncated == true)
    }
}
