import DouctlSystem

/// Every secret this run has sent — access and refresh tokens, client secrets, passwords,
/// API keys, authorization and device codes — so that nothing douctl prints on stderr (an
/// error line, `--error-format json`, a hint, a warning, an error body shown to a person)
/// repeats one that a server echoed back, as `-v` and `--record` never do (issue 38, point
/// 8). One per run, shared by every client and transport (`RequestSettings.sentSecrets`);
/// the one writer of stderr scrubs with it. Requests register what they carry as they
/// leave (`registering`); a flow that sends a secret in a way no request names (a hashed
/// password in a form) adds it itself. Safe to use from several threads.
public final class SentSecrets: Sendable {
    /// The texts to mask, each secret in every form it may come back in, longest first.
    private let forms = LockedValue<[String]>([])

    public init() {}

    /// Shorter texts are not masked: replacing them would mangle ordinary words ("pw").
    public static let minimumLength = 4

    /// Registers `secret` and the forms a server may repeat it in: as sent in a form body
    /// or a query (percent-encoded, a space as '+' or '%20') and as a JSON string carries
    /// it (quotes and backslashes escaped).
    public func add(_ secret: String) {
        guard secret.utf8.count >= Self.minimumLength else { return }
        let new = Self.forms(of: secret)
        forms.withLock { known in
            var changed = false
            for form in new where !known.contains(form) {
                known.append(form)
                changed = true
            }
            // Longest first: a secret that holds another is masked whole.
            if changed { known.sort { $0.utf8.count > $1.utf8.count } }
        }
    }

    public func add(contentsOf secrets: some Sequence<String>) {
        for secret in secrets { add(secret) }
    }

    /// Everything `request` carries as a credential (`Redaction.credentials(of:)`: its
    /// `secrets`, the value of Authorization — a Basic one's password too — and a URL's
    /// password) and the values of the headers `-v` masks by name (`X-API-Key`, …).
    public func add(sentIn request: HTTPRequest) {
        add(contentsOf: Redaction.credentials(of: request))
        for header in request.headers {
            let name = HTTPSyntax.lowercased(Substring(header.name))
            guard Redaction.secretHeaders.contains(name), !name.hasSuffix("authorization"), !name.containsBytes("cookie") else { continue }
            add(header.value.trimmingCharacters(in: " \t"))
        }
    }

    /// Whether nothing has been registered (nothing to mask).
    public var isEmpty: Bool { forms.withLock { $0.isEmpty } }

    /// `text` with every registered secret replaced by `***` (`Redaction.mask`).
    public func scrub(_ text: String) -> String {
        let forms = forms.value
        guard !forms.isEmpty else { return text }
        var result = text
        for form in forms where result.containsBytes(form) {
            result = result.replacingAll(form, with: Redaction.mask)
        }
        return result
    }

    /// `bytes` scrubbed as text; bytes that are not UTF-8 are searched as they are.
    public func scrub(_ bytes: [UInt8]) -> [UInt8] {
        let forms = forms.value
        guard !forms.isEmpty else { return bytes }
        var result = bytes
        for form in forms {
            result = Self.replacing(Array(form.utf8), in: result, with: Array(Redaction.mask.utf8))
        }
        return result
    }

    /// `secret` as sent and as it may come back.
    static func forms(of secret: String) -> [String] {
        var forms = [secret]
        for form in [PercentEncoding.encode(secret, spaceAsPlus: true, alsoKeeping: "*"),
                     PercentEncoding.encode(secret, spaceAsPlus: false, alsoKeeping: "*"),
                     jsonEscaped(secret)] where !forms.contains(form) {
            forms.append(form)
        }
        return forms
    }

    /// The text a JSON string holds for `text`: '"', '\' and control characters escaped.
    static func jsonEscaped(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let digits = Array("0123456789abcdef")
                result += "\\u00" + String(digits[Int(scalar.value >> 4)]) + String(digits[Int(scalar.value & 0x0F)])
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func replacing(_ needle: [UInt8], in haystack: [UInt8], with replacement: [UInt8]) -> [UInt8] {
        guard !needle.isEmpty, haystack.count >= needle.count else { return haystack }
        var result: [UInt8] = []
        var index = 0
        var found = false
        while index < haystack.count {
            if haystack[index] == needle[0], index + needle.count <= haystack.count,
               haystack[index..<(index + needle.count)].elementsEqual(needle) {
                if !found {
                    result.reserveCapacity(haystack.count)
                    result.append(contentsOf: haystack[..<index])
                    found = true
                }
                result.append(contentsOf: replacement)
                index += needle.count
            } else {
                if found { result.append(haystack[index]) }
                index += 1
            }
        }
        return found ? result : haystack
    }
}

/// A transport that registers what each request carries as a secret in the run's
/// `SentSecrets` as it leaves (`SentSecrets.add(sentIn:)`), then sends it through `base`.
public final class SecretRegisteringTransport: HTTPTransport {
    public let base: any HTTPTransport
    public let secrets: SentSecrets

    public init(_ base: any HTTPTransport, secrets: SentSecrets) {
        self.base = base
        self.secrets = secrets
    }

    public var sendsRequests: Bool { base.sendsRequests }

    public func send(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)?,
        restartSink: (() -> SinkRestart)?,
        head: ((HTTPResponseHead) -> Void)?,
        sink: (UnsafeRawBufferPointer) -> Bool
    ) throws(TransportError) -> HTTPResponseHead {
        secrets.add(sentIn: request)
        return try base.send(request, progress: progress, restartSink: restartSink, head: head, sink: sink)
    }
}

extension SentSecrets {
    /// `factory`'s transports, each registering the secrets of what it sends here.
    public func registering(_ factory: @escaping TransportFactory) -> TransportFactory {
        { [self] configuration in SecretRegisteringTransport(factory(configuration), secrets: self) }
    }
}
