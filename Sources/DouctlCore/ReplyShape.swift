import DouctlJSON

/// The fields typed commands rely on (HAccess's model validation). A reply that lacks one
/// is not printed as if all were well: it is a bad reply (exit 8) naming the field.
/// `api` prints whatever comes back; only typed commands promise a shape.
public enum ReplyShape {
    public static let doubanUser = ["id", "uid", "name"]
    public static let doubanStatus = ["id", "text", "created_at"]
    public static let doubanComment = ["id", "text", "created_at"]
    public static let codingUser = ["id", "global_key", "name"]
    public static let codingTweet = ["id", "content", "created_at"]
    public static let codingComment = ["id", "content", "created_at"]

    /// `json` when it is an object with every one of `fields` (null counts as missing).
    public static func check(_ json: JSON, has fields: [String], what: String, request: String) throws(DouctlError) -> JSON {
        guard case .object(let object) = json else {
            throw .badReply("the \(what) in the reply is not a JSON object (\(request))")
        }
        for field in fields {
            if object[field] == nil || object[field] == .null {
                throw .badReply("the \(what) in the reply has no '\(field)' (\(request))")
            }
        }
        return json
    }
}
