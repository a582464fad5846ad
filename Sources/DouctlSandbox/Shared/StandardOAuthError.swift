import DouctlJSON
import DouctlServer

/// An RFC 6749 §5.2 / RFC 8628 §3.5 error (the device grant's polling answers).
struct StandardOAuthError: Error {
    var error: String
    var description: String?
}

extension Reply {
    static func standard(_ error: StandardOAuthError) -> HTTPServerResponse {
        var object: JSONObject = ["error": .string(error.error)]
        if let description = error.description { object["error_description"] = .string(description) }
        return json(400, .object(object), headers: noStore)
    }
}
