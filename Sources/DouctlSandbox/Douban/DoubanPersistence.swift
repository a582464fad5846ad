import DouctlJSON

/// Douban's records in the state file: users, statuses and comments (follows and likes are
/// shaped alike on both sides, StateCoding.swift).
extension StateCoding {
    // MARK: - Users

    static func encode(_ user: UserRecord) -> JSON {
        ["id": .int(user.id), "uid": .string(user.uid), "name": .string(user.name),
         "description": .string(user.description), "signature": .string(user.signature),
         "loc_id": .string(user.locationID), "loc_name": .string(user.locationName),
         "created": number(user.created)]
    }

    static func decodeUser(_ item: JSON) throws(Failure) -> UserRecord {
        UserRecord(id: try int(item, "id"), uid: try string(item, "uid"), name: try string(item, "name"),
                   description: try string(item, "description"), signature: try string(item, "signature"),
                   locationID: try string(item, "loc_id"), locationName: try string(item, "loc_name"),
                   created: try double(item, "created"))
    }

    // MARK: - Statuses

    static func encode(_ status: StatusRecord) -> JSON {
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
    }

    static func decodeStatus(_ item: JSON) throws(Failure) -> StatusRecord {
        guard let kind = StatusRecord.Kind(rawValue: try string(item, "kind")) else {
            throw Failure(reason: "status \(item["id"]?.scalarText ?? "?") has an unknown kind")
        }
        var recommendation: Recommendation?
        if let rec = item["rec"] {
            recommendation = Recommendation(title: try string(rec, "title"), url: try string(rec, "url"),
                                            description: try string(rec, "desc"), image: try string(rec, "image"))
        }
        return StatusRecord(id: try int(item, "id"), userID: try int(item, "user"), text: try string(item, "text"),
                            created: try double(item, "created"), kind: kind, recommendation: recommendation,
                            pictureID: item["picture"]?.int64Value, resharedID: item["reshared"]?.int64Value,
                            source: try string(item, "source"))
    }

    // MARK: - Comments

    static func encode(_ comment: CommentRecord) -> JSON {
        ["id": .int(comment.id), "status": .int(comment.statusID), "user": .int(comment.userID),
         "text": .string(comment.text), "created": number(comment.created), "source": .string(comment.source)]
    }

    static func decodeComment(_ item: JSON) throws(Failure) -> CommentRecord {
        CommentRecord(id: try int(item, "id"), statusID: try int(item, "status"), userID: try int(item, "user"),
                      text: try string(item, "text"), created: try double(item, "created"),
                      source: try string(item, "source"))
    }
}
