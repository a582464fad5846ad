@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 30: a command line's bytes that are not UTF-8 are carried through a String
/// losslessly (`EscapedBytes`) and come out as themselves at every boundary: the wire
/// (percent-encoding, multipart), file names, and as `\xff` in text for a person.
@Suite("Bytes of the command line that are not UTF-8")
struct EscapedBytesTests {
    /// Every byte string round-trips: invalid bytes, valid UTF-8, and UTF-8 that spells an
    /// escape's own scalar (U+10FF80–U+10FFFF, which must not decode to one byte).
    @Test(arguments: [
        [0xFF, 0xFE], [0x61, 0xFF], Array("你好".utf8), [0xE4, 0xBD], [0xC0, 0x80], [0xED, 0xA0, 0x80],
        [0xF4, 0x8F, 0xBE, 0x80], [0xF4, 0x8F, 0xBF, 0xBF, 0x41], [0xF4, 0x90, 0x80, 0x80], [0xF0, 0x9F, 0x98, 0x80],
        [0x80], [0xF4], [0xF4, 0x8F], [0xF4, 0x8F, 0xBE], [],
    ] as [[UInt8]])
    func roundTrips(bytes: [UInt8]) {
        let text = EscapedBytes.string(bytes)
        #expect(EscapedBytes.bytes(text) == bytes)
        var terminated = bytes.map { CChar(bitPattern: $0) }
        terminated.append(0)
        #expect(EscapedBytes.cString(text) == terminated)
    }

    @Test func everyPairOfBytesRoundTrips() {
        for first in 0...255 {
            for second in stride(from: 0, through: 255, by: 3) {
                let bytes: [UInt8] = [UInt8(first), UInt8(second), 0x41, UInt8(first)]
                #expect(EscapedBytes.bytes(EscapedBytes.string(bytes)) == bytes)
            }
        }
    }

    /// Ordinary UTF-8 is the String it always was: no escape, nothing to decode.
    @Test func validUTF8IsUnchanged() {
        for text in ["", "abc", "你好 world", "naïve.txt", "😀", "\u{10FF7F}"] {
            #expect(EscapedBytes.string(Array(text.utf8)) == text)
            #expect(!EscapedBytes.contains(text))
            #expect(EscapedBytes.bytes(text) == Array(text.utf8))
            #expect(EscapedBytes.shown(text) == text)
        }
    }

    @Test func textForAPersonShowsTheBytes() {
        let text = EscapedBytes.string([0x2F, 0x61, 0xFF, 0xFE] + Array("é".utf8))
        #expect(EscapedBytes.contains(text))
        #expect(EscapedBytes.shown(text) == "/a\\xff\\xfeé")
        #expect(EscapedBytes.firstEscapedByte(text) == 0xFF)
        #expect(HTTPSyntax.printable(text) == "/a\\xff\\xfeé")
    }

    /// The wire: a form, a query, a signature's path get %FF, never %EF%BF%BD.
    @Test func percentEncodingSendsTheBytes() {
        let value = EscapedBytes.string([0xFF, 0xFE, 0x20, 0x41])
        #expect(PercentEncoding.encode(value) == "%FF%FE%20A")
        #expect(FormEncoding.encode([("t", value)]) == "t=%FF%FE+A")
        #expect(PercentEncoding.encode(EscapedBytes.string([0xF4, 0x8F, 0xBE, 0x80])) == "%F4%8F%BE%80")
    }

    /// md5-sorted signs the bytes the server receives and decodes, not the escapes.
    @Test func aSignatureSignsTheBytes() {
        let value = EscapedBytes.string([0xFF])
        #expect(RequestSignature.md5Sorted([("t", value)], secret: "s") == Digest.hex(Digest.md5([0x74, 0x3D, 0xFF, 0x73])))
    }

    @Test func multipartNamesAndValuesKeepTheirBytes() throws {
        let name = EscapedBytes.string([0x6B, 0xFF])
        let value = EscapedBytes.string([0xFE])
        let form = MultipartForm(parts: [.field(name: name, value: value)], boundary: "b")
        guard case .segments(let segments) = try form.requestBody(), case .bytes(let bytes)? = segments.first else {
            Issue.record("not one segment of bytes")
            return
        }
        #expect(bytes == Array("--b\r\nContent-Disposition: form-data; name=\"k".utf8) + [0xFF] + Array("\"\r\n\r\n".utf8) + [0xFE] + Array("\r\n--b--\r\n".utf8))
    }

    /// JSON text is UTF-8: such a field is refused, named, rather than sent as U+10FFxx.
    @Test func aJSONBodyRefusesBytesThatAreNotUTF8() {
        let value = EscapedBytes.string([0xFF])
        #expect(throws: DouctlError.usage("field 't' is not UTF-8 (byte 0xFF), which a JSON body cannot carry; send it in a form (without --json) or as a file part (--attach)")) {
            try RequestField.jsonObject([.string("t", value)])
        }
        #expect(throws: DouctlError.self) { try RequestField.jsonObject([.string(EscapedBytes.string([0x6B, 0xFE]), "v")]) }
    }

    /// A file name with such a byte is opened by its bytes.
    @Test func fileNamesAreTheBytes() throws {
        let directory = try TemporaryDirectory()
        let name = directory.path + "/" + EscapedBytes.string([0x61, 0xFF]) + ".txt"
        try AtomicFile.write(Array("hi".utf8), to: name, mode: 0o600)
        #expect(try FileIO.listDirectory(directory.path).map { EscapedBytes.bytes($0) } == [[0x61, 0xFF] + Array(".txt".utf8)])
        #expect(try FileIO.readFile(name) == Array("hi".utf8))
        #expect(FileIO.fileExists(name))
    }

    /// The dry run's curl line writes such a byte for the shell to send as itself.
    @Test func aCurlLineQuotesTheBytes() {
        #expect(CurlCommand.quote(EscapedBytes.string([0x74, 0x3D, 0xFF, 0x27]), placeholders: []) == "$'t=\\xff\\''")
    }
}
