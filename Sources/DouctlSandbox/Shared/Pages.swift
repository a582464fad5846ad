import DouctlSystem

/// The HTML a person sees: the consent page, the device verification page, and notices.
/// Plain forms that POST back, so they work in any browser and in tests without JavaScript.
enum Pages {
    private static func document(title: String, body: String, realm: APIRealm = .douban) -> String {
        let footer = realm == .coding
            ? "douctl sandbox — a local fake of Coding's legacy API. Nothing here reaches coding.net."
            : "douctl sandbox — a local fake of Douban API v2. Nothing here reaches douban.com."
        let color = realm == .coding ? "#0066cc" : "#007722"
        return """
        <!doctype html>
        <html lang="zh-CN">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(HTMLText.escape(title)) · douctl sandbox</title>
        <style>
        body { font-family: -apple-system, "PingFang SC", "Noto Sans CJK SC", sans-serif; max-width: 34em; margin: 3em auto; padding: 0 1em; color: #222; }
        h1 { color: \(color); font-size: 1.4em; }
        .box { border: 1px solid #ddd; border-radius: 6px; padding: 1em 1.2em; }
        .notice { background: #fff4e0; border: 1px solid #f0c36d; padding: .6em .8em; border-radius: 4px; }
        button { font-size: 1em; padding: .4em 1.2em; margin-right: .6em; }
        .approve { background: #007722; color: #fff; border: 0; border-radius: 4px; }
        code, input[name=user_code] { font-family: ui-monospace, monospace; }
        small { color: #777; }
        </style>
        </head>
        <body>
        <h1>\(HTMLText.escape(title))</h1>
        \(body)
        <p><small>\(HTMLText.escape(footer))</small></p>
        </body>
        </html>

        """
    }

    private static func userChoice(_ users: [(uid: String, name: String)], selected: String) -> String {
        let options = users.map { user in
            "<option value=\"\(HTMLText.escape(user.uid))\"\(user.uid == selected ? " selected" : "")>\(HTMLText.escape(user.name)) (\(HTMLText.escape(user.uid)))</option>"
        }.joined(separator: "\n")
        return "<p><label>以此用户身份授权 / Sign in as: <select name=\"user\">\n\(options)\n</select></label></p>"
    }

    static func consent(_ request: PendingConsent, users: [(uid: String, name: String)], defaultUID: String) -> String {
        let descriptions = request.realm == .coding ? CodingScopes.descriptions : DoubanScopes.descriptions
        let scopes = request.scopes.map { scope in
            "<li><code>\(HTMLText.escape(scope))</code>\(descriptions[scope].map { " — " + HTMLText.escape($0) } ?? "")</li>"
        }.joined(separator: "\n")
        let action = request.realm == .coding ? "/oauth_authorize.html" : "/service/auth2/auth"
        let body = """
            <div class="box">
            <p>应用 <strong>\(HTMLText.escape(request.clientID))</strong> 请求访问你的\(request.realm == .coding ? " Coding " : "豆瓣")账号。<br>
            The application <strong>\(HTMLText.escape(request.clientID))</strong> asks for access to your account.</p>
            <p>权限 / Scopes:</p>
            <ul>
            \(scopes)
            </ul>
            <p><small>授权后将返回 / After this you return to: <code>\(HTMLText.escape(request.redirectURI))</code></small></p>
            <form method="post" action="\(action)">
            <input type="hidden" name="request_id" value="\(HTMLText.escape(request.ticket))">
            \(userChoice(users, selected: defaultUID))
            <p><button class="approve" type="submit" name="decision" value="approve">授权 Approve</button>
            <button type="submit" name="decision" value="deny">拒绝 Deny</button></p>
            </form>
            </div>
            """
        return document(title: "授权 douctl-sandbox", body: body, realm: request.realm)
    }

    static func deviceVerify(userCode: String, users: [(uid: String, name: String)], defaultUID: String, notice: String?,
                             realm: APIRealm = .douban) -> String {
        let action = realm == .coding ? "/oauth_device.html" : "/service/auth2/device/verify"
        let body = """
            \(notice.map { "<p class=\"notice\">\(HTMLText.escape($0))</p>" } ?? "")
            <div class="box">
            <p>输入设备上显示的代码。<br>Enter the code your device shows.</p>
            <form method="post" action="\(action)">
            <p><input name="user_code" value="\(HTMLText.escape(userCode))" placeholder="ABCD-EFGH" size="12" autocomplete="off" autofocus></p>
            \(userChoice(users, selected: defaultUID))
            <p><button class="approve" type="submit" name="decision" value="approve">授权 Approve</button>
            <button type="submit" name="decision" value="deny">拒绝 Deny</button></p>
            </form>
            </div>
            """
        return document(title: "设备登录 Device sign-in", body: body, realm: realm)
    }

    static func message(title: String, message: String, realm: APIRealm = .douban) -> String {
        document(title: title, body: "<div class=\"box\"><p>\(HTMLText.escape(message))</p></div>", realm: realm)
    }
}

/// A failure on one of the HTML pages, shown as a page.
struct PageError: Error {
    var status: Int
    var title: String
    var message: String
}
