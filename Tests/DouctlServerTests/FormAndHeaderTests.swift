import Testing
import DouctlServer
import DouctlSystem

/// `FormURLEncoded`, `PercentEncoding`, `HTTPHeaders` and header parameters.
@Suite struct FormAndHeaderTests {
    static let formCases: [(String, [String])] = [
        ("a=1&b=2", ["a=1", "b=2"]),
        ("a=hello+world&b=%E4%B8%AD%E6%96%87", ["a=hello world", "b=中文"]),
        ("name=a%2Bb%26c%3Dd", ["name=a+b&c=d"]),
        ("flag&x=", ["flag=", "x="]),
        ("&&a=1&&", ["a=1"]),
        ("a=%", ["a=%"]),
        ("a=%4", ["a=%4"]),
        ("a=%zz%41", ["a=%zzA"]),
        ("a=1=2", ["a=1=2"]),
        ("=value", ["=value"]),
        ("%FF=%C3%28", ["\u{FFFD}=\u{FFFD}("]),
        ("a=%00b", ["a=\u{0}b"]),
        ("", []),
        ("k=v+%2B+v", ["k=v + v"]),
    ]

    @Test(arguments: formCases)
    func formDecoding(_ example: (String, [String])) {
        let fields = FormURLEncoded.parse(Array(example.0.utf8))
        #expect(fields.map { "\($0.name)=\($0.value)" } == example.1)
    }

    @Test func formSerializationRoundTrips() {
        let fields = [("text", "你好 world & more=+%"), ("empty", ""), ("a b", "c")]
        let encoded = FormURLEncoded.serialize(fields)
        #expect(encoded == "text=%E4%BD%A0%E5%A5%BD+world+%26+more%3D%2B%25&empty=&a+b=c")
        #expect(FormURLEncoded.parse(encoded).map { "\($0.name)|\($0.value)" } == fields.map { "\($0.0)|\($0.1)" })
    }

    @Test func randomBytesNeverBreakTheFormParser() {
        var generator = SplitMix64(seed: 42)
        let alphabet = Array("%+&=aZ09\u{0}\u{FF}".utf8)
        for _ in 0..<5000 {
            let length = Int(generator.next() % 40)
            let bytes = (0..<length).map { _ in
                generator.next() % 3 == 0 ? UInt8(truncatingIfNeeded: generator.next()) : alphabet[Int(generator.next() % UInt64(alphabet.count))]
            }
            let fields = FormURLEncoded.parse(bytes)
            #expect(fields.count <= bytes.filter { $0 == UInt8(ascii: "&") }.count + 1)
        }
    }

    @Test func pathDecodingKeepsPlusAndInvalidEscapes() {
        #expect(PercentEncoding.decode("/a+b/%41%2f%zz%", plusAsSpace: false) == "/a+b/A/%zz%")
        #expect(PercentEncoding.decode("a+b", plusAsSpace: true) == "a b")
    }

    @Test func headersAreOrderedAndCaseInsensitive() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain"]
        headers.add("Set-Cookie", "a=1")
        headers.add("set-cookie", "b=2")
        headers.add("Connection", "keep-alive, Upgrade")
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers.values("Set-Cookie") == ["a=1", "b=2"])
        #expect(headers.tokens("connection") == ["keep-alive", "upgrade"])
        #expect(headers["Missing"] == nil)
        #expect(headers.count == 4)
        headers.set("SET-COOKIE", "c=3")
        #expect(headers.values("set-cookie") == ["c=3"])
        #expect(Array(headers).map(\.name) == ["Content-Type", "Connection", "SET-COOKIE"])
        headers.remove("content-type")
        #expect(!headers.contains("Content-Type"))
    }

    @Test func headerParameters() {
        let parsed = HeaderValueWithParameters(parsing: "multipart/form-data ;  boundary=\"--a;b\\\"c\" ; charset=UTF-8;flag")
        #expect(parsed.value == "multipart/form-data")
        #expect(parsed.parameter("BOUNDARY") == "--a;b\"c")
        #expect(parsed.parameter("charset") == "UTF-8")
        #expect(parsed.parameter("flag") == "")
        #expect(parsed.parameter("missing") == nil)
        #expect(HeaderValueWithParameters(parsing: "").value == "")
        #expect(HeaderValueWithParameters(parsing: ";;=;\"").parameters.isEmpty)
    }

    @Test func responseConveniences() {
        let json = HTTPServerResponse.json(201, "{}")
        #expect(json.status == 201)
        #expect(json.header("content-type") == "application/json; charset=utf-8")
        #expect(HTTPServerResponse.reset().resetConnection)
    }
}
