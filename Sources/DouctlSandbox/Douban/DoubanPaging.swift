/// Douban's list paging: `start` (default 0) and `count` (default 20, at most 200; larger asks
/// are clamped).
struct DoubanPaging {
    static let maxCount = 200
    static let defaultCount = 20

    let start: Int
    let count: Int

    init(_ exchange: Exchange) {
        start = max(0, exchange.query("start").flatMap { Int($0) } ?? 0)
        var count = exchange.query("count").flatMap { Int($0) } ?? Self.defaultCount
        if count < 1 { count = Self.defaultCount }
        self.count = min(count, Self.maxCount)
    }

    /// This page of `items`.
    func slice<T>(_ items: [T]) -> ArraySlice<T> {
        guard start < items.count else { return [] }
        return items[start..<min(items.count, start + count)]
    }
}
