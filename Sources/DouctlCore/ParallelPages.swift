#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlSystem

/// How a walk fetches numbered pages several at a time (`--parallel N`, default 4).
///
/// Only start/count and page/pageSize walks whose first reply says where the list ends
/// (`total`; `totalPage` or `totalRow`) are fetched this way: every later page's request
/// is known before any of them is sent. Cursor, until_id and Link walks depend on the
/// page before and stay one at a time. Each worker thread has its own client (libcurl
/// handles are not shared between threads) and goes through the profile's `rate_limit`
/// like any request. Items are handed over in page order; at most `2 × width` pages are
/// held at once, so memory does not grow with the length of the walk.
public struct ParallelPaging: Sendable {
    /// Pages in flight at once; 1 (or less) walks one page at a time.
    public var width: Int
    /// A client for one worker thread, built on that thread.
    public var makeClient: @Sendable () throws(DouctlError) -> APIClient

    public static let defaultWidth = 4

    public init(width: Int, makeClient: @escaping @Sendable () throws(DouctlError) -> APIClient) {
        self.width = width
        self.makeClient = makeClient
    }
}

/// The pages after the first one of a numbered walk whose end the first reply gave.
struct NumberedPages {
    /// The first page's request; page `i` (0-based, after the first) changes one parameter.
    let first: APIRequest
    let key: String
    /// The parameter value of the first page and the step between pages.
    let base: Int
    let step: Int
    /// Pages after the first.
    let count: Int
    /// start/count: a short page is the last, as one at a time (page/pageSize goes on to
    /// `totalPage`).
    let shortPageEnds: Bool

    func request(_ index: Int) -> APIRequest {
        var request = first
        request.setQuery(key, String(base + (index + 1) * step))
        return request
    }

    /// The rest of the walk, when it can be fetched at once: the first page was full and
    /// its reply says how many there are. nil leaves the walk to go page after page (and
    /// so to the same stops and errors as ever, the page cap among them).
    static func plan(after page: Paginator.Page, payload: JSON, items: [JSON], of request: APIRequest,
                     scheme: PageScheme, maximumPages: Int) -> NumberedPages? {
        let plan: NumberedPages
        switch scheme {
        case .offset(let startKey, let countKey, let defaultCount):
            let start = Int(request.value(startKey) ?? "") ?? page.start ?? 0
            let pageSize = Int(request.value(countKey) ?? "") ?? page.count ?? defaultCount
            guard let total = page.total, pageSize > 0, items.count == pageSize, start >= 0 else { return nil }
            let (next, overflow) = start.addingReportingOverflow(pageSize)
            guard !overflow, total > next else { return nil }
            let left = total - next
            plan = NumberedPages(first: request, key: startKey, base: start, step: pageSize, count: left / pageSize + (left % pageSize == 0 ? 0 : 1), shortPageEnds: true)
        case .pageNumber(let pageKey, let sizeKey, let defaultSize):
            let current = page.page ?? Int(request.value(pageKey) ?? "") ?? 1
            var totalPages = page.totalPages
            if totalPages == nil, case .object(let object) = payload, let rows = object["totalRow"]?.int64Value {
                // Coding's Pageable may give only the row count.
                let pageSize = page.pageSize ?? Int(request.value(sizeKey) ?? "") ?? defaultSize
                if pageSize > 0, rows >= 0 { totalPages = Int(clamping: rows / Int64(pageSize) + (rows % Int64(pageSize) == 0 ? 0 : 1)) }
            }
            guard let totalPages, current >= 1, totalPages > current, !items.isEmpty else { return nil }
            plan = NumberedPages(first: request, key: pageKey, base: current, step: 1, count: totalPages - current, shortPageEnds: false)
        case .cursor, .until:
            return nil
        }
        // More pages than the cap: one at a time, to the cap's error as before.
        guard plan.count < maximumPages else { return nil }
        // The last page's parameter must be a number that fits.
        let (span, overflow1) = plan.count.multipliedReportingOverflow(by: plan.step)
        let (_, overflow2) = plan.base.addingReportingOverflow(span)
        return overflow1 || overflow2 ? nil : plan
    }
}

extension Paginator {
    /// The pages after the first, fetched `parallel.width` at a time, their items handed
    /// over in order with the same stops as one at a time: a failed page (what came before
    /// it stays printed), a page that repeats the one before, a short or empty page.
    func walkRest(_ plan: NumberedPages, parallel: ParallelPaging, seen: inout SeenItems,
                  emit: (JSON) throws(DouctlError) -> Void) throws(DouctlError) {
        try fetchInOrder(plan, parallel: parallel) { (number, result) throws(DouctlError) -> Bool in
            let reply: APIReply
            switch result {
            case .success(let value): reply = value
            case .failure(let error): throw failure(error, page: number, emittedBefore: seen.emitted)
            }
            let page = Self.page(of: try reply.requireJSON())
            guard let items = page.items else {
                throw .badReply("cannot paginate: the reply is not a list (\(plan.request(number - 2).summary))")
            }
            if seen.repeatsPreviousPage(items) {
                warn?("page \(number) repeats an earlier page: the server ignored the paging parameters; stopped there, after \(Paginator.items(seen.emitted))")
                return false
            }
            try seen.emitUnseen(items, emit)
            if items.isEmpty { return false }
            // A start/count list that came up short, or whose total shrank, ends here.
            if plan.shortPageEnds {
                if items.count < plan.step { return false }
                if let total = page.total, plan.base + (number - 1) * plan.step >= total { return false }
            }
            return true
        }
    }

    /// Fetches `plan`'s pages `parallel.width` at a time and hands each page's reply to
    /// `deliver` in order (page numbers from 2). `deliver` returns false to end the walk
    /// there (a short page, a repeat); a failed page is handed over as its error, and
    /// `deliver` throws it. Pages after the one where the walk ended are never delivered:
    /// workers stop claiming pages past a failure, and those in flight are dropped.
    func fetchInOrder(_ plan: NumberedPages, parallel: ParallelPaging,
                      deliver: (Int, Result<APIReply, DouctlError>) throws(DouctlError) -> Bool) throws(DouctlError) {
        let board = PageBoard(count: plan.count, window: max(2 * parallel.width, 2))
        let makeClient = parallel.makeClient
        let fetchOne: @Sendable (APIClient, Int) -> Result<APIReply, DouctlError> = { client, index in
            do throws(DouctlError) {
                return .success(try Paginator.fetch(plan.request(index), with: client))
            } catch {
                return .failure(error)
            }
        }
        let work: @Sendable () -> Void = {
            var client: APIClient?
            while let index = board.claim() {
                let result: Result<APIReply, DouctlError>
                if let client {
                    result = fetchOne(client, index)
                } else {
                    do throws(DouctlError) {
                        let worker = try makeClient()
                        client = worker
                        result = fetchOne(worker, index)
                    } catch {
                        result = .failure(error)
                    }
                }
                board.finish(index, result)
            }
        }
        var threads: [JoinableThread] = []
        for _ in 0..<min(parallel.width, plan.count) {
            if let thread = try? JoinableThread(work) { threads.append(thread) }
        }
        defer {
            board.stop()
            threads.forEach { $0.join() }
        }
        for index in 0..<plan.count {
            // No thread could start: this one fetches, one page at a time.
            let result = threads.isEmpty ? fetchOne(client, index) : board.take(index)
            if try !deliver(index + 2, result) { return }
        }
    }

    /// One page's request: the reply, which must be JSON.
    static func fetch(_ request: APIRequest, with client: APIClient) throws(DouctlError) -> APIReply {
        let reply = try client.send(request)
        // NDJSON pages (one item a line) are read by the walk.
        if reply.payload == nil, !reply.body.isEmpty, ndjsonItems(reply.body) != nil { return reply }
        _ = try reply.requireJSON()
        return reply
    }
}

/// The pages of a parallel walk between the worker threads and the one handing items over:
/// which page is next to fetch, which replies have arrived, and where the walk stopped.
final class PageBoard: @unchecked Sendable {
    private let count: Int
    private let window: Int
    private var nextToClaim = 0
    private var nextToTake = 0
    private var arrived: [Int: Result<APIReply, DouctlError>] = [:]
    /// The first page that failed: no page after it is fetched.
    private var firstFailure = Int.max
    private var stopped = false
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init(count: Int, window: Int) {
        self.count = count
        self.window = window
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// The next page to fetch, waiting while the reader is `window` pages behind; nil when
    /// there is nothing more to fetch.
    func claim() -> Int? {
        locked {
            while !stopped, nextToClaim < count, nextToClaim <= firstFailure, nextToClaim >= nextToTake + window {
                pthread_cond_wait(condition, mutex)
            }
            guard !stopped, nextToClaim < count, nextToClaim <= firstFailure else { return nil }
            defer { nextToClaim += 1 }
            return nextToClaim
        }
    }

    func finish(_ index: Int, _ result: Result<APIReply, DouctlError>) {
        locked {
            if case .failure = result { firstFailure = min(firstFailure, index) }
            if !stopped, index >= nextToTake { arrived[index] = result }
            pthread_cond_broadcast(condition)
        }
    }

    /// Page `index`'s result, waiting for it; pages are taken in order.
    func take(_ index: Int) -> Result<APIReply, DouctlError> {
        locked {
            // A page past the first failure is never fetched (the reader stops at the failure).
            while arrived[index] == nil, !(index > firstFailure && nextToClaim <= index) { pthread_cond_wait(condition, mutex) }
            let result = arrived.removeValue(forKey: index) ?? .failure(.interrupted)
            nextToTake = index + 1
            pthread_cond_broadcast(condition)
            return result
        }
    }

    /// The walk ended: workers finish the page in hand and take no other.
    func stop() {
        locked {
            stopped = true
            arrived.removeAll()
            pthread_cond_broadcast(condition)
        }
    }
}
