import DouctlServer
import DouctlSystem

/// What is not an API call: the root page that describes both fakes, the uploaded pictures of
/// either (under Douban's `/view/status/…` URLs), and the placeholder served for every avatar.
struct StaticHandlers: Sendable {
    let state: LockedValue<SandboxState>
    let baseURL: BaseURL
    let pictureDirectory: String

    /// `/`: a plain-text map of both fakes, their endpoints and seeded accounts.
    func rootPage() -> HTTPServerResponse {
        let base = baseURL.value
        let text = """
            douctl sandbox: a local fake of Douban API v2 with OAuth2, and of Coding's legacy API.

            OAuth2:  \(base)/service/auth2/auth  (client_id \(Sandbox.clientID), client_secret \(Sandbox.clientSecret))
                     \(base)/service/auth2/token
                     \(base)/service/auth2/device  (RFC 8628; verify at /service/auth2/device/verify)
                     \(base)/service/auth2/revoke
            API:     \(base)/v2/user/~me, /v2/user/:name, /v2/user?q=
                     \(base)/shuo/v2/statuses/…, /shuo/v2/users/:id/following|followers, /shuo/v2/friendships/create|destroy
            Users:   ahbei (阿北, the default login), linglu, chenmo, sunxiaomei, wangdali

            Coding (same client id and secret):
            OAuth2:  \(base)/oauth_authorize.html, \(base)/api/oauth/access_token (expires_in is a string)
                     \(base)/api/oauth/device  (RFC 8628; verify at /oauth_device.html); token as ?access_token=
            Login:   GET /api/captcha/login (sets the sid and XSRF-TOKEN cookies), GET /api/getCaptcha (PNG; the
                     code is also logged), POST /api/v2/account/login (account, password = hex SHA-1, j_captcha),
                     POST /api/check_two_factor_auth_code (code, logged too); send X-XSRF-TOKEN on POST/DELETE
            API:     /api/account/current_user, /api/user/key/:global_key, /api/tweet/public_tweets,
                     /api/activities/user_tweet, /api/tweet/user_public, /api/tweet/:global_key/:id, POST /api/tweet, …
            Users:   coder (码农小王, the default login), twofa (two-factor login), devmei, opszhang;
                     password \(CodingSeed.password)

            """
        return .text(200, text)
    }

    func picture(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        guard let picture = state.withLock({ $0.pictures[id] }) else { throw DoubanError.notFound }
        guard exchange.request.path.hasSuffix("." + picture.fileExtension) else { throw DoubanError.notFound }
        return HTTPServerResponse(status: 200, headers: [("Content-Type", picture.contentType), ("Cache-Control", "max-age=86400")],
                                  body: .file(path: pictureDirectory + "/" + picture.fileName))
    }

    /// A 1×1 GIF for every avatar URL, so clients that fetch avatars stay offline.
    func avatar() -> HTTPServerResponse {
        HTTPServerResponse(status: 200, headers: [("Content-Type", "image/gif"), ("Cache-Control", "max-age=86400")],
                           body: .bytes(ImageInfo.placeholderGIF))
    }
}
