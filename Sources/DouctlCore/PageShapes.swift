import DouctlHTTP
import DouctlJSON

/// The shapes of "next page" that are neither a Link header nor a next link in the body
/// (issue 43), found without configuration where the reply makes them plain:
/// - a header holding the next page's URL (Kinto's `Next-Page`) or its number (GitLab's
///   `X-Next-Page`); the profile's `next_page_header` names another;
/// - a cursor in the body (`next_cursor`, `response_metadata.next_cursor`, `meta.next_cursor`,
///   `nextPageToken`, `next_page_token`; the profile's `cursor_key` names another), sent
///   back as the request parameter `cursor_param` names (default: `cursor`, or `pageToken`
///   and `page_token` for Google's tokens) — in the query, or in the body of a POST
///   (a JSON object or a form), as Notion's search takes `start_cursor`.
enum PageShapes {
    /// What the reply says about the next page beyond links.
    enum Next: Equatable {
        /// Send the same request again with `parameter` set to `value`.
        case parameter(String, String)
        /// The reply names this shape and says there is no next page.
        case end
        case unknown
    }

    static let urlHeaders = ["Next-Page"]
    static let numberHeaders = ["X-Next-Page"]
    static let cursorKeys = ["next_cursor", "response_metadata.next_cursor", "meta.next_cursor", "nextPageToken", "next_page_token", "nextCursor"]

    /// A next URL from a header (`Next-Page`, or `next_page_header` when its value is a URL).
    static func linkHeader(_ head: HTTPResponseHead, named: String?) -> String? {
        for name in (named.map { [$0] } ?? []) + urlHeaders {
            if let value = head.header(name)?.trimmingCharacters(in: " \t"), LinkPaging.looksLikeLink(value) { return value }
        }
        return nil
    }

    static func next(after head: HTTPResponseHead, payload: JSON, profile: ResolvedProfile) -> Next {
        // A header with the page number (or cursor): X-Next-Page: 3; empty on the last page.
        for name in (profile.nextPageHeader.map { [$0] } ?? []) + numberHeaders {
            guard let value = head.header(name)?.trimmingCharacters(in: " \t") else { continue }
            if LinkPaging.looksLikeLink(value) { continue }
            if value.isEmpty { return .end }
            return .parameter(profile.cursorParam ?? "page", value)
        }
        // A cursor in the body.
        guard case .object = payload else { return .unknown }
        for key in (profile.cursorKey.map { [$0] } ?? []) + cursorKeys {
            guard let value = Paginator.value(in: payload, at: key) else { continue }
            if payload["has_more"] == .bool(false) || payload["hasMore"] == .bool(false) { return .end }
            switch value {
            case .string(let cursor) where !cursor.isEmpty:
                return .parameter(profile.cursorParam ?? defaultParameter(for: key), cursor)
            case .number(let cursor):
                return .parameter(profile.cursorParam ?? defaultParameter(for: key), cursor)
            case .null, .string, .bool(false):
                return .end
            default:
                continue
            }
        }
        return .unknown
    }

    static func defaultParameter(for key: String) -> String {
        switch key {
        case "nextPageToken": return "pageToken"
        case "next_page_token": return "page_token"
        default: return "cursor"
        }
    }

    /// `request` with `parameter` set: in a JSON object body or a form body when the
    /// request has one (a POST search), else in the query.
    static func request(_ request: APIRequest, setting parameter: String, to value: String) -> APIRequest {
        var request = request
        switch request.body {
        case .raw(.bytes(let bytes), let type) where type?.containsBytes("json") == true:
            if case .object(var object)? = try? JSONParser.parse(bytes) {
                object[parameter] = .string(value)
                request.body = .raw(.bytes(JSON.object(object).serialized(.compact)), contentType: type)
                return request
            }
        case .form(var pairs):
            pairs.removeAll { $0.0 == parameter }
            pairs.append((parameter, value))
            request.body = .form(pairs)
            return request
        default:
            break
        }
        request.setQuery(parameter, value)
        return request
    }

    /// The items of an object page with several arrays (Datasette's `_shape=objects`:
    /// `rows` beside `columns` and `primary_keys`, arrays of strings): the one non-empty
    /// array of objects; an empty list when every array of objects is empty.
    static func onlyArrayOfObjects(_ object: JSONObject) -> [JSON]? {
        var found: [JSON]?
        var empty = false
        for (_, value) in object {
            guard case .array(let items) = value else { continue }
            if items.isEmpty { empty = true; continue }
            guard items.allSatisfy({ if case .object = $0 { return true } else { return false } }) else { continue }
            if found != nil { return nil }
            found = items
        }
        return found ?? (empty ? [] : nil)
    }
}
