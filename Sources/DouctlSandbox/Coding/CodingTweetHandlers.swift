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
struct CodingTweetHandlers: Sendable {
    /// `insert_image` takes pictures up to 10 MiB (larger → 1003 `image_too_large`).
    static let maxImageBytes: Int64 = 10 << 20

    let state: LockedValue<SandboxState>
    let baseURL: BaseURL
    let pictureDirectory: String
    let authentication: CodingAuthentication
    /// The sandbox's wall clock (`SandboxConfiguration.clock`).
    let clock: SandboxClock

    /// One page of tweets by `authors` (everyone when nil), newest first, at the request's cursor.
    private func tweetList(_ exchange: Exchange, caller: CodingCaller, authors: (SandboxState) -> Set<Int64>?) throws -> HTTPServerResponse {
        let cursor = try CodingCursor(exchange)
        let base = baseURL.value
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
    func publicTweets(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social")
        guard exchange.query("sort") == "hot" else { return try tweetList(exchange, caller: caller) { _ in nil } }
        let cursor = try CodingCursor(exchange)
        guard cursor.isFirstPage else { return Reply.coding([]) }
        let base = baseURL.value
        let json: JSON = state.withLock { state in
            .array(state.coding.hotTweets(limit: cursor.pageSize).map { state.coding.render($0, viewer: caller.userID, base: base) })
        }
        return Reply.coding(json)
    }

    /// `GET /api/activities/user_tweet`: the caller's tweets and those of the people they follow.
    func friendsTweets(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social")
        return try tweetList(exchange, caller: caller) { state in
            Set(state.coding.followingIDs(of: caller.userID) + [caller.userID])
        }
    }

    /// `GET /api/tweet/user_public?global_key=KEY` (2014 clients: `user_id=ID`).
    func userTweets(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social")
        guard let name = (exchange.query("global_key") ?? exchange.query("user_id"))?.nonEmpty else {
            throw CodingError.badRequest("global_key is missing")
        }
        guard let userID = state.withLock({ $0.coding.user(named: name)?.id }) else { throw CodingError.userNotFound }
        return try tweetList(exchange, caller: caller) { _ in [userID] }
    }

    // MARK: - One tweet

    /// `GET /api/tweet/{global_key}/{id}`: 1101 (HTTP 404) unless the tweet exists and is that user's.
    func tweetDetail(_ exchange: Exchange, globalKey: String, id: Int64) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social")
        let base = baseURL.value
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
    func postTweet(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social:tweet")
        let content = try exchange.field("content") ?? ""
        let location = try exchange.field("location") ?? ""
        let coord = try exchange.field("coord") ?? ""
        let address = try exchange.field("address") ?? ""
        let device = try exchange.field("device") ?? ""
        guard !state.withLock({ $0.coding.actionCaptchaRequired }) else { throw CodingError.needCaptcha }
        guard !content.allSatisfy({ $0.isWhitespace }) else { throw CodingError.contentEmpty }
        let now = clock.now()
        let base = baseURL.value
        let json: JSON = state.withLock { state in
            let tweet = state.coding.addTweet(ownerID: caller.userID, content: content, created: now, device: device,
                                              location: location, coord: coord, address: address)
            return state.coding.render(tweet, viewer: caller.userID, base: base)
        }
        return Reply.coding(json)
    }

    /// `DELETE /api/tweet/{id}`: one's own only (1102 otherwise).
    func deleteTweet(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social:tweet")
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
    func like(_ exchange: Exchange, id: Int64, like: Bool) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social:tweet")
        _ = try exchange.fields()
        let now = clock.now()
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
    func likes(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social")
        let paging = CodingPaging(exchange)
        let base = baseURL.value
        let json: JSON? = state.withLock { state in
            guard state.coding.tweets[id] != nil else { return nil }
            let likers = (state.coding.likes[id] ?? []).reversed().map(\.userID)
            let items = paging.slice(likers).compactMap { state.coding.users[$0] }
                .map { state.coding.render($0, viewer: caller.userID, base: base) }
            return CodingState.pageable(items, page: paging.page, pageSize: paging.pageSize, totalRow: likers.count)
        }
        guard let json else { throw CodingError.tweetNotFound }
        return Reply.coding(json)
    }

    // MARK: - Comments

    /// `GET /api/tweet/{id}/comments`: a Pageable of Comments, the newest first.
    func comments(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social")
        let paging = CodingPaging(exchange)
        let base = baseURL.value
        let json: JSON? = state.withLock { state in
            guard state.coding.tweets[id] != nil else { return nil }
            let ids = Array((state.coding.commentsByTweet[id] ?? []).reversed())
            let items = paging.slice(ids).compactMap { state.coding.comments[$0] }
                .map { state.coding.render($0, viewer: caller.userID, base: base) }
            return CodingState.pageable(items, page: paging.page, pageSize: paging.pageSize, totalRow: ids.count)
        }
        guard let json else { throw CodingError.tweetNotFound }
        return Reply.coding(json)
    }

    /// `POST /api/tweet/{id}/comment` (`content`): the new Comment.
    func addComment(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social:tweet")
        let content = try exchange.field("content") ?? ""
        let now = clock.now()
        let base = baseURL.value
        let outcome: Result<JSON, CodingError> = state.withLock { state in
            guard state.coding.tweets[id] != nil else { return .failure(.tweetNotFound) }
            guard !content.allSatisfy({ $0.isWhitespace }) else { return .failure(.contentEmpty) }
            let comment = state.coding.addComment(tweetID: id, ownerID: caller.userID, content: content, created: now)
            return .success(state.coding.render(comment, viewer: caller.userID, base: base))
        }
        return Reply.coding(try outcome.get())
    }

    /// `DELETE /api/tweet/{id}/comment/{commentId}`: by the comment's author or the tweet's owner.
    func deleteComment(_ exchange: Exchange, tweetID: Int64, commentID: Int64) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "social:tweet")
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
    func insertImage(_ exchange: Exchange) throws -> HTTPServerResponse {
        _ = try authentication.caller(exchange, scope: "social:tweet")
        guard exchange.isMultipart else { throw CodingError.imageMissing }
        exchange.bodyHandled = true
        guard let reader = MultipartReader(body: exchange.request.body, contentType: exchange.request.headers["Content-Type"] ?? "") else {
            throw CodingError.badRequest("multipart body without a boundary")
        }
        var staged: StagedTweetImage?
        var problem: CodingError?
        do {
            while let part = try reader.nextPart() {
                if part.name == "tweetImg" && staged == nil && problem == nil {
                    let (record, outcome) = try stageImage(part)
                    exchange.recordedParts.append(record)
                    switch outcome {
                    case .success(let image): staged = image
                    case .failure(let error): problem = error
                    }
                    continue
                }
                _ = try exchange.keep(part)
            }
        } catch let error as CodingError {
            if let staged { unlink(staged.path) }
            _ = try? exchange.request.body.drain()
            throw error
        } catch {
            if let staged { unlink(staged.path) }
            if let error = error as? HTTPServerError, error == .bodyTooLarge { throw CodingError.bodyTooLarge }
            var refusal: CodingError?
            if case .multipartTooLarge(let detail)? = error as? HTTPServerError { refusal = .multipartTooLarge(detail) }
            if let error = error as? DoubanError, error.status == 413 { refusal = .multipartTooLarge(error.detail ?? error.message) }
            if let refusal {
                // The client still gets its 413 once it has sent the rest (read and dropped).
                _ = try? exchange.request.body.drain()
                throw refusal
            }
            throw CodingError.badRequest("malformed multipart body")
        }
        if let problem { throw problem }
        guard let image = staged else { throw CodingError.imageMissing }
        defer { unlink(image.path) }  // a no-op once renamed into place
        let base = baseURL.value
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

    /// An uploaded tweet picture on disk, recognized, waiting to be renamed into the picture store.
    private struct StagedTweetImage {
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
    private func stageImage(_ part: MultipartPart) throws -> (RecordedPart, Result<StagedTweetImage, CodingError>) {
        let staged: PictureStaging.Result
        do {
            staged = try PictureStaging.stage(part, in: pictureDirectory, limit: Self.maxImageBytes)
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
            return (staged.record, .success(StagedTweetImage(path: path, size: staged.size, contentType: kind.contentType,
                                                             width: kind.width, height: kind.height, isAnimated: kind.isAnimated)))
        }
    }
}
