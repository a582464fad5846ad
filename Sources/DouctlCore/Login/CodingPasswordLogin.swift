#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// Coding's cookie login, for `auth login --password`:
/// ask whether a captcha is needed first (that request also starts the session), show the
/// captcha if so, send the account and the password as the hex SHA-1 of its UTF-8 bytes,
/// and answer a two-factor challenge. The session's cookies end up in the profile's jar.
public struct CodingPasswordLogin {
    public let profile: ResolvedProfile
    private let http: any HTTPTransport
    private let console: LoginConsole
    private let jar: CookieJar
    public static let maximumCaptchaAttempts = 3
    public static let maximumTwoFactorAttempts = 3

    /// Builds the login's API clients, so they carry the profile's "$VAR" values like any.
    private let clients: ClientFactory

    public init(clients: ClientFactory, http: any HTTPTransport, console: LoginConsole, jar: CookieJar) {
        self.clients = clients
        self.profile = clients.profile
        self.http = http
        self.console = console
        self.jar = jar
    }

    /// Logs in and saves the session; returns who logged in.
    public func run() throws(DouctlError) -> Identity {
        let session = CookieSession(jar: nil, now: clients.requests.clock.now)
        let client = clients.client(http: http, tokens: nil, session: session)

        let captchaNeeded = try client.json(APIRequest(path: "/api/captcha/login")).boolValue ?? false
        let account = try ask("Account (email, phone or global key):", secret: false)
        let password = try ask("Password:", secret: true)
        var fields = [("account", account), ("password", Self.hashPassword(password)), ("remember_me", "true")]
        // Sent in a form no header names: masked in douctl's own lines should the server echo it.
        clients.requests.sentSecrets.add(contentsOf: [password, Self.hashPassword(password)])

        var user: JSON?
        var attempt = 0
        while user == nil {
            attempt += 1
            var loginFields = fields
            if captchaNeeded || attempt > 1 { loginFields.append(("j_captcha", try solveCaptcha(client))) }
            do {
                user = try client.json(APIRequest(method: "POST", path: "/api/v2/account/login", body: .form(loginFields), sendsToken: false))
            } catch {
                guard case .api(let apiError) = error else { throw error }
                if apiError.messageKeys.contains("j_captcha_error"), attempt < Self.maximumCaptchaAttempts {
                    console.say("The captcha was wrong; here is a new one.")
                    continue
                }
                if apiError.messageKeys.contains("two_factor_auth_code_not_empty") {
                    user = try twoFactor(client)
                    break
                }
                if apiError.messageKeys.contains("account_or_password_error") {
                    throw .authentication("wrong account or password")
                }
                throw .authentication("login failed (\(apiError.message))")
            }
            fields = loginFields.filter { $0.0 != "j_captcha" }
        }
        var identity = Identity(id: user?["id"]?.scalarText, name: user?["global_key"]?.scalarText, displayName: user?["name"]?.scalarText)
        if identity.name == nil {
            identity = try Identity.fetch(with: clients.client(http: http, tokens: nil, session: session)) ?? identity
        }
        // A profile pinned to one account (expect_user) keeps no other's session.
        if let refusal = clients.profile.expectedUserRefusal(userID: identity.id, userName: identity.name) { throw refusal }
        try jar.save(session.cookies, owner: identity)
        return identity
    }

    /// The password as Coding's clients send it: lowercase hex SHA-1 of its UTF-8 bytes.
    public static func hashPassword(_ password: String) -> String {
        Digest.hex(Digest.sha1(Array(password.utf8)))
    }

    /// Asks for the two-factor code until the server takes one: a mistyped code (Coding's
    /// `two_factor_auth_code_error`) gets a new prompt, up to `maximumTwoFactorAttempts`
    /// codes in all, like a wrong captcha. Anything else ends the login.
    private func twoFactor(_ client: APIClient) throws(DouctlError) -> JSON {
        var attempt = 0
        while true {
            attempt += 1
            let code = try ask("Two-factor code:", secret: false)
            do {
                return try client.json(APIRequest(method: "POST", path: "/api/check_two_factor_auth_code", body: .form([("code", code)]), sendsToken: false))
            } catch {
                guard case .api(let apiError) = error else { throw error }
                if apiError.messageKeys.contains("two_factor_auth_code_error"), attempt < Self.maximumTwoFactorAttempts {
                    console.say("The two-factor code was wrong; try again (\(Self.maximumTwoFactorAttempts - attempt) more).")
                    continue
                }
                throw .authentication("the two-factor code was refused (\(apiError.message))")
            }
        }
    }

    /// Saves the captcha picture, shows its path, and reads the characters.
    private func solveCaptcha(_ client: APIClient) throws(DouctlError) -> String {
        let reply = try client.send(APIRequest(path: "/api/getCaptcha", sendsToken: false))
        let path = try saveCaptcha(reply.body)
        defer { unlink(EscapedBytes.cString(path)) }
        console.say("A captcha is needed: open \(path)")
        return try ask("and type the characters it shows:", secret: false)
    }

    private func saveCaptcha(_ bytes: [UInt8]) throws(DouctlError) -> String {
        var template = EscapedBytes.cString("\(console.captchaDirectory)/douctl-captcha-XXXXXX")
        let fd = template.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return mkstemp(base)
        }
        guard fd >= 0 else { throw .localInput("cannot save the captcha in \(console.captchaDirectory)") }
        defer { close(fd) }
        let base = EscapedBytes.string(template.dropLast().map { UInt8(bitPattern: $0) })
        do { try FileIO.writeAll(fd, bytes) } catch { throw .localInput("cannot save the captcha (\(error))") }
        let path = base + ".png"
        guard rename(EscapedBytes.cString(base), EscapedBytes.cString(path)) == 0 else {
            unlink(EscapedBytes.cString(base))
            throw .localInput("cannot save the captcha as \(path)")
        }
        return path
    }

    private func ask(_ prompt: String, secret: Bool) throws(DouctlError) -> String {
        console.say(prompt)
        guard let line = (secret ? console.readSecret() : console.readLine())?.trimmingCharacters(in: "\r\n"), !line.isEmpty else {
            if console.isCancelled() { throw .interrupted }
            throw .authentication("no answer to '\(prompt)' on standard input")
        }
        return line
    }
}
