import Foundation

/// The files a douctl config directory holds, written the way a test needs them: douctl's
/// own code is what is under test, so these are plain text, not made with it.
public enum SandboxProfiles {
    /// config.json with the profiles 'sandbox' (the default) and 'coding-sandbox' pointing
    /// at a sandbox on `base`, as `douctl sandbox` writes them.
    public static func write(base: String, in directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let douban = #""sandbox":{"preset":"sandbox","api_base":"\#(base)","authorize_url":"\#(base)/service/auth2/auth","token_url":"\#(base)/service/auth2/token","device_authorization_url":"\#(base)/service/auth2/device","revoke_url":"\#(base)/service/auth2/revoke","client_id":"douctl-sandbox","client_secret":"sandbox-secret"}"#
        let coding = #""coding-sandbox":{"preset":"coding-sandbox","api_base":"\#(base)","authorize_url":"\#(base)/oauth_authorize.html","token_url":"\#(base)/api/oauth/access_token","device_authorization_url":"\#(base)/api/oauth/device","client_id":"douctl-sandbox","client_secret":"sandbox-secret"}"#
        let config = #"{"default_profile":"sandbox","profiles":{\#(douban),\#(coding)}}"#
        let path = directory + "/config.json"
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }
}

/// credentials.json the way douctl writes it (0600 in a 0700 directory): an access token per
/// profile, and optionally refresh tokens and an expiry.
public enum Credentials {
    public static func write(_ tokens: [String: String], in directory: String, expiresAt: String? = nil, refreshTokens: [String: String] = [:]) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var profiles: [String] = []
        for (profile, token) in tokens.sorted(by: { $0.key < $1.key }) {
            var fields = [#""access_token":"\#(token)""#]
            if let refresh = refreshTokens[profile] { fields.append(#""refresh_token":"\#(refresh)""#) }
            if let expiresAt { fields.append(#""expires_at":"\#(expiresAt)""#) }
            profiles.append(#""\#(profile)":{\#(fields.joined(separator: ","))}"#)
        }
        let path = directory + "/credentials.json"
        try Data(#"{"profiles":{\#(profiles.joined(separator: ","))}}"#.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }
}
