import DouctlJSON

/// State ⇄ JSON. Short-lived OAuth records (codes, consent tickets, device codes) and rate-limit
/// windows are not saved. Each record kind has its own pair of functions: Douban's in
/// DoubanPersistence.swift, Coding's (the object `coding`) in CodingPersistence.swift, and the
/// kinds both share (tokens, pictures, follows) here. A file written before Coding's half
/// existed loads with Coding's seed.
enum StateCoding {
    struct Failure: Error {
        let reason: String
    }

    static func encode(_ state: SandboxState) -> JSON {
        var object = JSONObject()
        object["format"] = .string(StateStore.format)
        object["version"] = .int(StateStore.version)
        object["next_user_id"] = .int(state.nextUserID)
        object["next_status_id"] = .int(state.nextStatusID)
        object["next_comment_id"] = .int(state.nextCommentID)
        object["next_picture_id"] = .int(state.nextPictureID)
        object["users"] = .array(state.userOrder.compactMap { state.users[$0] }.map(encode))
        object["follows"] = .array(encodeFollows(state.follows))
        object["statuses"] = .array(state.statusOrder.compactMap { state.statuses[$0] }.map(encode))
        object["comments"] = .array(state.comments.keys.sorted().compactMap { state.comments[$0] }.map(encode))
        object["likes"] = .array(encodeLikes(state.likes, key: "status"))
        object["pictures"] = .array(state.pictures.keys.sorted().compactMap { state.pictures[$0] }.map(encode))
        object["access_tokens"] = .array(state.accessTokens.keys.sorted().compactMap { state.accessTokens[$0] }.map(encode))
        object["refresh_tokens"] = .array(state.refreshTokens.keys.sorted().compactMap { state.refreshTokens[$0] }.map(encode))
        object["coding"] = encodeCoding(state.coding)
        return .object(object)
    }

    static func decode(_ json: JSON) throws(Failure) -> SandboxState {
        guard json["format"]?.stringValue == StateStore.format else {
            throw Failure(reason: "not a douctl sandbox state file")
        }
        guard json["version"]?.intValue == StateStore.version else {
            throw Failure(reason: "unsupported version \(json["version"]?.scalarText ?? "none")")
        }
        var state = SandboxState()
        for item in try array(json, "users") { state.insert(try decodeUser(item)) }
        for item in try array(json, "follows") {
            let (follower, entry) = try decodeFollow(item)
            state.follows[follower, default: []].append(entry)
        }
        for item in try array(json, "statuses") { state.insert(try decodeStatus(item)) }
        for item in try array(json, "comments") {
            let comment = try decodeComment(item)
            state.comments[comment.id] = comment
            state.commentsByStatus[comment.statusID, default: []].append(comment.id)
            state.nextCommentID = max(state.nextCommentID, comment.id + 1)
        }
        for item in try array(json, "likes") {
            let (statusID, entry) = try decodeLike(item, key: "status")
            state.likes[statusID, default: []].append(entry)
        }
        for item in try array(json, "pictures") {
            let picture = try decodePicture(item)
            state.pictures[picture.id] = picture
            state.nextPictureID = max(state.nextPictureID, picture.id + 1)
        }
        for item in try array(json, "access_tokens") {
            let token = try decodeAccessToken(item)
            state.accessTokens[token.token] = token
        }
        for item in try array(json, "refresh_tokens") {
            let token = try decodeRefreshToken(item)
            state.refreshTokens[token.token] = token
        }
        state.nextUserID = max(state.nextUserID, json["next_user_id"]?.int64Value ?? 0)
        state.nextStatusID = max(state.nextStatusID, json["next_status_id"]?.int64Value ?? 0)
        state.nextCommentID = max(state.nextCommentID, json["next_comment_id"]?.int64Value ?? 0)
        state.nextPictureID = max(state.nextPictureID, json["next_picture_id"]?.int64Value ?? 0)
        if let coding = json["coding"] {
            state.coding = try decodeCoding(coding)
            state.generation = 0
        } else {
            state.coding = CodingSeed.makeState()
            state.generation = 1  // written back at once, Coding's seed included
        }
        return state
    }

    // MARK: - Follows and likes (both fakes)

    /// follower → followees, as `{"follower","user","since"}` items, followers in id order.
    static func encodeFollows(_ follows: [Int64: [(userID: Int64, since: Double)]]) -> [JSON] {
        var items: [JSON] = []
        for follower in follows.keys.sorted() {
            for entry in follows[follower] ?? [] {
                items.append(["follower": .int(follower), "user": .int(entry.userID), "since": number(entry.since)])
            }
        }
        return items
    }

    static func decodeFollow(_ item: JSON) throws(Failure) -> (follower: Int64, entry: (userID: Int64, since: Double)) {
        let follower = try int(item, "follower")
        return (follower, (try int(item, "user"), try double(item, "since")))
    }

    /// status or tweet → likers, as `{KEY,"user","since"}` items (KEY `status` or `tweet`).
    static func encodeLikes(_ likes: [Int64: [(userID: Int64, since: Double)]], key: String) -> [JSON] {
        var items: [JSON] = []
        for id in likes.keys.sorted() {
            for entry in likes[id] ?? [] {
                items.append([key: .int(id), "user": .int(entry.userID), "since": number(entry.since)])
            }
        }
        return items
    }

    static func decodeLike(_ item: JSON, key: String) throws(Failure) -> (id: Int64, entry: (userID: Int64, since: Double)) {
        (try int(item, key), (try int(item, "user"), try double(item, "since")))
    }

    // MARK: - Pictures

    static func encode(_ picture: PictureRecord) -> JSON {
        ["id": .int(picture.id), "file": .string(picture.fileName), "content_type": .string(picture.contentType),
         "width": .int(picture.width), "height": .int(picture.height), "size": .int(picture.size),
         "animated": .bool(picture.isAnimated)]
    }

    static func decodePicture(_ item: JSON) throws(Failure) -> PictureRecord {
        guard let width = item["width"]?.intValue, let height = item["height"]?.intValue else {
            throw Failure(reason: "a picture lacks its size")
        }
        let picture = PictureRecord(id: try int(item, "id"), fileName: try string(item, "file"),
                                    contentType: try string(item, "content_type"), width: width, height: height,
                                    size: try int(item, "size"), isAnimated: item["animated"]?.boolValue ?? false)
        guard !picture.fileName.contains("/") else { throw Failure(reason: "a picture file name contains '/'") }
        return picture
    }

    // MARK: - Tokens (both fakes)

    static func encode(_ token: AccessTokenRecord) -> JSON {
        var item: JSONObject = ["token": .string(token.token), "user": .int(token.userID), "client": .string(token.clientID),
                                "scopes": .array(token.scopes.map(JSON.string)), "expires_at": number(token.expiresAt),
                                "issued_at": number(token.issuedAt)]
        if let refresh = token.refreshToken { item["refresh_token"] = .string(refresh) }
        return .object(item)
    }

    static func decodeAccessToken(_ item: JSON) throws(Failure) -> AccessTokenRecord {
        AccessTokenRecord(token: try string(item, "token"), userID: try int(item, "user"),
                          clientID: try string(item, "client"), scopes: try strings(item, "scopes"),
                          expiresAt: try double(item, "expires_at"),
                          refreshToken: item["refresh_token"]?.stringValue,
                          issuedAt: item["issued_at"]?.doubleValue ?? 0)
    }

    static func encode(_ token: RefreshTokenRecord) -> JSON {
        ["token": .string(token.token), "user": .int(token.userID), "client": .string(token.clientID),
         "scopes": .array(token.scopes.map(JSON.string)), "access_token": .string(token.accessToken)]
    }

    static func decodeRefreshToken(_ item: JSON) throws(Failure) -> RefreshTokenRecord {
        RefreshTokenRecord(token: try string(item, "token"), userID: try int(item, "user"),
                           clientID: try string(item, "client"), scopes: try strings(item, "scopes"),
                           accessToken: try string(item, "access_token"))
    }

    // MARK: - Fields

    static func number(_ value: Double) -> JSON { .number(value.jsonNumberText) }

    static func array(_ json: JSON, _ key: String) throws(Failure) -> [JSON] {
        guard let value = json[key]?.arrayValue else { throw Failure(reason: "'\(key)' is missing or not an array") }
        return value
    }

    static func string(_ json: JSON, _ key: String) throws(Failure) -> String {
        guard let value = json[key]?.stringValue else { throw Failure(reason: "'\(key)' is missing or not a string in \(json)") }
        return value
    }

    static func int(_ json: JSON, _ key: String) throws(Failure) -> Int64 {
        guard case .number = json[key], let value = json[key]?.int64Value else {
            throw Failure(reason: "'\(key)' is missing or not an integer in \(json)")
        }
        return value
    }

    static func double(_ json: JSON, _ key: String) throws(Failure) -> Double {
        guard let value = json[key]?.doubleValue, value.isFinite else {
            throw Failure(reason: "'\(key)' is missing or not a number in \(json)")
        }
        return value
    }

    static func strings(_ json: JSON, _ key: String) throws(Failure) -> [String] {
        guard let values = json[key]?.arrayValue else { throw Failure(reason: "'\(key)' is missing or not an array") }
        var result: [String] = []
        for value in values {
            guard let text = value.stringValue else { throw Failure(reason: "'\(key)' holds a non-string") }
            result.append(text)
        }
        return result
    }
}
