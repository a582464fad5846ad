/// A tweet timeline's cursor: `last_id` (tweets with a smaller id; the first page is
/// `last_id=99999999`) and/or `last_time` (epoch ms of `sort_time`; older tweets), and
/// `pageSize` (default 20, at most 100).
struct CodingCursor {
    var beforeID: Int64?
    var beforeTime: Int64?
    var pageSize: Int

    var isFirstPage: Bool { (beforeID == nil || beforeID == CodingState.firstPageLastID) && beforeTime == nil }

    init(_ exchange: Exchange) throws(CodingError) {
        func number(_ name: String) throws(CodingError) -> Int64? {
            guard let text = exchange.query(name)?.trimmingSpaces(), !text.isEmpty else { return nil }
            guard let value = Int64(text) else { throw .badRequest("\(name) must be a whole number") }
            return value
        }
        pageSize = try number("pageSize").map { Int(max(1, min(100, $0))) } ?? 20
        beforeID = try number("last_id")
        beforeTime = try number("last_time")
    }
}

/// A Pageable request (likes, comments): `page` (1-based) and `pageSize` (default 20, at most 1000).
struct CodingPaging {
    let page: Int
    let pageSize: Int

    init(_ exchange: Exchange) {
        page = exchange.query("page").flatMap { Int($0.trimmingSpaces()) }.map { max(1, $0) } ?? 1
        pageSize = exchange.query("pageSize").flatMap { Int($0.trimmingSpaces()) }.map { max(1, min(1000, $0)) } ?? 20
    }

    /// This page of `items`.
    func slice<T>(_ items: [T]) -> ArraySlice<T> {
        let (start, overflow) = (page - 1).multipliedReportingOverflow(by: pageSize)
        guard !overflow, start < items.count else { return [] }
        return items[start..<min(items.count, start + pageSize)]
    }
}
