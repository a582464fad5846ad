import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// Paging by next links, as most REST APIs outside Douban and Coding page:
/// - the `Link` header's `rel="next"` (RFC 8288: GitHub, GitLab, Gitea);
/// - a next link in the body: `next`, `next_url`, `nextUrl`, `next_page_url`, `paging.next`
///   (Graph-style), `_links.next.href` (HAL), `links.next` or `links.next.href` (JSON:API).
///
/// A link is followed only on the origin of the page that gave it: another origin would
/// get the request's headers (and the walk would leave the API), so the walk stops there.
enum LinkPaging {
    /// Where the page after `reply` is, as the reply says.
    enum Next: Equatable {
        /// A link to follow (absolute, resolved against the page's URL).
        case link(String)
        /// The reply has paging links but no next one: this was the last page.
        case end
        /// The reply carries no links: another scheme must decide.
        case unknown

        var isLink: Bool {
            if case .link = self { return true }
            return false
        }
    }

    static func next(after head: HTTPResponseHead, payload: JSON?, pageURL: String, nextPageHeader: String? = nil) -> Next {
        let links = head.headers.filter { $0.name.lowercased() == "link" }.map(\.value)
        if !links.isEmpty {
            let parsed = LinkHeader.parse(links)
            if let next = parsed.first(where: { $0.relations.contains("next") }) {
                return resolve(next.target, against: pageURL).map(Next.link) ?? .end
            }
            // GitLab's keyset pages and GitHub's last page: links without a next one.
            if parsed.contains(where: { !$0.relations.isDisjoint(with: ["prev", "previous", "first", "last"]) }) { return .end }
        }
        // A header with the next URL (Kinto's Next-Page), absent on the last page.
        if let link = PageShapes.linkHeader(head, named: nextPageHeader) {
            return resolve(link, against: pageURL).map(Next.link) ?? .end
        }
        if let payload { return bodyNext(in: payload, pageURL: pageURL) }
        return .unknown
    }

    /// A next link in the body: present and a URL or path → follow; present and null or
    /// empty → the end; absent → unknown.
    static func bodyNext(in payload: JSON, pageURL: String) -> Next {
        guard case .object(let object) = payload else { return .unknown }
        var candidates: [JSON?] = [object["next"], object["next_url"], object["nextUrl"], object["next_page_url"]]
        if case .object(let paging)? = object["paging"] { candidates.append(paging["next"]) }
        if case .object(let links)? = object["_links"] {
            candidates.append(links["next"].flatMap { $0["href"] } ?? links["next"])
        }
        if case .object(let links)? = object["links"] {
            candidates.append(links["next"].flatMap { $0["href"] } ?? links["next"])
        }
        var sawEnd = false
        for case let value? in candidates {
            switch value {
            case .string(let text) where looksLikeLink(text):
                return resolve(text, against: pageURL).map(Next.link) ?? .end
            case .null, .string(""), .bool(false):
                sawEnd = true
            case .object(let inner) where inner["href"] == nil || inner["href"] == .null:
                sawEnd = true
            default:
                continue // a cursor token, a number: not a link
            }
        }
        return sawEnd ? .end : .unknown
    }

    /// Only what is plainly a URL or a path: a "next" cursor token is not a link.
    static func looksLikeLink(_ text: String) -> Bool {
        text.hasPrefix("http://") || text.hasPrefix("https://") || text.hasPrefix("/") || text.hasPrefix("?")
    }

    static func resolve(_ target: String, against pageURL: String) -> String? {
        HTTPURL(pageURL)?.resolve(target)?.text
    }

    /// True when `link` is on the origin of `pageURL`.
    static func sameOrigin(_ link: String, _ pageURL: String) -> Bool {
        guard let a = HTTPURL(link), let b = HTTPURL(pageURL) else { return false }
        return a.sameOrigin(as: b)
    }

    /// The items of a page from an API of any shape: a top-level array; else the first of
    /// `data`, `items`, `results`, `values`, `list`, `entries`, `records`, `nodes` that is an
    /// array (also one level down under `data`, as in `{"data": {"items": []}}`); else the
    /// object's only array member. Nil when none of these holds.
    static func items(of payload: JSON) -> [JSON]? {
        switch payload {
        case .array(let items):
            return items
        case .object(let object):
            for key in itemKeys {
                if case .array(let items)? = object[key] { return items }
            }
            if case .object(let data)? = object["data"] {
                for key in itemKeys {
                    if case .array(let items)? = data[key] { return items }
                }
            }
            let arrays = object.filter { if case .array = $0.value { return true } else { return false } }
            if arrays.count == 1, case .array(let items) = arrays[0].value { return items }
            return nil
        default:
            return nil
        }
    }

    static let itemKeys = ["data", "items", "results", "values", "list", "entries", "records", "nodes"]
}

/// What a walk by next links remembers: the pages it fetched (a link back to one of them,
/// or a page that repeats one, ends the walk instead of looping).
struct LinkWalk {
    private var visited = Set<String>()
    private var fingerprints = Set<String>()

    mutating func repeatsAnyPage(_ items: [JSON]) -> Bool {
        guard !items.isEmpty else { return false }
        let print = "\(items.count):\(items.first?.text(.compact) ?? ""):\(items.last?.text(.compact) ?? "")"
        return !fingerprints.insert(print).inserted
    }

    /// The request for a next link, nil when there is none to follow (the walk ends, or
    /// another scheme decides). A link to another origin stops the walk with an error.
    mutating func request(
        after next: LinkPaging.Next, of request: APIRequest, pageURL: String, page: Int, emitted: Int, warn: ((String) -> Void)?
    ) throws(DouctlError) -> APIRequest? {
        visited.insert(pageURL)
        guard case .link(let link) = next else { return nil }
        guard LinkPaging.sameOrigin(link, pageURL) else {
            throw .transport(.redirect("stopped after page \(page) (\(Paginator.items(emitted)) printed): its next link leads to another origin, \(Redaction.redactURL(link)); douctl follows next links on the same origin only"))
        }
        guard visited.insert(link).inserted else {
            warn?("page \(page)'s next link leads back to a page already fetched (\(Redaction.redactURL(link))); stopped there, after \(Paginator.items(emitted))")
            return nil
        }
        return APIRequest(method: "GET", path: link, headers: request.headers, sendsToken: request.sendsToken)
    }
}

/// RFC 8288 `Link` header values: `<uri>; rel="next last"; title="a, b"`, several per
/// field and several fields.
enum LinkHeader {
    struct Link: Equatable {
        var target: String
        /// Lower-cased relation types (a `rel` holds a space-separated list).
        var relations: Set<String>
    }

    static func parse(_ values: [String]) -> [Link] {
        values.flatMap(parse)
    }

    static func parse(_ value: String) -> [Link] {
        var links: [Link] = []
        var scalars = Array(value.unicodeScalars)[...]
        while true {
            // Skip to the next '<' (separators, white space, or garbage we cannot read).
            guard let open = scalars.firstIndex(of: "<") else { return links }
            scalars = scalars[scalars.index(after: open)...]
            guard let close = scalars.firstIndex(of: ">") else { return links }
            let target = String(String.UnicodeScalarView(scalars[..<close])).trimmingCharacters(in: " \t")
            scalars = scalars[scalars.index(after: close)...]
            var relations = Set<String>()
            var sawRel = false
            // Parameters until a ',' outside quotes.
            while let first = scalars.first(where: { $0 != " " && $0 != "\t" }), first == ";" {
                scalars = scalars.drop { $0 == " " || $0 == "\t" }.dropFirst()
                let name = String(String.UnicodeScalarView(scalars.prefix { $0 != "=" && $0 != ";" && $0 != "," }))
                    .trimmingCharacters(in: " \t").lowercased()
                scalars = scalars.drop { $0 != "=" && $0 != ";" && $0 != "," }
                var parameterValue = ""
                if scalars.first == "=" {
                    scalars = scalars.dropFirst().drop { $0 == " " || $0 == "\t" }
                    if scalars.first == "\"" {
                        scalars = scalars.dropFirst()
                        var escaped = false
                        var text = String.UnicodeScalarView()
                        while let scalar = scalars.first {
                            scalars = scalars.dropFirst()
                            if escaped { text.append(scalar); escaped = false; continue }
                            if scalar == "\\" { escaped = true; continue }
                            if scalar == "\"" { break }
                            text.append(scalar)
                        }
                        parameterValue = String(text)
                    } else {
                        parameterValue = String(String.UnicodeScalarView(scalars.prefix { $0 != ";" && $0 != "," }))
                            .trimmingCharacters(in: " \t")
                        scalars = scalars.drop { $0 != ";" && $0 != "," }
                    }
                }
                // The first rel parameter counts (RFC 8288 §3.3).
                if name == "rel", !sawRel {
                    sawRel = true
                    relations = Set(parameterValue.lowercased().split { $0 == " " || $0 == "\t" }.map(String.init))
                }
            }
            links.append(Link(target: target, relations: relations))
        }
    }
}

extension APIRequest {
    /// The request with the path's own query ("/x?count=5") moved into `query`, so paging
    /// reads and replaces those parameters like any field.
    func movingPathQueryIntoFields() -> APIRequest {
        guard let question = path.firstIndex(of: "?") else { return self }
        var request = self
        let queryText = path[path.index(after: question)...]
        request.path = String(path[..<question])
        var fromPath: [(String, String)] = []
        for pair in queryText.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = PercentEncoding.decode(String(parts[0]), plusAsSpace: true)
            let value = parts.count > 1 ? PercentEncoding.decode(String(parts[1]), plusAsSpace: true) : ""
            fromPath.append((name, value))
        }
        request.query = fromPath + query
        return request
    }
}
