import DouctlJSON
import DouctlSystem

/// Paging hints a description gives (issue 42): what `profile add --openapi` writes into the
/// profile's paging keys (issue 43's `items_key`, `cursor_key`, `cursor_param`,
/// `next_page_header`) so `--paginate` walks a list operation whose shape its own rules do
/// not find. Read from a GET operation's first 2xx response:
/// - a `Link` header described: walked by its rel="next" already (nothing to set);
/// - another header whose name says next (`X-Next-Page`, `Next-Cursor`): next_page_header,
///   and the query parameter it is sent back as (cursor_param);
/// - a property of the reply (top level, or one object down: meta, paging, links...) whose
///   name is next-something (`next_cursor`, `nextPageToken`, `next_marker`, `next`): a URL
///   (format uri, or no query parameter to send it back as) is a next link, walked already;
///   otherwise a cursor (cursor_key), sent back as the query parameter of the same name
///   without "next" (`marker`, `pageToken`, `cursor`), else one named cursor, after, page...;
/// - the reply's array of items, when it has one beside a next link or cursor (items_key).
public struct OpenAPIPaging: Sendable, Equatable {
    public var itemsKey: String?
    public var cursorKey: String?
    public var cursorParam: String?
    public var nextPageHeader: String?
    /// The response describes a Link header (walked without any key).
    public var linkHeader = false
    /// The reply has a next link in its body (walked without any key).
    public var nextLink: String?
    /// The operation it was read from (for the note profile add prints).
    public var operation = ""

    public init(itemsKey: String? = nil, cursorKey: String? = nil, cursorParam: String? = nil, nextPageHeader: String? = nil) {
        self.itemsKey = itemsKey
        self.cursorKey = cursorKey
        self.cursorParam = cursorParam
        self.nextPageHeader = nextPageHeader
    }

    /// Lowercase letters and digits only: `next_page-Token` → `nextpagetoken`.
    static func normalized(_ name: String) -> String {
        String(name.lowercased().filter { $0.isASCII && ($0.isLetter || $0.isNumber) })
    }

    /// Query parameters a cursor is commonly sent back as, in order of preference.
    static let cursorParameters = ["cursor", "after", "startingafter", "startcursor", "pagetoken", "continuationtoken", "marker", "page", "token"]

    /// The query parameter (by its own name) a value called `remainder` (a name without
    /// its "next") goes back as.
    static func parameter(for remainder: String, among parameters: [String]) -> String? {
        if !remainder.isEmpty, let same = parameters.first(where: { normalized($0) == remainder }) { return same }
        for wanted in cursorParameters {
            if let found = parameters.first(where: { normalized($0) == wanted }) { return found }
        }
        return nil
    }

    /// The hint of one GET operation: its 2xx reply's schema (references inlined), the
    /// names of the headers it describes, the names of its query parameters; nil when it
    /// shows no paging.
    public static func hint(schema: JSON, headers: [String], queryParameters: [String]) -> OpenAPIPaging? {
        var hint = OpenAPIPaging()
        var found = false
        if headers.contains(where: { $0.lowercased() == "link" }) {
            hint.linkHeader = true
            found = true
        } else if let header = headers.first(where: { text(afterLast: "next", in: normalized($0)) != normalized($0) }) {
            let remainder = text(afterLast: "next", in: normalized(header))
            if let parameter = parameter(for: remainder, among: queryParameters) {
                hint.nextPageHeader = header
                hint.cursorParam = parameter
                found = true
            }
        }
        let object = SchemaCheck.effective(schema)
        let properties = object["properties"]?.objectValue ?? JSONObject()
        if !found {
            // The reply's own next-something, at the top or one object down.
            var places: [(String, JSON)] = properties.map { ($0.key, $0.value) }
            for (name, member) in properties {
                for (inner, value) in SchemaCheck.effective(member)["properties"]?.objectValue ?? JSONObject() { places.append((name + "." + inner, value)) }
            }
            for (path, property) in places {
                let last = String(path.split(separator: ".").last ?? "")
                let name = normalized(last)
                guard name.hasPrefix("next") else { continue }
                let schema = SchemaCheck.effective(property)
                let types = SchemaCheck.typeNames(schema["type"]) ?? []
                guard types.isEmpty || types.contains("string") || types.contains("integer") else { continue }
                let remainder = String(name.dropFirst(4))
                let format = schema["format"]?.stringValue ?? ""
                if format == "uri" || format == "url" || ["url", "link", "href", "pageurl"].contains(remainder) {
                    hint.nextLink = path
                    found = true
                    break
                }
                if let parameter = parameter(for: remainder, among: queryParameters) {
                    hint.cursorKey = path
                    hint.cursorParam = parameter
                    found = true
                    break
                }
                if remainder.isEmpty {
                    // "next" with nothing to send it back as: a link (DRF's next, without a format).
                    hint.nextLink = path
                    found = true
                    break
                }
            }
        }
        guard found else { return nil }
        // The items: the one array at the top, else in data.
        let arrays = properties.filter { SchemaCheck.typeNames(SchemaCheck.effective($0.value)["type"])?.contains("array") == true }
        if arrays.count == 1 { hint.itemsKey = arrays[0].key }
        else if let data = properties["data"].map(SchemaCheck.effective)?["properties"]?.objectValue {
            let inner = data.filter { SchemaCheck.typeNames(SchemaCheck.effective($0.value)["type"])?.contains("array") == true }
            if inner.count == 1 { hint.itemsKey = "data." + inner[0].key }
        }
        return hint
    }

    /// The hint the profile takes from all of a description's list operations: the shape
    /// most of them share (the first such operation names it).
    public static func common(_ hints: [OpenAPIPaging]) -> OpenAPIPaging? {
        var counted: [(OpenAPIPaging, Int)] = []
        for hint in hints {
            var shape = hint
            shape.operation = ""
            if let index = counted.firstIndex(where: { var other = $0.0; other.operation = ""; return other == shape }) { counted[index].1 += 1 }
            else { counted.append((hint, 1)) }
        }
        return counted.max { $0.1 < $1.1 }?.0
    }
}

/// The text after the last `marker` in `text` (all of it when there is none).
private func text(afterLast marker: String, in text: String) -> String {
    let bytes = Array(text.utf8), pattern = Array(marker.utf8)
    var index = bytes.count - pattern.count
    while index >= 0 {
        if Array(bytes[index..<(index + pattern.count)]) == pattern { return String(decoding: bytes[(index + pattern.count)...], as: UTF8.self) }
        index -= 1
    }
    return text
}
