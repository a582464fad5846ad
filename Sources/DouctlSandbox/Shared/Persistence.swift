#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlSystem

/// The state file (`DIR/state.json`) and the pictures beside it (`DIR/pictures/`).
///
/// Saved with `AtomicFile` (temp file, fsync, rename) after each change; concurrent changes
/// coalesce into one write. A file that cannot be read back is reported and left untouched.
final class StateStore: Sendable {
    static let format = "douctl-sandbox-state"
    static let version = 1

    let directory: String
    var statePath: String { directory + "/state.json" }
    var pictureDirectory: String { directory + "/pictures" }
    /// Serializes writers; holds the generation last written.
    private let writer = LockedValue<UInt64>(0)

    /// Held for the store's lifetime: two sandboxes on one directory would overwrite each
    /// other's state, so the second one is refused.
    private let ownership: FileLock

    init(directory: String) throws {
        self.directory = directory
        do {
            try FileIO.makeDirectory(directory, mode: 0o700)
            try FileIO.makeDirectory(directory + "/pictures", mode: 0o700)
        } catch {
            throw SandboxError("cannot use data directory \(directory): \(error)")
        }
        do {
            ownership = try FileLock(path: directory + "/.lock", wait: false)
        } catch let error as SystemError where error.errno == EWOULDBLOCK {
            throw SandboxError("another sandbox is using the data directory \(directory)")
        } catch {
            throw SandboxError("cannot lock the data directory \(directory): \(error)")
        }
    }

    /// The saved state, or nil when there is none yet.
    func load() throws -> SandboxState? {
        let bytes: [UInt8]
        do {
            bytes = try FileIO.readFile(statePath)
        } catch let error as SystemError where error.isNotFound {
            return nil
        } catch {
            throw SandboxError("cannot read the sandbox state \(statePath): \(error)")
        }
        do {
            let json = try JSONParser.parse(bytes)
            return try StateCoding.decode(json)
        } catch let error as JSONParseError {
            throw SandboxError("the sandbox state \(statePath) is corrupt (\(error)); move it away or fix it, it was left untouched")
        } catch let error as StateCoding.Failure {
            throw SandboxError("the sandbox state \(statePath) is corrupt (\(error.reason)); move it away or fix it, it was left untouched")
        }
    }

    /// Writes the state if it changed since the last write. `snapshot` is called under the state
    /// lock and must be cheap (a copy-on-write copy); encoding happens outside it.
    func save(snapshot: () -> SandboxState) throws {
        try writer.withLock { written throws in
            let state = snapshot()
            guard state.generation != written else { return }
            let bytes = StateCoding.encode(state).serialized(.compact)
            try AtomicFile.write(bytes + [UInt8(ascii: "\n")], to: statePath, mode: 0o600)
            written = state.generation
        }
    }

    func markWritten(_ generation: UInt64) {
        writer.withLock { $0 = generation }
    }
}

/// State ⇄ JSON. Short-lived OAuth records (codes, consent tickets, device codes) and rate-limit
/// windows are not saved. Coding's half is the object `coding` (CodingPersistence.swift); a file
/// written before it existed loads with Coding's seed.
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
        object["users"] = .array(state.userOrder.compactMap { state.users[$0] }.map { user in
            ["id": .int(user.id), "uid": .string(user.uid), "name": .string(user.name),
             "description": .string(user.description), "signature": .string(user.signature),
             "loc_id": .string(user.locationID), "loc_name": .string(user.locationName),
             "created": number(user.created)]
        })
        var follows: [JSON] = []
        for follower in state.follows.keys.sorted() {
            for entry in state.follows[follower] ?? [] {
                follows.append(["follower": .int(follower), "user": .int(entry.userID), "since": number(entry.since)])
            }
        }
        object["follows"] = .array(follows)
        object["statuses"] = .array(state.statusOrder.compactMap { state.statuses[$0] }.map { status in
            var item: JSONObject = ["id": .int(status.id), "user": .int(status.userID), "text": .string(status.text),
                                    "created": number(status.created), "kind": .string(status.kind.rawValue),
                                    "source": .string(status.source)]
            if let rec = status.recommendation {
                item["rec"] = ["title": .string(rec.title), "url": .string(rec.url),
                               "desc": .string(rec.description), "image": .string(rec.image)]
            }
            if let picture = status.pictureID { item["picture"] = .int(picture) }
            if let reshared = status.resharedID { item["reshared"] = .int(reshared) }
            return .object(item)
        })
        object["comments"] = .array(state.comments.keys.sorted().compactMap { state.comments[$0] }.map { comment in
            ["id": .int(comment.id), "status": .int(comment.statusID), "user": .int(comment.userID),
             "text": .string(comment.text), "created": number(comment.created), "source": .string(comment.source)]
        })
        var likes: [JSON] = []
        for statusID in state.likes.keys.sorted() {
            for entry in state.likes[statusID] ?? [] {
                likes.append(["status": .int(statusID), "user": .int(entry.userID), "since": number(entry.since)])
            }
        }
        object["likes"] = .array(likes)
        object["pictures"] = .array(state.pictures.keys.sorted().compactMap { state.pictures[$0] }.map { picture in
            ["id": .int(picture.id), "file": .string(picture.fileName), "content_type": .string(picture.contentType),
             "width": .int(picture.width), "height": .int(picture.height), "size": .int(picture.size),
             "animated": .bool(picture.isAnimated)]
        })
        object["access_tokens"] = .array(state.accessTokens.keys.sorted().compactMap { state.accessTokens[$0] }.map { token in
            var item: JSONObject = ["token": .string(token.token), "user": .int(token.userID), "client": .string(token.clientID),
                                    "scopes": .array(token.scopes.map(JSON.string)), "expires_at": number(token.expiresAt),
                                    "issued_at": number(token.issuedAt)]
            if let refresh = token.refreshToken { item["refresh_token"] = .string(refresh) }
            return .object(item)
        })
        object["refresh_tokens"] = .array(state.refreshTokens.keys.sorted().compactMap { state.refreshTokens[$0] }.map { token in
            ["token": .string(token.token), "user": .int(token.userID), "client": .string(token.clientID),
             "scopes": .array(token.scopes.map(JSON.string)), "access_token": .string(token.accessToken)]
        })
        object["coding"] = encodeCoding(state.coding)
        return .object(object)
    }

    static func number(_ value: Double) -> JSON { .number(value.jsonNumberText) }

    static func decode(_ json: JSON) throws(Failure) -> SandboxState {
        guard json["format"]?.stringValue == StateStore.format else {
            throw Failure(reason: "not a douctl sandbox state file")
        }
        guard json["version"]?.intValue == StateStore.version else {
            throw Failure(reason: "unsupported version \(json["version"]?.scalarText ?? "none")")
        }
        var state = SandboxState()
        for item in try array(json, "users") {
            state.insert(UserRecord(id: try int(item, "id"), uid: try string(item, "uid"), name: try string(item, "name"),
                                    description: try string(item, "description"), signature: try string(item, "signature"),
                                    locationID: try string(item, "loc_id"), locationName: try string(item, "loc_name"),
                                    created: try double(item, "created")))
        }
        for item in try array(json, "follows") {
            let follower = try int(item, "follower")
            state.follows[follower, default: []].append((try int(item, "user"), try double(item, "since")))
        }
        for item in try array(json, "statuses") {
            guard let kind = StatusRecord.Kind(rawValue: try string(item, "kind")) else {
                throw Failure(reason: "status \(item["id"]?.scalarText ?? "?") has an unknown kind")
            }
            var recommendation: Recommendation?
            if let rec = item["rec"] {
                recommendation = Recommendation(title: try string(rec, "title"), url: try string(rec, "url"),
                                                description: try string(rec, "desc"), image: try string(rec, "image"))
            }
            state.insert(StatusRecord(id: try int(item, "id"), userID: try int(item, "user"), text: try string(item, "text"),
                                      created: try double(item, "created"), kind: kind, recommendation: recommendation,
                                      pictureID: item["picture"]?.int64Value, resharedID: item["reshared"]?.int64Value,
                                      source: try string(item, "source")))
        }
        for item in try array(json, "comments") {
            let comment = CommentRecord(id: try int(item, "id"), statusID: try int(item, "status"), userID: try int(item, "user"),
                                        text: try string(item, "text"), created: try double(item, "created"),
                                        source: try string(item, "source"))
            state.comments[comment.id] = comment
            state.commentsByStatus[comment.statusID, default: []].append(comment.id)
            state.nextCommentID = max(state.nextCommentID, comment.id + 1)
        }
        for item in try array(json, "likes") {
            state.likes[try int(item, "status"), default: []].append((try int(item, "user"), try double(item, "since")))
        }
        for item in try array(json, "pictures") {
            guard let width = item["width"]?.intValue, let height = item["height"]?.intValue else {
                throw Failure(reason: "a picture lacks its size")
            }
            let picture = PictureRecord(id: try int(item, "id"), fileName: try string(item, "file"),
                                        contentType: try string(item, "content_type"), width: width, height: height,
                                        size: try int(item, "size"), isAnimated: item["animated"]?.boolValue ?? false)
            guard !picture.fileName.contains("/") else { throw Failure(reason: "a picture file name contains '/'") }
            state.pictures[picture.id] = picture
            state.nextPictureID = max(state.nextPictureID, picture.id + 1)
        }
        for item in try array(json, "access_tokens") {
            let token = AccessTokenRecord(token: try string(item, "token"), userID: try int(item, "user"),
                                          clientID: try string(item, "client"), scopes: try strings(item, "scopes"),
                                          expiresAt: try double(item, "expires_at"),
                                          refreshToken: item["refresh_token"]?.stringValue,
                                          issuedAt: item["issued_at"]?.doubleValue ?? 0)
            state.accessTokens[token.token] = token
        }
        for item in try array(json, "refresh_tokens") {
            let token = RefreshTokenRecord(token: try string(item, "token"), userID: try int(item, "user"),
                                           clientID: try string(item, "client"), scopes: try strings(item, "scopes"),
                                           accessToken: try string(item, "access_token"))
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
