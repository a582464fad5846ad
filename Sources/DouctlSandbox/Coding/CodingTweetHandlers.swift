#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlServer
import DouctlSystem

/// Coding's tweets (冒泡), their comments and likes, and tweet pictures (/api/tweet…, /api/social/tweet…).
/// Reading needs the scope `social`; posting, liking, commenting and deleting `social:tweet`.
extension SandboxCore {
    /// `insert_image` takes pictures up to 10 MiB (larger → 1003 `image_too_large`).
    static let maxCodingImageBytes: Int64 = 10 << 20

    // MARK: - Paging

    /// A tweet timeline's cursor: `last_id` (tweets with a smaller id; the first page is
    /// `last_id=99999999`) and/or `last_time` (epoch ms of `sort_time`; older tweets), and
    /// `pageSize` (default 20, at most 100).
    private struct Cursor {
        var beforeID: Int64?
        var beforeTime: Int64?
        var pageSize: Int

        var isFirstPage: Bool { (beforeID == nil || beforeID == CodingState.firstPageLastID) && beforeTime == nil }
    }

    private func cursor(_ exchange: Exchange) throws(CodingError) -> Cursor {
        func number(_ name: String) throws(CodingError) -> Int64? {
            guard let text = exchange.query(name)?.trimmingSpaces(), !text.isEmpty else { return nil }
            guard let value = Int64(text) else { throw .badRequest("\(name) must be a whole number") }
            return value
        }
        let pageSize = try number("pageSize").map { Int(max(1, min(100, $0))) } ?? 20
        return Cursor(beforeID: try number("last_id"), beforeTime: try number("last_time"), pageSize: pageSize)
    }

    /// A Pageable request: `page` (1-based) and `pageSize` (default 20, at most 1000).
    private func pageQuery(_ exchange: Exchange) -> (page: Int, pageSize: Int) {
        let page = exchange.query("page").flatMap { Int($0.trimmingSpaces()) }.map { max(1, $0) } ?? 1
        let pageSize = exchange.query("pageSize").flatMap { Int($0.trimmingSpaces()) }.map { max(1, min(1000, $0)) } ?? 20
        return (page, pageSize)
    }

    private func pageSlice<T>(_ items: [T], page: Int, pageSize: Int) -> ArraySlice<T> {
        let (start, overflow) = (page - 1).multipliedReportingOverflow(by: pageSize)
        guard !overflow, start < items.count else { return [] }
        return items[start..<min(items.count, start + pageSize)]
    }

    private func tweetList(_ exchange: Exchange, caller: CodingCaller, authors: (SandboxState) -> Set<Int64>?) throws -> HTTPServerResponse {
        let cursor = try cursor(exchange)
        let base = baseURL
        let json: JSON = state.withLock { state in
            let tweets = state.coding.tweetPage(authors: authors(state), beforeID: cursor.beforeID,
                                                beforeTime: cursor.beforeTime, limit: cursor.pageSize)
            return .array(tweets.map { state.coding.render($0, viewer: caller.userID, base: base) })
        }
        return Reply.coding(json)
    }

    // MARK: - Timelines

    /// `GET /api/tweet/public_tweets`: everyone's tweets, `sort=time` (cursor) or `sort=hot`
    /// (one page only: any cursor past the first page gives an empty array).
    func codingPublicTweets(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social")
        guard exchange.query("sort") == "hot" else { return try tweetList(exchange, caller: caller) { _ in nil } }
        let cursor = try cursor(exchange)
        guard cursor.isFirstPage else { return Reply.coding([]) }
        let base = baseURL
        let json: JSON = state.withLock { state in
            .array(state.coding.hotTweets(limit: cursor.pageSize).map { state.coding.render($0, viewer: caller.userID, base: base) })
        }
        return Reply.coding(json)
    }

    /// `GET /api/activities/user_tweet`: the caller's tweets and those of the people they follow.
    func codingFriendsTweets(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social")
        return try tweetList(exchange, caller: caller) { state in
            Set(state.coding.followingIDs(of: caller.userID) + [caller.userID])
        }
    }

    /// `GET /api/tweet/user_public?global_key=KEY` (2014 clients: `user_id=ID`).
    func codingUserTweets(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social")
        guard let name = (exchange.query("global_key") ?? exchange.query("user_id"))?.nonEmpty else {
            throw CodingError.badRequest("global_key is missing")
        }
        guard let userID = state.withLock({ $0.coding.user(named: name)?.id }) else { throw CodingError.userNotFound }
        return try tweetList(exchange, caller: caller) { _ in [userID] }
    }

    // MARK: - One tweet

    /// `GET /api/tweet/{global_key}/{id}`: 1101 (HTTP 404) unless the tweet exists and is that user's.
    func codingTweetDetail(_ exchange: Exchange, globalKey: String, id: Int64) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social")
        let base = baseURL
        let json: JSON? = state.withLock { state in
            guard let tweet = state.coding.tweets[id], let owner = state.coding.users[tweet.ownerID],
                  owner.globalKey == globalKey || String(owner.id) == globalKey else { return nil }
            return state.coding.render(tweet, viewer: caller.userID, base: base)
        }
        guard let json else { throw CodingError.tweetNotFound }
        return Reply.coding(json)
    }

    /// `POST /api/tweet`: `content` (Markdown), optional `location`, `coord`, `address`,
    /// `device`. 907 while an action captcha is required.
    func codingPostTweet(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social:tweet")
        let content = try exchange.field("content") ?? ""
        let location = try exchange.field("location") ?? ""
        let coord = try exchange.field("coord") ?? ""
        let address = try exchange.field("address") ?? ""
        let device = try exchange.field("device") ?? ""
        guard !state.withLock({ $0.coding.actionCaptchaRequired }) else { throw CodingError.needCaptcha }
        guard !content.allSatisfy({ $0.isWhitespace }) else { throw CodingError.contentEmpty }
        let now = SandboxClock.now()
        let base = baseURL
        let json: JSON = state.withLock { state in
            let tweet = state.coding.addTweet(ownerID: caller.userID, content: content, created: now, device: device,
                                              location: location, coord: coord, address: address)
            return state.coding.render(tweet, viewer: caller.userID, base: base)
        }
        return Reply.coding(json)
    }

    /// `DELETE /api/tweet/{id}`: one's own only (1102 otherwise).
    func codingDeleteTweet(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social:tweet")
        let outcome: CodingError? = state.withLock { state in
            guard let tweet = state.coding.tweets[id] else { return .tweetNotFound }
            guard tweet.ownerID == caller.userID else { return .notOwner }
            state.coding.removeTweet(id)
            return nil
        }
        if let outcome { throw outcome }
        return Reply.coding(nil)
    }

    // MARK: - Likes

    /// `POST /api/tweet/{id}/like` and `/unlike` (both idempotent).
    func codingLike(_ exchange: Exchange, id: Int64, like: Bool) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social:tweet")
        _ = try exchange.fields()
        let now = SandboxClock.now()
        let found: Bool = state.withLock { state in
            guard state.coding.tweets[id] != nil else { return false }
            let liked = state.coding.isLiked(id, by: caller.userID)
            if like && !liked {
                state.coding.likes[id, default: []].append((caller.userID, now))
            } else if !like && liked {
                state.coding.likes[id]?.removeAll { $0.userID == caller.userID }
            }
            return true
        }
        guard found else { throw CodingError.tweetNotFound }
        return Reply.coding(nil)
    }

    /// `GET /api/tweet/{id}/likes`: a Pageable of Users, the latest likers first.
    func codingLikes(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social")
        let (page, pageSize) = pageQuery(exchange)
        let base = baseURL
        let json: JSON? = state.withLock { state in
            guard state.coding.tweets[id] != nil else { return nil }
            let likers = (state.coding.likes[id] ?? []).reversed().map(\.userID)
            let items = pageSlice(likers, page: page, pageSize: pageSize).compactMap { state.coding.users[$0] }
                .map { state.coding.render($0, viewer: caller.userID, base: base) }
            return CodingState.pageable(items, page: page, pageSize: pageSize, totalRow: likers.count)
        }
        guard let json else { throw CodingError.tweetNotFound }
        return Reply.coding(json)
    }

    // MARK: - Comments

    /// `GET /api/tweet/{id}/comments`: a Pageable of Comments, the newest first.
    func codingComments(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social")
        let (page, pageSize) = pageQuery(exchange)
        let base = baseURL
        let json: JSON? = state.withLock { state in
            guard state.coding.tweets[id] != nil else { return nil }
            let ids = Array((state.coding.commentsByTweet[id] ?? []).reversed())
            let items = pageSlice(ids, page: page, pageSize: pageSize).compactMap { state.coding.comments[$0] }
                .map { state.coding.render($0, viewer: caller.userID, base: base) }
            return CodingState.pageable(items, page: page, pageSize: pageSize, totalRow: ids.count)
        }
        guard let json else { throw CodingError.tweetNotFound }
        return Reply.coding(json)
    }

    /// `POST /api/tweet/{id}/comment` (`content`): the new Comment.
    func codingAddComment(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social:tweet")
        let content = try exchange.field("content") ?? ""
        let now = SandboxClock.now()
        let base = baseURL
        let outcome: Result<JSON, CodingError> = state.withLock { state in
            guard state.coding.tweets[id] != nil else { return .failure(.tweetNotFound) }
            guard !content.allSatisfy({ $0.isWhitespace }) else { return .failure(.contentEmpty) }
            let comment = state.coding.addComment(tweetID: id, ownerID: caller.userID, content: content, created: now)
            return .success(state.coding.render(comment, viewer: caller.userID, base: base))
        }
        return Reply.coding(try outcome.get())
    }

    /// `DELETE /api/tweet/{id}/comment/{commentId}`: by the comment's author or the tweet's owner.
    func codingDeleteComment(_ exchange: Exchange, tweetID: Int64, commentID: Int64) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "social:tweet")
        let outcome: CodingError? = state.withLock { state in
            guard let tweet = state.coding.tweets[tweetID] else { return .tweetNotFound }
            guard let comment = state.coding.comments[commentID], comment.tweetID == tweetID else { return .commentNotFound }
            guard comment.ownerID == caller.userID || tweet.ownerID == caller.userID else { return .notOwner }
            state.coding.removeComment(commentID)
            return nil
        }
        if let outcome { throw outcome }
        return Reply.coding(nil)
    }

    // MARK: - Pictures

    /// `POST /api/tweet/insert_image`, multipart with the picture in part `tweetImg`: streamed
    /// to disk (never held whole), recognized by its magic bytes (JPEG, PNG, GIF, WebP, BMP),
    /// at most 10 MiB. Answers the picture's URL, which serves the exact bytes.
    func codingInsertImage(_ exchange: Exchange) throws -> HTTPServerResponse {
        _ = try codingCaller(exchange, scope: "social:tweet")
        guard exchange.isMultipart else { throw CodingError.imageMissing }
        exchange.bodyHandled = true
        guard let reader = MultipartReader(body: exchange.request.body, contentType: exchange.request.headers["Content-Type"] ?? "") else {
            throw CodingError.badRequest("multipart body without a boundary")
        }
        var staged: StagedCodingImage?
        var problem: CodingError?
        do {
            while let part = try reader.nextPart() {
                if part.name == "tweetImg" && staged == nil && problem == nil {
                    let (record, outcome) = try stageCodingImage(part)
                    exchange.recordedParts.append(record)
                    switch outcome {
                    case .success(let image): staged = image
                    case .failure(let error): problem = error
                    }
                    continue
                }
                let (bytes, size) = try Exchange.consume(part, keeping: Exchange.formLimit)
                exchange.recordedParts.append(RecordedPart(name: part.name, filename: part.filename,
                                                           contentType: part.contentType, size: size, bytes: bytes))
            }
        } catch let error as CodingError {
            if let staged { unlink(staged.path) }
            _ = try? exchange.request.body.drain()
            throw error
        } catch {
            if let staged { unlink(staged.path) }
            if let error = error as? HTTPServerError, error == .bodyTooLarge { throw CodingError.bodyTooLarge }
            throw CodingError.badRequest("malformed multipart body")
        }
        if let problem { throw problem }
        guard let image = staged else { throw CodingError.imageMissing }
        defer { unlink(image.path) }  // a no-op once renamed into place
        let base = baseURL
        let directory = pictureDirectory
        let outcome: Result<String, CodingError> = state.withLock { state in
            let pictureID = state.nextPictureID
            var picture = PictureRecord(id: pictureID, fileName: "", contentType: image.contentType, width: image.width,
                                        height: image.height, size: image.size, isAnimated: image.isAnimated)
            picture.fileName = "p\(pictureID).\(picture.fileExtension)"
            guard rename(image.path, directory + "/" + picture.fileName) == 0 else {
                return .failure(.serverError("cannot store the picture: \(SystemError("rename"))"))
            }
            state.nextPictureID += 1
            state.pictures[pictureID] = picture
            state.generation += 1
            return .success(state.pictureURL(picture, size: "raw", base: base))
        }
        return Reply.coding(.string(try outcome.get()))
    }

    private struct StagedCodingImage {
        var path: String
        var size: Int64
        var contentType: String
        var width: Int
        var height: Int
        var isAnimated: Bool
    }

    /// Streams the part to a staging file beside the pictures, keeping only its first 64 KiB
    /// (to recognize it) and, for the record, at most `RecordedPart.keptBytesLimit`. Past the
    /// limit the file is dropped and the rest read and discarded.
    private func stageCodingImage(_ part: MultipartPart) throws -> (RecordedPart, Result<StagedCodingImage, CodingError>) {
        let staged: PictureStaging.Result
        do {
            staged = try PictureStaging.stage(part, in: pictureDirectory, limit: Self.maxCodingImageBytes)
        } catch let error as SystemError {
            throw CodingError.serverError("cannot store the picture: \(error)")
        }
        switch staged.outcome {
        case .writeFailed(let failure):
            return (staged.record, .failure(.serverError("cannot store the picture: \(failure)")))
        case .tooLarge:
            return (staged.record, .failure(.imageTooLarge))
        case .stored(let path):
            guard let kind = CodingImageKind.recognize(staged.head) else {
                unlink(path)
                return (staged.record, .failure(.imageWrongFormat))
            }
            return (staged.record, .success(StagedCodingImage(path: path, size: staged.size, contentType: kind.contentType,
                                                              width: kind.width, height: kind.height, isAnimated: kind.isAnimated)))
        }
    }
}

/// What `insert_image` accepts, by magic bytes: what `ImageInfo` knows (JPEG, PNG, GIF) plus
/// WebP and BMP.
struct CodingImageKind: Equatable {
    var contentType: String
    var width: Int
    var height: Int
    var isAnimated: Bool

    static func recognize(_ head: [UInt8]) -> CodingImageKind? {
        if let info = ImageInfo.inspect(head) {
            return CodingImageKind(contentType: info.format.rawValue, width: info.width, height: info.height,
                                   isAnimated: info.isAnimated)
        }
        if head.count >= 16, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) {
            return CodingImageKind(contentType: "image/webp", width: 0, height: 0, isAnimated: false)
        }
        if head.count >= 26, head[0] == UInt8(ascii: "B"), head[1] == UInt8(ascii: "M"),
           [12, 40, 52, 56, 108, 124].contains(littleEndian32(head, 14)) {
            let width = Int(Int32(bitPattern: UInt32(littleEndian32(head, 18))))
            let height = Int(Int32(bitPattern: UInt32(littleEndian32(head, 22))))
            return CodingImageKind(contentType: "image/bmp", width: abs(width), height: abs(height), isAnimated: false)
        }
        return nil
    }

    private static func littleEndian32(_ bytes: [UInt8], _ offset: Int) -> Int {
        Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
    }
}
