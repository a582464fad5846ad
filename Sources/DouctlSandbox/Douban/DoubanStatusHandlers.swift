#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlServer
import DouctlSystem

/// Douban's statuses (广播, `/shuo/v2/statuses/…`): posting (text, a picture, or a recommended
/// link), the home and user timelines, one status (and its pack), comments, reshares and likes.
struct DoubanStatusHandlers: Sendable {
    /// The app name shown as `source.title` for statuses posted through the API.
    static let appName = "douctl"

    let state: LockedValue<SandboxState>
    let baseURL: BaseURL
    let pictureDirectory: String
    let authentication: DoubanAuthentication
    /// The sandbox's wall clock (`SandboxConfiguration.clock`).
    let clock: SandboxClock

    // MARK: - POST /shuo/v2/statuses/

    func postStatus(_ exchange: Exchange) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        let submission = try StatusSubmission.read(exchange, pictureDirectory: pictureDirectory)
        if let problem = submission.imageProblem { throw problem }
        var staged = submission.image
        defer { if let staged { unlink(staged.path) } }
        let hasRecommendation = !submission.recURL.isEmpty || !submission.recTitle.isEmpty
        if staged == nil && !hasRecommendation && submission.text.allSatisfy({ $0.isWhitespace }) {
            throw DoubanError.inputTooShort
        }
        let now = clock.now()
        let base = baseURL.value
        let directory = pictureDirectory
        let outcome: Result<JSON, DoubanError> = state.withLock { state in
            var status = StatusRecord(id: state.newStatusID(), userID: viewer.userID, text: submission.text, created: now,
                                      kind: .text, recommendation: nil, pictureID: nil, resharedID: nil,
                                      source: Self.appName)
            if let image = staged {
                // With a picture, every rec_* field is ignored.
                let pictureID = state.nextPictureID
                let picture = PictureRecord(id: pictureID, fileName: "p\(pictureID).\(image.info.format.fileExtension)",
                                            contentType: image.info.format.rawValue, width: image.info.width,
                                            height: image.info.height, size: image.size, isAnimated: image.info.isAnimated)
                guard rename(image.path, directory + "/" + picture.fileName) == 0 else {
                    return .failure(DoubanError(status: 500, code: 999, name: "unknow_v2_error",
                                                detail: "cannot store the picture: \(SystemError("rename"))"))
                }
                staged = nil
                state.nextPictureID += 1
                state.pictures[pictureID] = picture
                status.kind = .photo
                status.pictureID = pictureID
            } else if hasRecommendation {
                status.kind = .rec
                // The documented limits: title 100 bytes, href 1024, description 200.
                status.recommendation = Recommendation(
                    title: truncateUTF8(submission.recTitle, maxBytes: 100), url: truncateUTF8(submission.recURL, maxBytes: 1024),
                    description: truncateUTF8(submission.recDescription, maxBytes: 200), image: submission.recImage)
            }
            state.insert(status)
            return .success(state.render(status, viewer: viewer.userID, base: base))
        }
        return Reply.json(200, try outcome.get())
    }

    // MARK: - Timelines

    private func timelineQuery(_ exchange: Exchange) -> (since: Int64?, until: Int64?, start: Int, count: Int) {
        let paging = DoubanPaging(exchange)
        return (exchange.query("since_id").flatMap { Int64($0) }, exchange.query("until_id").flatMap { Int64($0) },
                paging.start, paging.count)
    }

    /// The caller's statuses and those of the people they follow, newest first.
    func homeTimeline(_ exchange: Exchange) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        let query = timelineQuery(exchange)
        let base = baseURL.value
        let json: JSON = state.withLock { state in
            let authors = Set(state.followingIDs(of: viewer.userID) + [viewer.userID])
            let statuses = state.timeline(authors: authors, sinceID: query.since, untilID: query.until,
                                          start: query.start, count: query.count)
            return .array(statuses.map { state.render($0, viewer: viewer.userID, base: base) })
        }
        return Reply.json(200, json)
    }

    /// One user's statuses (by id or uid; the caller's own without one), newest first.
    func userTimeline(_ exchange: Exchange, name: String?) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        let query = timelineQuery(exchange)
        let base = baseURL.value
        let json: JSON? = state.withLock { state in
            guard let user = name.map({ state.user(named: $0) }) ?? state.users[viewer.userID] else { return nil }
            let statuses = state.timeline(authors: [user.id], sinceID: query.since, untilID: query.until,
                                          start: query.start, count: query.count)
            return .array(statuses.map { state.render($0, viewer: viewer.userID, base: base) })
        }
        guard let json else { throw DoubanError.notFound }
        return Reply.json(200, json)
    }

    // MARK: - /shuo/v2/statuses/:id

    func status(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        let base = baseURL.value
        if exchange.request.method == "DELETE" {
            let outcome: Result<(JSON, String?), DoubanError> = state.withLock { state in
                guard let status = state.statuses[id] else { return .failure(.notFound) }
                guard status.userID == viewer.userID else { return .failure(.needPermission) }
                let json = state.render(status, viewer: viewer.userID, base: base)
                return .success((json, state.removeStatus(id)))
            }
            let (json, pictureFile) = try outcome.get()
            if let pictureFile { unlink(pictureDirectory + "/" + pictureFile) }
            return Reply.json(200, json)
        }
        let packed = exchange.query("pack") == "true" || exchange.query("pack") == "1"
        let json: JSON? = state.withLock { state in
            guard let status = state.statuses[id] else { return nil }
            let rendered = state.render(status, viewer: viewer.userID, base: base)
            guard packed else { return rendered }
            let resharers = (state.reshares[id] ?? []).reversed().prefix(20).compactMap { state.statuses[$0]?.userID }
            let comments = (state.commentsByStatus[id] ?? []).prefix(20).compactMap { state.comments[$0] }
            let likers = (state.likes[id] ?? []).reversed().prefix(20).map(\.userID)
            return ["status": rendered,
                    "reshare_users": .array(resharers.compactMap { state.users[$0] }.map { state.statusUser($0, base: base) }),
                    "comments": .array(comments.map { state.render($0, base: base) }),
                    "like_users": .array(likers.compactMap { state.users[$0] }.map { state.statusUser($0, base: base) })]
        }
        guard let json else { throw DoubanError.notFound }
        return Reply.json(200, json)
    }

    // MARK: - Comments

    /// GET: the comments, oldest first (`start`/`count`). POST `text`: a new comment (201).
    func statusComments(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        let base = baseURL.value
        if exchange.request.method == "POST" {
            let text = try exchange.field("text") ?? ""
            guard !text.allSatisfy({ $0.isWhitespace }) else {
                guard state.withLock({ $0.statuses[id] != nil }) else { throw DoubanError.notFound }
                throw DoubanError.inputTooShort
            }
            let now = clock.now()
            let json: JSON? = state.withLock { state in
                guard state.statuses[id] != nil else { return nil }
                let comment = CommentRecord(id: state.nextCommentID, statusID: id, userID: viewer.userID, text: text,
                                            created: now, source: Self.appName)
                state.nextCommentID += 1
                state.comments[comment.id] = comment
                state.commentsByStatus[id, default: []].append(comment.id)
                state.generation += 1
                return state.render(comment, base: base)
            }
            guard let json else { throw DoubanError.notFound }
            return Reply.json(201, json)
        }
        let paging = DoubanPaging(exchange)
        let json: JSON? = state.withLock { state in
            guard state.statuses[id] != nil else { return nil }
            let comments = paging.slice(state.commentsByStatus[id] ?? []).compactMap { state.comments[$0] }
            return .array(comments.map { state.render($0, base: base) })
        }
        guard let json else { throw DoubanError.notFound }
        return Reply.json(200, json)
    }

    /// GET one comment; DELETE it (its author or the status's owner), answering the comment.
    func comment(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        let base = baseURL.value
        let deleting = exchange.request.method == "DELETE"
        let outcome: Result<JSON, DoubanError> = state.withLock { state in
            guard let comment = state.comments[id] else { return .failure(.notFound) }
            let json = state.render(comment, base: base)
            guard deleting else { return .success(json) }
            let statusOwner = state.statuses[comment.statusID]?.userID
            guard comment.userID == viewer.userID || statusOwner == viewer.userID else { return .failure(.needPermission) }
            state.comments[id] = nil
            state.commentsByStatus[comment.statusID]?.removeAll { $0 == id }
            state.generation += 1
            return .success(json)
        }
        return Reply.json(200, try outcome.get())
    }

    // MARK: - Reshare

    /// GET: who reshared it lately (newest first); POST: reshare it (a new status of the
    /// caller with `reshared_status`; resharing a reshare reshares its original).
    func reshare(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        let base = baseURL.value
        if exchange.request.method == "POST" {
            _ = try exchange.fields()
            let now = clock.now()
            let json: JSON? = state.withLock { state in
                guard let target = state.statuses[id] else { return nil }
                let originalID = target.resharedID ?? target.id
                guard state.statuses[originalID] != nil else { return nil }
                let status = StatusRecord(id: state.newStatusID(), userID: viewer.userID, text: "", created: now,
                                          kind: .reshare, recommendation: nil, pictureID: nil, resharedID: originalID,
                                          source: Self.appName)
                state.insert(status)
                return state.render(status, viewer: viewer.userID, base: base)
            }
            guard let json else { throw DoubanError.notFound }
            return Reply.json(200, json)
        }
        let paging = DoubanPaging(exchange)
        let json: JSON? = state.withLock { state in
            guard state.statuses[id] != nil else { return nil }
            var seen: Set<Int64> = []
            let resharers = (state.reshares[id] ?? []).reversed().compactMap { state.statuses[$0]?.userID }
                .filter { seen.insert($0).inserted }
            return .array(paging.slice(resharers).compactMap { state.users[$0] }.map {
                state.shuoUser($0, viewer: viewer.userID, base: base)
            })
        }
        guard let json else { throw DoubanError.notFound }
        return Reply.json(200, json)
    }

    // MARK: - Like

    /// GET: who liked it lately (newest first); POST: like (the Status, `liked: true`);
    /// DELETE: unlike (`liked: false`).
    func like(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        let base = baseURL.value
        let method = exchange.request.method
        if method == "POST" { _ = try exchange.fields() }
        let paging = DoubanPaging(exchange)
        let now = clock.now()
        let json: JSON? = state.withLock { state in
            guard let status = state.statuses[id] else { return nil }
            switch method {
            case "POST":
                if !state.isLiked(id, by: viewer.userID) {
                    state.likes[id, default: []].append((viewer.userID, now))
                    state.generation += 1
                }
            case "DELETE":
                if state.isLiked(id, by: viewer.userID) {
                    state.likes[id]?.removeAll { $0.userID == viewer.userID }
                    state.generation += 1
                }
            default:
                let likers = (state.likes[id] ?? []).reversed().map(\.userID)
                return .array(paging.slice(likers).compactMap { state.users[$0] }.map {
                    state.shuoUser($0, viewer: viewer.userID, base: base)
                })
            }
            return state.render(status, viewer: viewer.userID, base: base)
        }
        guard let json else { throw DoubanError.notFound }
        return Reply.json(200, json)
    }
}
