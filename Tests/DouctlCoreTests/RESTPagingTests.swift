@testable import DouctlCore
import DouctlTestSupport
import DouctlHTTP
import DouctlJSON
import Testing

/// Issue 22, REST: Link headers (RFC 8288), next links in bodies, the page size in the
/// path's query, next links on the same origin only, and walks that cannot tell where they end.
@Suite("Pagination by next links")
struct RESTPagingTests {
    final class Warnings: @unchecked Sendable { var lines: [String] = [] }

    func walk(_ pages: [ScriptedTransport.Answer], _ request: APIRequest) throws -> (items: [JSON], requests: [HTTPRequest], warnings: [String]) {
        let transport = ScriptedTransport(pages)
        var paginator = Paginator(client: APIClient(profile: try TestProfiles.douban(), http: transport, tokens: FixedToken("t")))
        let warnings = Warnings()
        paginator.warn = { warnings.lines.append($0) }
        var items: [JSON] = []
        try paginator.walk(request) { (item: JSON) throws(DouctlError) in items.append(item) }
        #expect(transport.unused == 0, "every scripted page was asked for")
        return (items, transport.requests, warnings.lines)
    }

    /// A walk over a profile with no preset: any REST API.
    func plainWalk(_ pages: [ScriptedTransport.Answer], _ request: APIRequest) throws -> (items: [JSON], warnings: [String]) {
        let transport = ScriptedTransport(pages)
        var config = ConfigFile()
        config.setProfile("plain", ProfileSettings([(.apiBase, .text(Self.base))]))
        var paginator = Paginator(client: APIClient(profile: try config.resolve("plain"), http: transport, tokens: FixedToken("t")))
        let warnings = Warnings()
        paginator.warn = { warnings.lines.append($0) }
        var items: [JSON] = []
        try paginator.walk(request) { (item: JSON) throws(DouctlError) in items.append(item) }
        return (items, warnings.lines)
    }

    @Test func aPlainAPIWhoseRepliesSayNothingAboutPagesIsWarnedAbout() throws {
        let (items, warnings) = try plainWalk([.json(200, #"[{"id":1},{"id":2}]"#)], APIRequest(path: "/things"))
        #expect(Self.ids(items) == ["1", "2"])
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("says nothing about further pages") == true, "\(warnings)")
    }

    @Test func aPlainAPIThatCountsItsItemsEndsQuietly() throws {
        let (items, warnings) = try plainWalk([.json(200, #"{"total":2,"items":[{"id":1},{"id":2}]}"#)], APIRequest(path: "/things"))
        #expect(Self.ids(items) == ["1", "2"])
        #expect(warnings.isEmpty, "\(warnings)")
    }

    static let base = "http://127.0.0.1:8089"
    static func ids(_ items: [JSON]) -> [String] { items.compactMap { $0["id"]?.scalarText } }
    static func link(_ value: String) -> [HTTPHeader] { [HTTPHeader("Link", value)] }

    // MARK: RFC 8288 parsing

    @Test(arguments: [
        (#"<https://a/x?page=2>; rel="next", <https://a/x?page=5>; rel="last""#, "https://a/x?page=2"),
        (#"<https://a/x?page=1>; rel="prev first", <https://a/x?page=3>; rel="last next""#, "https://a/x?page=3"),
        (#"<https://a/y>; title="a, b; rel=next"; rel=prev, <https://a/z>;rel=NEXT"#, "https://a/z"),
        (#"<https://a/q>; rel=next; rel=prev"#, "https://a/q"),
        (#"<https://a/q>; rel=prev; rel=next"#, nil),
        (#"garbage, <https://a/w> ; rel = "next""#, "https://a/w"),
        (#"<https://a/unterminated; rel="next""#, nil),
    ] as [(String, String?)])
    func linkHeaderParsing(value: String, next: String?) {
        #expect(LinkHeader.parse(value).first { $0.relations.contains("next") }?.target == next)
    }

    @Test func severalLinkFieldsAreOneList() {
        let links = LinkHeader.parse([#"<https://a/1>; rel="prev""#, #"<https://a/3>; rel="next""#])
        #expect(links.map(\.target) == ["https://a/1", "https://a/3"])
    }

    // MARK: walks

    @Test func aLinkHeaderWalkFollowsNextUntilThereIsNone() throws {
        let (items, requests, warnings) = try walk([
            .json(200, #"[{"id":1},{"id":2}]"#, headers: Self.link(#"<\#(Self.base)/repos?per_page=2&page=2>; rel="next", <\#(Self.base)/repos?per_page=2&page=2>; rel="last""#)),
            .json(200, #"[{"id":3}]"#, headers: Self.link(#"<\#(Self.base)/repos?per_page=2&page=1>; rel="prev first""#)),
        ], APIRequest(path: "/repos", query: [("per_page", "2")]))
        #expect(Self.ids(items) == ["1", "2", "3"])
        #expect(requests.map(\.url) == ["\(Self.base)/repos?per_page=2", "\(Self.base)/repos?per_page=2&page=2"])
        #expect(requests[1].header("Authorization") == "Bearer t")
        #expect(warnings.isEmpty)
    }

    @Test func aRelativeLinkResolvesAgainstThePage() throws {
        let (items, requests, _) = try walk([
            .json(200, #"{"items":[{"id":1}]}"#, headers: Self.link(#"</things?cursor=abc>; rel="next""#)),
            .json(200, #"{"items":[{"id":2}]}"#),
        ], APIRequest(path: "/things"))
        #expect(Self.ids(items) == ["1", "2"])
        #expect(requests.last?.url == "\(Self.base)/things?cursor=abc")
    }

    @Test(arguments: [
        #"{"results":[{"id":1}],"next":"\#(base)/p?page=2"}"#,
        #"{"data":[{"id":1}],"next_url":"/p?page=2"}"#,
        #"{"data":[{"id":1}],"paging":{"next":"\#(base)/p?page=2"}}"#,
        #"{"_embedded":{},"values":[{"id":1}],"_links":{"next":{"href":"/p?page=2"}}}"#,
        #"{"data":[{"id":1}],"links":{"self":"/p","next":"/p?page=2"},"meta":{"total":2}}"#,
    ])
    func nextLinksInTheBody(first: String) throws {
        let (items, requests, _) = try walk([
            .json(200, first),
            .json(200, #"{"data":[{"id":2}],"next":null,"links":{"next":null}}"#),
        ], APIRequest(path: "/p"))
        #expect(Self.ids(items) == ["1", "2"])
        #expect(requests.last?.url == "\(Self.base)/p?page=2")
    }

    @Test func thePageSizeInThePathsQueryCounts() throws {
        // Before: the size was read from -f fields only, so a full page of 2 looked short
        // against the default of 20 and the walk stopped after one page.
        let (items, requests, _) = try walk([
            .json(200, #"[{"id":1},{"id":2}]"#),
            .json(200, #"[{"id":3}]"#),
        ], APIRequest(path: "/v2/things?count=2&q=a%20b"))
        #expect(Self.ids(items) == ["1", "2", "3"])
        #expect(requests.map { $0.queryValue("start") } == [nil, "2"])
        #expect(requests.allSatisfy { $0.queryValue("count") == "2" && $0.queryValue("q") == "a b" })
    }

    @Test func aNextLinkToAnotherOriginStopsTheWalkWithAnError() throws {
        let transport = ScriptedTransport([
            .json(200, #"[{"id":1}]"#, headers: Self.link(#"<https://evil.example/steal?page=2>; rel="next""#)),
        ])
        let paginator = Paginator(client: APIClient(profile: try TestProfiles.douban(), http: transport, tokens: FixedToken("t")))
        var items: [JSON] = []
        do {
            try paginator.walk(APIRequest(path: "/repos")) { (item: JSON) throws(DouctlError) in items.append(item) }
            Issue.record("a cross-origin next link must not end the walk as a success")
        } catch {
            guard case .transport(.redirect(let text)) = error else { Issue.record("\(error)"); return }
            #expect(text.contains("another origin"), "\(text)")
            #expect(text.contains("https://evil.example/steal"), "\(text)")
        }
        #expect(Self.ids(items) == ["1"])
        #expect(transport.requests.count == 1)
    }

    @Test func aLinkLoopBackToPageOneStopsWithAWarning() throws {
        let (items, requests, warnings) = try walk([
            .json(200, #"[{"n":1}]"#, headers: Self.link(#"</x?page=2>; rel="next""#)),
            .json(200, #"[{"n":2}]"#, headers: Self.link(#"</x?page=1>; rel="next""#)),
            .json(200, #"[{"n":1}]"#, headers: Self.link(#"</x?page=2>; rel="next""#)),
        ], APIRequest(path: "/x"))
        #expect(items.map { $0["n"]?.scalarText } == ["1", "2"])
        #expect(requests.count == 3)
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("repeats an earlier page") == true, "\(warnings)")
    }

    @Test func aLinkBackToTheSameURLStopsWithAWarning() throws {
        let (items, requests, warnings) = try walk([
            .json(200, #"[{"n":1}]"#, headers: Self.link(#"</x?page=2>; rel="next""#)),
            .json(200, #"[{"n":2}]"#, headers: Self.link(#"</x?page=2>; rel="next""#)),
        ], APIRequest(path: "/x"))
        #expect(items.count == 2)
        #expect(requests.count == 2)
        #expect(warnings.first?.contains("leads back to a page already fetched") == true, "\(warnings)")
    }

    @Test func aServerThatIgnoresPagingParametersIsReported() throws {
        let page = #"[{"id":1},{"id":2},{"id":3}]"#
        let (items, requests, warnings) = try walk([.json(200, page), .json(200, page)],
                                                   APIRequest(path: "/x", query: [("count", "3")]))
        #expect(Self.ids(items) == ["1", "2", "3"])
        #expect(requests.count == 2)
        #expect(warnings.first?.contains("ignored the paging parameters") == true, "\(warnings)")
    }
}
