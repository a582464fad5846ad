import DouctlJSON

/// Who a token belongs to, as stored with it (`user_id`, `user_name`).
public struct Identity: Sendable, Equatable {
    /// Douban's numeric id; Coding's user id.
    public var id: String?
    /// The handle used in paths: Douban's `uid` (ahbei), Coding's `global_key`.
    public var name: String?
    /// The display name (阿北).
    public var displayName: String?

    public init(id: String?, name: String?, displayName: String?) {
        self.id = id
        self.name = name
        self.displayName = displayName
    }

    /// Asks the API who the client's token belongs to (the service's `identity`).
    public static func fetch(with client: APIClient) throws(DouctlError) -> Identity {
        try client.service.identity()
    }
}
