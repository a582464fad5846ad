import DouctlHTTP

/// The path of a request a login sends outside an API client: issuer discovery (OIDC and
/// RFC 8414 metadata, RFC 9728 resource metadata), client registration, device
/// authorization, the token endpoint (codes, device polls, client credentials, refreshes)
/// and revocation. No credential, cache or quota layer applies to them, but `--record DIR`
/// does: they go through the same `RecordingLayer` as every API request, so a recording of
/// `auth login` or `auth refresh` holds the whole login, scrubbed as the rest (the form's
/// client secret, code, code_verifier, device code and tokens, the reply's tokens).
public struct LoginRequestPath {
    private let path: RequestLayer

    /// `recorder` nil: the request goes straight to `http`. A transport that sends nothing
    /// (`--dry-run`) is never recorded.
    public init(http: any HTTPTransport, recorder: ExchangeRecorder?) {
        let transport = TransportLayer(http)
        if let recorder, http.sendsRequests {
            path = RecordingLayer(recorder, secrets: { [] }, next: transport)
        } else {
            path = transport
        }
    }

    /// Sends `request` and holds its reply (an error reply's first bytes): recorded, when
    /// recording, with the secrets `request.secrets` names and those found by name.
    public func fetch(_ request: HTTPRequest) throws(DouctlError) -> HTTPResponse {
        try path.send(OutgoingRequest(http: request, summary: "\(request.method) \(Redaction.redactURL(request.url))", wantsCredential: false), .buffered())
    }
}
