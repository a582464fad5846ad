#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlHTTP
import DouctlSystem

/// TLS trust, client identity and proxy for one run, from the command line, the
/// environment (as curl reads it) and the profile.
///
/// Precedence, per group: options > environment > profile > the system's defaults.
/// - CA certificates: `--cacert`/`--capath`; else `CURL_CA_BUNDLE`, `SSL_CERT_FILE`,
///   `SSL_CERT_DIR`; else the profile's `ca_bundle`/`ca_path`; else libcurl's CA store.
/// - Client certificate: `--cert`/`--key`; else `client_cert`/`client_key`.
/// - `--insecure` or `insecure: true` turns verification off (the caller warns).
/// - Proxy: `--proxy`; else the proxy variables, which libcurl reads itself (http_proxy,
///   HTTPS_PROXY/https_proxy, ALL_PROXY/all_proxy, NO_PROXY/no_proxy); else `proxy`, for
///   each scheme (http, https) no variable covers.
public struct NetworkSettings: Sendable, Equatable {
    public var tls: TLSOptions
    /// Nil: let libcurl read the environment (or go direct).
    public var proxy: String?
    /// The profile's proxy, per scheme no proxy variable covers.
    public var fallbackProxies: [String: String] = [:]
    /// Where `insecure` came from ("--insecure", "profile key insecure"), for the warning.
    public var insecureSource: String?
    /// `--unix-socket PATH`: every connection goes to this socket (curl's --unix-socket).
    public var unixSocket: String?

    /// The command-line options of this group.
    public struct Options: Sendable, Equatable {
        public var caBundle: String?
        public var caPath: String?
        public var clientCert: String?
        public var clientKey: String?
        public var insecure: Bool
        public var proxy: String?
        public var unixSocket: String?

        public init(caBundle: String? = nil, caPath: String? = nil, clientCert: String? = nil, clientKey: String? = nil, insecure: Bool = false, proxy: String? = nil, unixSocket: String? = nil) {
            self.unixSocket = unixSocket
            self.caBundle = caBundle
            self.caPath = caPath
            self.clientCert = clientCert
            self.clientKey = clientKey
            self.insecure = insecure
            self.proxy = proxy
        }
    }

    /// The proxy variables libcurl reads for each scheme (it ignores upper-case HTTP_PROXY,
    /// as curl does).
    public static let proxyVariables: [String: [String]] = [
        "http": ["http_proxy", "all_proxy", "ALL_PROXY"],
        "https": ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"],
    ]

    /// Under -v: why an upper-case HTTP_PROXY has no effect (curl's rule, kept: a CGI
    /// server sets HTTP_PROXY from a request's `Proxy:` header, httpoxy), or nil when it is
    /// unset, lower-case http_proxy is set, or --proxy decides.
    public static func ignoredProxyNote(environment: [String: String], proxyGiven: Bool) -> String? {
        guard !proxyGiven, let upper = environment["HTTP_PROXY"]?.nonEmpty, environment["http_proxy"]?.nonEmpty == nil else { return nil }
        return "* HTTP_PROXY (\(Redaction.redactURL(upper))) is ignored, as curl ignores it (httpoxy): set http_proxy for http:// URLs, or pass --proxy"
    }

    public static func resolve(options: Options, environment: [String: String], profile: ResolvedProfile) throws(DouctlError) -> NetworkSettings {
        func env(_ name: String) -> String? { environment[name]?.nonEmpty }
        var tls = TLSOptions()
        if options.caBundle != nil || options.caPath != nil {
            tls.caBundle = try options.caBundle.map { path throws(DouctlError) in try checkFile(path, what: "CA bundle", source: "--cacert") }
            tls.caPath = try options.caPath.map { path throws(DouctlError) in try checkDirectory(path, source: "--capath") }
        } else if env("CURL_CA_BUNDLE") != nil || env("SSL_CERT_FILE") != nil || env("SSL_CERT_DIR") != nil {
            if let path = env("CURL_CA_BUNDLE") {
                tls.caBundle = try checkFile(path, what: "CA bundle", source: "CURL_CA_BUNDLE")
            } else if let path = env("SSL_CERT_FILE") {
                tls.caBundle = try checkFile(path, what: "CA bundle", source: "SSL_CERT_FILE")
            }
            tls.caPath = try env("SSL_CERT_DIR").map { path throws(DouctlError) in try checkDirectory(path, source: "SSL_CERT_DIR") }
        } else {
            // A CA that another local user can add to decides who sees the token: the
            // profile's CA files are held to config.json's rule (FileTrust).
            tls.caBundle = try profile.caBundle.map { path throws(DouctlError) in
                let file = try checkFile(expand(path, environment), what: "CA bundle", source: "profile key ca_bundle")
                try ConfigDirectory.requireTrusted(file, what: "the CA bundle")
                return file
            }
            tls.caPath = try profile.caPath.map { path throws(DouctlError) in
                let directory = try checkDirectory(expand(path, environment), source: "profile key ca_path")
                try ConfigDirectory.requireTrusted(directory, what: "the CA directory")
                return directory
            }
        }
        if options.clientCert != nil || options.clientKey != nil {
            guard let certificate = options.clientCert else { throw .usage("--key needs --cert (the client certificate it belongs to)") }
            tls.clientCertificate = try checkFile(certificate, what: "client certificate", source: "--cert")
            tls.clientKey = try options.clientKey.map { path throws(DouctlError) in try checkFile(path, what: "client key", source: "--key") }
        } else if let certificate = profile.clientCert {
            tls.clientCertificate = try checkFile(expand(certificate, environment), what: "client certificate", source: "profile key client_cert")
            tls.clientKey = try profile.clientKey.map { path throws(DouctlError) in try checkFile(expand(path, environment), what: "client key", source: "profile key client_key") }
        }
        var insecureSource: String?
        if options.insecure {
            insecureSource = "--insecure"
        } else if profile.insecure {
            insecureSource = "profile key insecure"
        }
        tls.insecure = insecureSource != nil
        for proxy in [options.proxy, profile.proxy].compactMap({ $0 }) where proxy.contains(" ") || proxy.isEmpty {
            throw .usage("invalid proxy '\(Redaction.redactURL(proxy))': expected a URL such as http://proxy.example:3128")
        }
        var fallbackProxies: [String: String] = [:]
        if options.proxy == nil, let proxy = profile.proxy {
            for (scheme, variables) in proxyVariables where !variables.contains(where: { env($0) != nil }) {
                fallbackProxies[scheme] = proxy
            }
        }
        var settings = NetworkSettings(tls: tls, proxy: options.proxy, fallbackProxies: fallbackProxies, insecureSource: insecureSource)
        settings.unixSocket = try options.unixSocket.map { path throws(DouctlError) in try checkSocket(path) }
        return settings
    }

    /// `~/x` → `$HOME/x`, for paths written in config.json.
    private static func expand(_ path: String, _ environment: [String: String]) -> String {
        guard path.hasPrefix("~/"), let home = environment["HOME"], !home.isEmpty else { return path }
        return home + path.dropFirst()
    }

    /// `--unix-socket PATH` names a socket: anything else (a missing path, a file) is exit 3,
    /// before anything is sent, rather than a connection error.
    private static func checkSocket(_ path: String) throws(DouctlError) -> String {
        guard !path.isEmpty else { throw .usage("invalid value '' for --unix-socket: expected the path of a Unix domain socket") }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .localInput("cannot use the Unix socket \(path) (from --unix-socket): \(SystemError("stat", path: path).reason)")
        }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw .localInput("cannot use the Unix socket \(path) (from --unix-socket): not a socket")
        }
        return path
    }

    private static func checkFile(_ path: String, what: String, source: String) throws(DouctlError) -> String {
        let status: FileStatus
        do {
            status = try FileIO.status(path)
        } catch {
            throw .localInput("cannot read the \(what) \(path) (from \(source)): \((error as? SystemError)?.reason ?? "\(error)")")
        }
        guard status.isRegularFile else {
            throw .localInput("cannot read the \(what) \(path) (from \(source)): not a regular file")
        }
        guard access(EscapedBytes.cString(path), R_OK) == 0 else {
            throw .localInput("cannot read the \(what) \(path) (from \(source)): permission denied")
        }
        return path
    }

    private static func checkDirectory(_ path: String, source: String) throws(DouctlError) -> String {
        let status: FileStatus
        do {
            status = try FileIO.status(path)
        } catch {
            throw .localInput("cannot read the CA directory \(path) (from \(source)): \((error as? SystemError)?.reason ?? "\(error)")")
        }
        guard status.isDirectory, access(EscapedBytes.cString(path), R_OK | X_OK) == 0 else {
            throw .localInput("cannot read the CA directory \(path) (from \(source)): not a readable directory")
        }
        return path
    }
}
