import DouctlJSON
import DouctlSystem

/// Douban API v2: bare JSON on success; errors `{"msg","code","request"}`, auth errors as
/// HTTP 400; offset (`start`/`count`) lists; pictures in `attachments[].media[]`; numeric
/// status ids; OAuth2 with comma-separated scopes.
public struct DoubanStyle: APIStyleRules {
    public init() {}

    // MARK: replies

    /// Douban's error codes (developers.douban.com/wiki/?title=api_v2): 102–123 and 1000
    /// are the token's or the permission's, 1001 a missing resource, 111/112 rate limits.
    public func kind(ofCode code: String) -> APIError.Kind? {
        switch code {
        case "102", "103", "106", "108", "109", "119", "123": return .authentication
        case "1000": return .permission
        case "1001": return .notFound
        case "111", "112": return .rateLimited
        default: return nil
        }
    }

    /// 103 invalid_access_token, 106 access_token_has_expired, with HTTP 400–403.
    public func isExpiredToken(code: String, status: Int) -> Bool {
        (400...403).contains(status) && (code == "106" || code == "103")
    }

    public func codeMayMeanExpiredToken(status: Int) -> Bool { (400...403).contains(status) }

    /// 1000 need_permission: the token is fine, the app lacks the scope.
    public func refusesPermission(_ error: APIError) -> Bool {
        error.kind == .permission || error.httpStatus == 403 || error.code == "1000"
    }

    // MARK: paging

    /// Pageable objects by page; everything else by `start`/`count`.
    public func pageScheme(guessedFrom payload: JSON) -> PageScheme {
        PageScheme.guessed(from: payload, bareArrays: .offset())
    }

    // MARK: operations

    public func service(for client: APIClient) -> SocialService { DoubanService(client: client) }

    /// Each `attachments[].media[]` of type image (the status's own, then a reshared
    /// original's), its `original_src` (the full-size picture) else its `src`.
    public func pictureURLs(in status: JSON) -> [String] {
        var urls: [String] = []
        // A reshare (转播) shows the original's pictures: those count too, after its own.
        let attachments = (status["attachments"]?.arrayValue ?? []) + (status["reshared_status"]?["attachments"]?.arrayValue ?? [])
        for attachment in attachments {
            for media in attachment["media"]?.arrayValue ?? [] {
                guard (media["type"]?.stringValue ?? "image") == "image" else { continue }
                let original = media["original_src"]?.stringValue ?? ""
                let url = original.isEmpty ? media["src"]?.stringValue ?? "" : original
                if !url.isEmpty { urls.append(url) }
            }
        }
        return StatusPictures.webURLsOnce(urls)
    }

    /// Douban status ids are numbers: anything else (`shuo get abc`) is refused, exit 2,
    /// rather than sent to come back as a 404.
    public func checkStatusID(_ id: String) throws(DouctlError) {
        guard !id.isEmpty, id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw .usage("invalid status id '\(HTTPSyntax.printable(id))': a Douban status id is a number")
        }
    }

    // MARK: login

    public var scopeSeparator: String { "," }

    public var sandbox: SandboxConventions? {
        SandboxConventions(
            presetName: "sandbox", label: "Douban",
            scopes: ["douban_basic_common", "shuo_basic_r", "shuo_basic_w"], tokenPlacement: .header,
            endpoints: [
                .init(.authorizeURL, "/service/auth2/auth"),
                .init(.tokenURL, "/service/auth2/token"),
                .init(.deviceAuthorizationURL, "/service/auth2/device"),
                .init(.revokeURL, "/service/auth2/revoke"),
            ])
    }
}
