/// Coding's legacy scopes: a comma-separated list.
enum CodingScopes {
    static let all = ["user", "user:email", "notification", "social", "social:tweet", "social:message",
                      "project", "project:members", "project:task", "project:file", "project:depot",
                      "project:key", "team"]
    /// What an authorization without `scope` grants.
    static let defaults = ["user"]

    static let descriptions: [String: String] = [
        "user": "读取用户信息",
        "user:email": "读取用户的邮箱",
        "notification": "读写通知",
        "social": "读取冒泡、好友列表",
        "social:tweet": "发冒泡、点赞、评论、删除冒泡",
        "social:message": "私信",
        "project": "读取项目信息",
        "team": "读取团队信息",
    ]

    /// The scopes in `text` (commas or spaces), the defaults when empty; the first unknown
    /// scope otherwise.
    static func parse(_ text: String?) -> Result<[String], StandardOAuthError> {
        let requested = (text ?? "").split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        if requested.isEmpty { return .success(defaults) }
        var result: [String] = []
        for scope in requested where !result.contains(scope) {
            guard all.contains(scope) else {
                return .failure(StandardOAuthError(error: "invalid_scope", description: "unknown scope \(scope)"))
            }
            result.append(scope)
        }
        return .success(result)
    }
}
