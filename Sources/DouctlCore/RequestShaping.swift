import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// What a profile adds to every request to its own API (sAPI's commonParams/commonHeaders,
/// HAccess's signing): common headers, common parameters, then a signature over the result.
/// Values written as "$VAR" are read from the environment when the request is sent.
struct RequestShaper {
    let profile: ResolvedProfile
    let environment: [String: String]
    let now: () -> Double

    /// `request` with the profile's additions. A header or parameter the request already
    /// has (from `-H`, `-f`, `-F`) wins over the profile's.
    func shape(_ request: APIRequest) throws(DouctlError) -> APIRequest {
        var request = request
        for header in profile.commonHeaders where request.headers.value(of: header.name) == nil {
            let value = resolve(header.value)
            // A "$VAR" is read now, so its value is checked now: one with CR, LF or NUL would
            // end the header early and inject another header or request.
            if !HTTPSyntax.isFieldValue(value) {
                throw .localInput("common_headers \(header.name) of profile '\(profile.name)' comes from \(header.value), whose value contains a line break (CR or LF) or NUL")
            }
            request.headers.append(HTTPHeader(header.name, value))
        }
        for param in profile.commonParams {
            add(param.name, resolve(param.value), to: &request)
        }
        if let scheme = profile.signing { try sign(&request, scheme: scheme) }
        return request
    }

    /// "$VAR" → the variable's value (empty when unset); anything else as written.
    func resolve(_ value: String) -> String {
        guard value.hasPrefix("$"), value.count > 1 else { return value }
        var name = value.dropFirst()
        if name.hasPrefix("{") && name.hasSuffix("}") { name = name.dropFirst().dropLast() }
        return environment[String(name)] ?? ""
    }

    /// Query for requests without a body; the form, the multipart text parts or the JSON
    /// object otherwise; the query again for bodies douctl cannot add to (--input).
    private func add(_ name: String, _ value: String, to request: inout APIRequest) {
        switch request.body {
        case .form(var fields):
            if !fields.contains(where: { $0.0 == name }) { fields.append((name, value)) }
            request.body = .form(fields)
        case .multipart(var form):
            let has = form.parts.contains { part in
                switch part {
                case .field(let field, _), .file(let field, _, _, _), .data(let field, _, _, _): return field == name
                }
            }
            if !has { form.parts.insert(.field(name: name, value: value), at: 0) }
            request.body = .multipart(form)
        case .raw(.bytes(let bytes), let contentType) where contentType == "application/json":
            if case .object(var object)? = try? JSONParser.parse(bytes) {
                if object[name] == nil { object[name] = .string(value) }
                request.body = .raw(.bytes(JSON.object(object).serialized(.compact)), contentType: contentType)
            } else if !request.query.contains(where: { $0.0 == name }) {
                request.query.append((name, value))
            }
        default:
            if !request.query.contains(where: { $0.0 == name }) { request.query.append((name, value)) }
        }
    }

    // MARK: - signing

    private func sign(_ request: inout APIRequest, scheme: SigningScheme) throws(DouctlError) {
        switch scheme {
        case .hmacSHA1:
            let secret = try requireSecret(scheme)
            guard let apiKey = profile.clientID else {
                throw .usage("profile '\(profile.name)' signs with hmac-sha1, which sends client_id as apikey; set client_id")
            }
            let timestamp = String(Int(now()))
            let path = URLParts(profile.url(for: request.path))?.path ?? request.path
            let signature = RequestSignature.hmacSHA1(method: request.method, path: path, timestamp: timestamp, secret: secret)
            request.query.removeAll { ["_sig", "_ts", "apikey"].contains($0.0) }
            request.query += [("apikey", apiKey), ("_ts", timestamp), ("_sig", signature)]
        case .md5Sorted:
            let secret = try requireSecret(scheme)
            var params = request.query
            if case .form(let fields) = request.body { params += fields }
            if case .multipart(let form) = request.body {
                for case .field(let name, let value) in form.parts { params.append((name, value)) }
            }
            request.query.removeAll { $0.0 == "sign" }
            request.query.append(("sign", RequestSignature.md5Sorted(params.filter { $0.0 != "sign" }, secret: secret)))
        case .command:
            try signWithCommand(&request)
        }
    }


    private func requireSecret(_ scheme: SigningScheme) throws(DouctlError) -> String {
        guard let written = profile.signingSecret else {
            throw .localInput("profile '\(profile.name)' signs requests (\(scheme.rawValue)) but has no signing_secret; set it from stdin: douctl config set signing_secret - --profile \(profile.name)")
        }
        let secret = resolve(written)
        guard !secret.isEmpty else {
            throw .localInput("the signing secret of profile '\(profile.name)' comes from \(written), which is not set")
        }
        return secret
    }

    /// `signing: command`: the program gets the canonical request as JSON on stdin
    /// ({"method","url","path","query":[[k,v]],"headers":{…},"body_sha256","timestamp"})
    /// and prints {"headers": {…}, "params": {…}} to add.
    private func signWithCommand(_ request: inout APIRequest) throws(DouctlError) {
        guard let command = profile.signingCommand else {
            throw .usage("profile '\(profile.name)' signs with a command but has no signing_command")
        }
        var canonical = JSONObject()
        canonical["method"] = .string(request.method.uppercased())
        canonical["url"] = .string(profile.url(for: request.path))
        canonical["path"] = .string(URLParts(profile.url(for: request.path))?.path ?? request.path)
        var query = request.query
        if case .form(let fields) = request.body { query += fields }
        canonical["query"] = .array(query.map { .array([.string($0.0), .string($0.1)]) })
        canonical["headers"] = .object(JSONObject(request.headers.map { ($0.name, JSON.string($0.value)) }))
        if case .raw(.bytes(let bytes), _) = request.body {
            canonical["body_sha256"] = .string(Digest.hex(Digest.sha256(bytes)))
        } else {
            canonical["body_sha256"] = .null
        }
        canonical["timestamp"] = .number(String(Int(now())))
        let output: [UInt8]
        do {
            output = try Subprocess.run(["/bin/sh", "-c", command], input: JSON.object(canonical).serialized(.compact), environment: environment)
        } catch {
            throw .localInput("the signing command failed (\(error))")
        }
        guard case .object(let answer)? = try? JSONParser.parse(output) else {
            throw .localInput("the signing command did not print a JSON object of headers and params")
        }
        for (name, value) in answer["headers"]?.objectValue ?? JSONObject() {
            let text = value.stringValue ?? value.scalarText ?? ""
            if let problem = HTTPSyntax.headerProblem(name: name, value: text) {
                throw .localInput("the signing command printed an \(problem)")
            }
            request.headers.removeAll { $0.name.lowercased() == name.lowercased() }
            request.headers.append(HTTPHeader(name, text))
        }
        for (name, value) in answer["params"]?.objectValue ?? JSONObject() {
            request.query.removeAll { $0.0 == name }
            request.query.append((name, value.stringValue ?? value.scalarText ?? ""))
        }
    }
}
