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

    /// Asks the API who the client's token belongs to: the profile's `user_url` when it has
    /// one, else the service's own endpoint (Douban's `~me`, Coding's current user). A plain
    /// OAuth2 profile without `user_url` has no such endpoint: nil, the user is unknown.
    public static func fetch(with client: APIClient) throws(DouctlError) -> Identity? {
        let profile = client.profile
        if let userURL = profile.userURL {
            let request = APIRequest(path: userURL)
            // The body as sent (not an envelope's data): the field paths address it whole.
            guard let json = try client.send(request).json else {
                throw .badReply("the user_url reply is not JSON (\(request.summary))")
            }
            return try fromUserReply(json, profile: profile, request: request.summary)
        }
        return try profile.rules.identity(with: client)
    }

    /// The id and name in a `user_url` reply, at `user_id_field` (default `id`) and
    /// `user_name_field` (default `login`, else `username`, else `name`; `preferred_username`,
    /// as discovery sets it, falls back to `name`, `email`, then `sub`); dotted paths walk
    /// into objects (`data.id`).
    static func fromUserReply(_ json: JSON, profile: ResolvedProfile, request: String) throws(DouctlError) -> Identity {
        let id = value(in: json, at: profile.userIDField ?? "id")
        let nameFields = profile.userNameField.map { $0 == "preferred_username" ? oidcNameFields : [$0] } ?? ["login", "username", "name"]
        let name = nameFields.lazy.compactMap { value(in: json, at: $0) }.first
        guard id != nil || name != nil else {
            throw .badReply("the user_url reply has neither '\(profile.userIDField ?? "id")' nor '\(nameFields.joined(separator: "', '"))' (set user_id_field and user_name_field) (\(request))")
        }
        return Identity(id: id, name: name, displayName: value(in: json, at: "name"))
    }

    /// The name of an OpenID Connect userinfo reply (OIDC Core §5.1), first found:
    /// many providers send `name` or `email` and no `preferred_username`.
    static let oidcNameFields = ["preferred_username", "name", "email", "sub"]

    /// The scalar at a dotted path ("data.user.id"); nil when absent or not a scalar.
    static func value(in json: JSON, at path: String) -> String? {
        var current: JSON? = json
        for key in path.split(separator: ".", omittingEmptySubsequences: false) {
            current = current?[String(key)]
        }
        if case .null? = current { return nil }
        return current?.scalarText
    }
}
