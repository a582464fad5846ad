import Testing
import DouctlCore
import DouctlHTTP
import DouctlSystem

/// The short cuts start-up takes (issue 23) answer what the long way answered.
@Suite("Start-up short cuts")
struct StartupShortcutsTests {
    @Test func presetNamesAndLookupMatchEveryPreset() {
        #expect(Preset.names == Preset.all.map(\.name))
        for preset in Preset.all { #expect(Preset.named(preset.name) == preset) }
        #expect(Preset.named("github") == nil)
        #expect(Preset.named("") == nil)
    }

    /// Issue 44: a run reads every preset's api_base (the credential-origin rule) from the
    /// table, without building the presets' settings; the table says what the settings say.
    @Test func presetBasesAndExistenceMatchTheBuiltPresets() {
        for preset in Preset.all {
            #expect(Preset.exists(preset.name))
            #expect(Preset.apiBase(named: preset.name) == preset.settings[.apiBase]?.display, "\(preset.name)")
            #expect(Preset.apiBase(named: preset.name)?.isEmpty == false)
        }
        for name in ["github", "", "Douban", "sandbox "] {
            #expect(!Preset.exists(name))
            #expect(Preset.apiBase(named: name) == nil)
        }
    }

    /// Issue 44: header names and media types are compared byte by byte when ASCII; every
    /// answer is the one the Unicode-lowercasing, Character-wise way gave.
    @Test func headerLookupsAndMediaTypesAnswerWhatTheCharacterWiseWayAnswered() {
        let names = ["Content-Type", "content-type", "CONTENT-TYPE", "Content-Typ", "Content-Types", "", "X",
                     "\u{212A}eep-Alive", "keep-alive", "KEEP-ALIVE", "\u{130}d", "i\u{307}d", "id", "ÉTAG", "étag", "Etag"]
        let headers = names.enumerated().map { HTTPHeader($0.element, "v\($0.offset)") }
        for name in names + ["Kelvin", "ETAG", "\u{212A}EEP-ALIVE", "\u{131}d"] {
            let expected = headers.first { $0.name.lowercased() == name.lowercased() }?.value
            #expect(headers.value(of: name) == expected, "\(name)")
            var set = headers
            set.set(name, "new")
            var reference = headers
            reference.removeAll { $0.name.lowercased() == name.lowercased() }
            reference.append(HTTPHeader(name, "new"))
            #expect(set == reference, "\(name)")
        }
        let values = ["application/json", "Application/JSON; charset=utf-8", " ;text/HTML", ";;", ";", "", "  ", " \t ",
                      "\t application/JSON\t", "a\r\n;b", "text/html ;", ";; x/Y ;z", "APPLICATION/VND.API+JSON",
                      "application/json;\u{301}x", "Ｔext/html", "text/ht\u{301}ml; q", "\r\n", " a b ", "A\tB"]
        for value in values {
            let head = HTTPResponseHead(status: 200, headers: [HTTPHeader("content-TYPE", value)])
            let expected = value.split(separator: ";").first.map { $0.trimmingCharacters(in: " \t").lowercased() }
            #expect(head.mediaType == expected, "\(value.debugDescription)")
        }
        #expect(HTTPResponseHead(status: 200).mediaType == nil)
    }

    /// Issue 44: an ASCII path is judged byte by byte; every answer is the Character-wise one.
    @Test func graphQLEndpointsAreWhatTheCharacterWiseWayFound() {
        func reference(_ path: String, _ url: String?) -> Bool {
            if path == GraphQL.endpointName { return true }
            if let url, path == url { return true }
            var bare = Substring(path)
            if let cut = bare.firstIndex(where: { $0 == "?" || $0 == "#" }) { bare = bare[..<cut] }
            while bare.hasSuffix("/") { bare = bare.dropLast() }
            return bare.split(separator: "/").last == Substring(GraphQL.endpointName)
        }
        let paths = ["graphql", "/graphql", "/api/graphql?x=1", "/api/graphql/", "/api/graphql//#f", "graphql/", "/", "", "//",
                     "/small.json", "/graphqlx", "/xgraphql", "/GraphQL", "?graphql", "#/graphql", "/a?b/graphql", "/graphql?",
                     "https://h.example/v4/graphql", "https://h.example/graphql#x", "/gra\r\nphql", "/graphql\r\n",
                     "/graphql?\u{301}", "/graphql\u{301}", "/中文/graphql", "/graphql/中文", "/a/graphq\u{301}l"]
        for path in paths {
            for url in [nil, "https://h.example/custom", path] as [String?] {
                #expect(GraphQL.isEndpoint(path, graphqlURL: url) == reference(path, url), "\(path.debugDescription) \(url ?? "nil")")
            }
        }
    }

    @Test(arguments: [
        ("https://api.example.com/v2", "://"), ("no scheme here", "://"), ("", "://"), ("a://", "://"),
        ("/v2/user/{me}/x", "{me}"), ("{me}", "{me}"), ("{m", "{me}"), ("中文://路径", "://"), ("::/://", "://"),
        ("abc", ""),
    ])
    func byteSearchFindsWhatTheGenericSearchFinds(text: String, needle: String) {
        let fast = text.firstRange(ofBytes: needle)
        let generic = text.firstRange(of: needle)
        #expect(fast == generic, "\(text) / \(needle)")
        #expect(text.containsBytes(needle) == (generic != nil))
        #expect(Substring(text).firstRange(ofBytes: needle).map { text[$0] } == generic.map { text[$0] })
    }
}

@Suite("ASCII searches in UTF-8")
struct ASCIISearchTests {
    @Test(arguments: ["https://中文.example/p?q=1#f", "", "#", "a#b#c", "é#ü", "no marks"])
    func byteIndexesFindWhatCharacterIndexesFind(text: String) {
        for mark: Unicode.Scalar in ["#", "?", "/", ":", "@"] {
            #expect(text.firstIndex(ofASCII: mark) == text.firstIndex(of: Character(mark)), "\(text) \(mark)")
            #expect(text.lastIndex(ofASCII: mark) == text.lastIndex(of: Character(mark)), "\(text) \(mark)")
            if let found = text.firstIndex(ofASCII: mark) {
                #expect(text.index(afterASCII: found) == text.index(after: found))
            }
        }
    }
}

@Suite("Byte-wise prefixes, trims and case")
struct BytewiseStringTests {
    @Test(arguments: [
        ("--api-base", "--"), ("-v", "--"), ("HTTP/1.1 200 OK", "HTTP/"), ("http/1.1", "HTTP/"), ("", ""), ("", "x"),
        ("https://中文.example", "https://"), ("中文", "中"), ("[::1]:8080", "["), (":443", ":"),
    ])
    func bytePrefixesAnswerWhatHasPrefixAnswers(text: String, prefix: String) {
        #expect(text.hasPrefix(bytes: prefix) == text.hasPrefix(prefix), "\(text) / \(prefix)")
        #expect(Substring(text).hasPrefix(bytes: prefix) == text.hasPrefix(prefix))
    }

    @Test func droppingASCIIKeepsWhatFollowsTheMarker() {
        #expect("--api-base".droppingASCII(2) == "api-base")
        #expect("--名前=値".droppingASCII(2) == "名前=値")
        #expect(":8080".droppingASCII(1) == "8080")
        #expect("--".droppingASCII(2) == "")
        #expect("-".droppingASCII(2) == "", "past the end: empty, not a trap")
        #expect("a=b".containsASCII("="))
        #expect(!"名前".containsASCII("="))
    }

    @Test(arguments: [("a-b-c", "-", "+"), ("", "x", "y"), ("xxx", "xx", "y"), ("中文中", "中", "[中]"), ("secret secret", "secret", "***"),
                      ("nothing", "zz", "y"), ("e\u{301}e", "e", "E")])
    func replacingAllIsWhatReplacingIs(text: String, target: String, replacement: String) {
        // Byte for byte: the "e" before a combining accent is replaced too, where the
        // Character search (one Character "é") leaves it; for everything else they agree.
        if !text.unicodeScalars.contains(where: { $0.properties.isGraphemeExtend }) {
            #expect(text.replacingAll(target, with: replacement) == text.replacing(target, with: replacement))
        } else {
            #expect(text.replacingAll(target, with: replacement) == "E\u{301}E")
        }
    }

    @Test(arguments: [("  a b \t", "a b"), ("\t\t", ""), ("", ""), ("x", "x"), (" 中文 ", "中文"), ("a\u{3000}", "a\u{3000}")])
    func headerWhitespaceIsSpacesAndTabsOnly(text: String, trimmed: String) {
        #expect(HTTPSyntax.trimmingWhitespace(Substring(text)) == Substring(trimmed))
    }

    @Test(arguments: ["HTTPS", "Example.COM", "[::FFFF:1]", "", "ÄRGER.example", "İstanbul.example", "mixed中文ABC"])
    func lowercasedIsWhatLowercasedWas(text: String) {
        #expect(HTTPSyntax.lowercased(Substring(text)) == text.lowercased())
        // A slice in the middle of a longer string (its bytes start past the string's).
        let framed = "Ab" + text + "Cd"
        let middle = framed.dropFirst(2).dropLast(2)
        #expect(HTTPSyntax.lowercased(middle) == text.lowercased())
    }
}
