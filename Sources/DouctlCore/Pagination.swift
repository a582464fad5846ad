import DouctlJSON
import DouctlSystem

/// Walks every page of a list endpoint and hands each item over once, in order.
///
/// Three schemes, as the APIs have them:
/// - `offset`: Douban's `start`/`count`; stops at a short page or at `total`.
/// - `pageNumber`: Coding's Pageable `{list, page, pageSize, totalPage}`; stops at `totalPage`.
/// - `cursor`: Coding's tweet timelines; the next page starts after the last item's id
///   (`last_id`, first page 99999999) and the walk stops at an empty page.
public enum PageScheme: Sendable, Equatable {
    case offset(startKey: String = "start", countKey: String = "count", defaultCount: Int = 20)
    case pageNumber(pageKey: String = "page", sizeKey: String = "pageSize", defaultSize: Int = 20)
    case cursor(key: String = "last_id", itemKey: String = "id", first: String? = nil)
    /// Douban timelines: the next page is everything up to the last item's id, exclusive
    /// (`until_id` is inclusive, so numeric ids step one below); stops at a short page.
    case until(key: String = "until_id", itemKey: String = "id", pageSize: Int = 20)
}

public struct Paginator {
    public let client: APIClient
    /// Stops a runaway walk against a server that ignores paging parameters. Reaching it
    /// is an error (exit 8): the walk did not reach the end.
    public static let defaultMaximumPages = 100_000
    public var maximumPages = Paginator.defaultMaximumPages
    /// Where a walk says what it could not tell (where it ends, why it stopped early):
    /// one line, without the warning prefix the output adds.
    public var warn: ((String) -> Void)?
    /// Numbered pages several at a time, when the first reply says where the list ends
    /// (see `ParallelPaging`); nil walks one page at a time.
    public var parallel: ParallelPaging?
    /// Where a page's items are when the reply is an object (`--items`, the profile's
    /// `items_key`): a member name or a dotted path (`rows`, `data.items`).
    public var itemsKey: String?

    public init(client: APIClient) {
        self.client = client
    }

    /// "1 item", "0 items", "2 items": how a walk's messages count what they printed.
    public static func items(_ count: Int) -> String {
        count == 1 ? "1 item" : "\(count) items"
    }

    /// Sends `request` page after page, calling `emit` for each item. Items seen on this page
    /// or the one before (same `id`) are skipped, so a list that shifts under us by less
    /// than a page yields no duplicates; memory stays bounded by two pages of ids, however
    /// long the walk.
    public func walk(_ request: APIRequest, scheme: PageScheme? = nil, emit: (JSON) throws(DouctlError) -> Void) throws(DouctlError) {
        var request = Self.withFirstCursor(request.movingPathQueryIntoFields(), scheme: scheme)
        let given = scheme
        var scheme = scheme
        var seen = SeenItems()
        var links = LinkWalk()
        var pages = 0
        var ndjson = false
        var followedLink = false
        var followedShape = false
        var lastCursor: String?
        while pages < maximumPages {
            pages += 1
            let reply = try fetchPage(request, number: pages, emittedBefore: seen.emitted)
            let payload = try Self.pagePayload(reply, ndjson: &ndjson)
            let pageURL = FormEncoding.appendQuery(request.query, to: client.profile.url(for: request.path))
            let linked = LinkPaging.next(after: reply.head, payload: payload, pageURL: pageURL, nextPageHeader: client.profile.nextPageHeader)
            var page = Self.page(of: payload)
            if scheme == nil { scheme = client.profile.rules.pageScheme(guessedFrom: payload) }
            if let itemsKey, case .object = payload {
                guard case .array(let named)? = Self.value(in: payload, at: itemsKey) else {
                    throw .badReply("cannot paginate: the reply has no list at '\(itemsKey)' (\(request.summary))")
                }
                page.items = named
            }
            // A page that speaks of paging with several arrays (Datasette's _shape=objects):
            // its one array of objects.
            let objectRows = linked == .unknown ? nil : payload.objectValue.flatMap(PageShapes.onlyArrayOfObjects)
            guard let items = page.items ?? LinkPaging.items(of: payload) ?? objectRows else {
                // A lone document (`api /user --paginate`) that links nowhere is the whole
                // answer: printed as the walk's one item, as gh does. Past the first page, or
                // with a next link, a reply that is not a list is still an error.
                if pages == 1, !linked.isLink {
                    try emit(payload)
                    return
                }
                throw .badReply("cannot paginate: the reply is not a list (\(request.summary)); name the key of its items with --items KEY")
            }
            if seen.repeatsPreviousPage(items) || links.repeatsAnyPage(items) {
                warn?("page \(pages) repeats an earlier page: the server ignored the paging parameters or links back; stopped there, after \(Paginator.items(seen.emitted))")
                return
            }
            try seen.emitUnseen(items, emit)
            if let next = try links.request(after: linked, of: request, pageURL: pageURL, page: pages, emitted: seen.emitted, warn: warn) {
                request = next
                followedLink = true
                continue
            }
            // A walk by next links ends at the page that has none (Datasette's last page
            // carries no Link header at all).
            if linked == .end || (followedLink && linked == .unknown) { return }
            // A page number in a header, a cursor in the body (`PageShapes`).
            switch PageShapes.next(after: reply.head, payload: payload, profile: client.profile) {
            case .parameter(let name, let value):
                if items.isEmpty { return }
                guard value != lastCursor else {
                    warn?("page \(pages) gives the same next cursor as the page before (\(name)=\(value)); stopped there, after \(Paginator.items(seen.emitted))")
                    return
                }
                lastCursor = value
                request = PageShapes.request(request, setting: name, to: value)
                followedShape = true
                continue
            case .end:
                return
            case .unknown:
                if followedShape { return }
            }
            if pages == 1, linked == .unknown, let parallel, parallel.width > 1,
               let plan = NumberedPages.plan(after: page, payload: payload, items: items, of: request, scheme: scheme ?? .offset(), maximumPages: maximumPages) {
                try walkRest(plan, parallel: parallel, seen: &seen, emit: emit)
                return
            }
            guard !items.isEmpty, let next = Self.nextRequest(after: page, items: items, of: request, scheme: scheme ?? .offset()) else {
                if given == nil, linked == .unknown, !page.saysAnythingAboutPages, client.profile.rules.warnsWhenTheEndIsAGuess {
                    warn?("the reply says nothing about further pages (no Link header, no next link, no total); took page \(pages) as the last, after \(Paginator.items(seen.emitted))")
                }
                return
            }
            request = next
        }
        throw .badReply("stopped after \(maximumPages) pages without reaching the last one (the page cap; \(Paginator.items(seen.emitted)) \(seen.emitted == 1 ? "was" : "were") printed; \(request.summary))")
    }

    /// A page's JSON: the reply's payload, or its lines when it is NDJSON (one item a line,
    /// as Datasette's `_nl=on` sends): an array of them. Once a walk has met NDJSON, a page
    /// of one line (one object) or of none is a page of one item or of none.
    static func pagePayload(_ reply: APIReply, ndjson: inout Bool) throws(DouctlError) -> JSON {
        if reply.payload == nil, !reply.isUnparsedJSONArray, let lines = ndjsonItems(reply.body) {
            if !lines.isEmpty || ndjson {
                ndjson = true
                return .array(lines)
            }
        }
        let payload = try reply.requireJSON()
        if ndjson, case .object = payload { return .array([payload]) }
        return payload
    }

    /// The values of an NDJSON body, one a line (blank lines skipped); nil when a line is
    /// not JSON.
    static func ndjsonItems(_ body: [UInt8]) -> [JSON]? {
        var items: [JSON] = []
        for line in body.split(separator: 0x0A) {
            let trimmed = line.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
            if trimmed.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            guard let item = try? JSONParser.parse(Array(trimmed)) else { return nil }
            items.append(item)
        }
        return items
    }

    /// The value at a dotted path ("data.items"); a member whose own name has a dot is
    /// found by its whole name first.
    static func value(in json: JSON, at path: String) -> JSON? {
        if let whole = json[path] { return whole }
        var current: JSON? = json
        for key in path.split(separator: ".", omittingEmptySubsequences: false) {
            current = current?[String(key)]
        }
        return current
    }

    /// A cursor walk's first page asks from the scheme's starting cursor, unless the caller
    /// chose where to start.
    static func withFirstCursor(_ request: APIRequest, scheme: PageScheme?) -> APIRequest {
        var request = request
        if case .cursor(let key, _, let first)? = scheme, let first, !request.query.contains(where: { $0.0 == key }) {
            request.query.append((key, first))
        }
        return request
    }

    /// One page's payload; a failure after the first page says how far the walk got.
    private func fetchPage(_ request: APIRequest, number: Int, emittedBefore emitted: Int) throws(DouctlError) -> APIReply {
        do {
            return try Self.fetch(request, with: client)
        } catch {
            throw failure(error, page: number, emittedBefore: emitted)
        }
    }

    /// What was printed stays printed; the error says where the walk stopped.
    func failure(_ error: DouctlError, page number: Int, emittedBefore emitted: Int) -> DouctlError {
        guard number > 1 else { return error }
        // A stop says why itself (`StopReason`): --max-time's says which page it struck.
        return error.annotated("page \(number) failed; the \(Paginator.items(emitted)) before it \(emitted == 1 ? "was" : "were") printed")
    }

    /// What a walk remembers between pages: the ids of the last two pages (the seam where a
    /// shifting list repeats items; not every id ever seen, which grew without bound on long
    /// walks), and the previous page's first item (a server that ignores paging parameters
    /// sends the same page again).
    struct SeenItems {
        /// Ids of the page being handed over, and of the page before it.
        var ids = Set<String>()
        var previousIDs = Set<String>()
        var previousFirst: JSON?
        var emitted = 0

        /// How many ids the window holds now (for tests).
        var windowCount: Int { ids.count + previousIDs.count }

        mutating func repeatsPreviousPage(_ items: [JSON]) -> Bool {
            if let first = items.first, first == previousFirst { return true }
            previousFirst = items.first
            return false
        }

        mutating func emitUnseen(_ items: [JSON], _ emit: (JSON) throws(DouctlError) -> Void) throws(DouctlError) {
            // The window slides: the page before last drops out.
            previousIDs = ids
            ids = []
            for item in items {
                if let id = item["id"]?.scalarText {
                    if ids.contains(id) { continue }
                    // Still a duplicate on the next page: keep it in the window.
                    if previousIDs.contains(id) { ids.insert(id); continue }
                    ids.insert(id)
                }
                try emit(item)
                emitted += 1
            }
        }
    }

    /// The request for the page after `page` (which held `items`, not empty), or nil when
    /// `page` was the last.
    static func nextRequest(after page: Page, items: [JSON], of request: APIRequest, scheme: PageScheme) -> APIRequest? {
        var request = request
        switch scheme {
        case .offset(let startKey, let countKey, let defaultCount):
            let start = Int(request.value(startKey) ?? "") ?? page.start ?? 0
            let pageSize = Int(request.value(countKey) ?? "") ?? page.count ?? defaultCount
            let (next, overflow) = start.addingReportingOverflow(items.count)
            if items.count < pageSize || overflow { return nil }
            if let total = page.total, next >= total { return nil }
            request.setQuery(startKey, String(next))
        case .pageNumber(let pageKey, let sizeKey, let defaultSize):
            let current = page.page ?? Int(request.value(pageKey) ?? "") ?? 1
            if let totalPages = page.totalPages {
                if current >= totalPages { return nil }
            } else if items.count < (page.pageSize ?? Int(request.value(sizeKey) ?? "") ?? defaultSize) {
                return nil
            }
            let (next, overflow) = current.addingReportingOverflow(1)
            if overflow { return nil }
            request.setQuery(pageKey, String(next))
        case .cursor(let key, let itemKey, _):
            guard let last = items.last?[itemKey]?.scalarText else { return nil }
            request.setQuery(key, last)
        case .until(let key, let itemKey, let pageSize):
            if items.count < pageSize { return nil }
            guard let last = items.last?[itemKey]?.scalarText, let until = untilValue(below: last) else { return nil }
            request.setQuery(key, until)
        }
        return request
    }

    /// `until_id` is inclusive: numeric ids step one below the last item; at the bottom of
    /// the range there is nothing older to ask for (nil). Other ids are passed as they are.
    static func untilValue(below last: String) -> String? {
        guard let number = Int64(last) else { return last }
        return number == Int64.min ? nil : String(number - 1)
    }

    /// The items and paging fields of one reply.
    struct Page {
        var items: [JSON]?
        var start: Int?
        var count: Int?
        var total: Int?
        var page: Int?
        var pageSize: Int?
        var totalPages: Int?

        /// Whether the reply named any position or size at all: without one, and without
        /// links, a short page is only a guess at the end.
        var saysAnythingAboutPages: Bool {
            start != nil || count != nil || total != nil || page != nil || pageSize != nil || totalPages != nil
        }
    }

    static func page(of payload: JSON) -> Page {
        switch payload {
        case .array(let items):
            return Page(items: items)
        case .object(let object):
            func int(_ key: String) -> Int? { object[key]?.int64Value.map { Int(clamping: $0) } }
            if case .array(let list)? = object["list"] {
                return Page(items: list, page: int("page"), pageSize: int("pageSize"), totalPages: int("totalPage"))
            }
            // Douban lists: {"start","count","total","users":[...]}: the one array member.
            let arrays = object.filter { if case .array = $0.value { return true } else { return false } }
            if arrays.count == 1, case .array(let items) = arrays[0].value {
                return Page(items: items, start: int("start"), count: int("count"), total: int("total"))
            }
            return Page(items: nil)
        default:
            return Page(items: nil)
        }
    }

}

extension PageScheme {
    /// For `api --paginate` (a style's `pageScheme(guessedFrom:)`): Pageable objects walk
    /// by page, bare arrays as the style says, everything else by start/count.
    public static func guessed(from payload: JSON, bareArrays: PageScheme) -> PageScheme {
        if case .object(let object) = payload, object["list"] != nil { return .pageNumber() }
        if case .array = payload { return bareArrays }
        return .offset()
    }
}

extension APIRequest {
    /// The last value of a query parameter.
    public func value(_ key: String) -> String? {
        query.last { $0.0 == key }?.1
    }

    /// Sets a query parameter, replacing any earlier values.
    public mutating func setQuery(_ key: String, _ value: String) {
        query.removeAll { $0.0 == key }
        query.append((key, value))
    }
}
