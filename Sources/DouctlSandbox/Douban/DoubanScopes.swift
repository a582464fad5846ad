/// Douban's OAuth scopes: what a token may do.
enum DoubanScopes {
    static let all = [
        "douban_basic_common", "community_basic_user", "shuo_basic_r", "shuo_basic_w", "shuo_private",
        "community_basic_note", "community_basic_photo", "community_advanced_photo", "community_advanced_doumail_r",
        "community_advanced_doumail_w", "community_basic_online", "community_advanced_online",
        "book_basic_r", "book_basic_w", "movie_basic_r", "movie_basic_w", "music_basic_r", "music_basic_w",
        "event_basic_r", "event_basic_w", "movie_basic", "movie_advance_r", "movie_advance_w",
        "movie_premium_r", "movie_premium_w", "travel_basic_r", "douban_common_basic",
    ]
    /// What an authorization without `scope` grants.
    static let defaults = ["douban_basic_common", "shuo_basic_r", "shuo_basic_w"]

    static let descriptions: [String: String] = [
        "douban_basic_common": "读取你的豆瓣公开信息",
        "shuo_basic_r": "读取你的广播、关注关系",
        "shuo_basic_w": "发布和删除广播、评论、赞、转播，关注和取消关注",
    ]

    /// A comma- (or space-) separated list; nil or empty means the defaults. Unknown → 125.
    static func parse(_ text: String?) throws -> [String] {
        let requested = (text ?? "").split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        if requested.isEmpty { return defaults }
        var result: [String] = []
        for scope in requested where !result.contains(scope) {
            guard all.contains(scope) else { throw DoubanError.invalidScope(scope) }
            result.append(scope)
        }
        return result
    }
}
