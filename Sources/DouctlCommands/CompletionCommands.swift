import DouctlArguments
import DouctlCore

/// `douctl completion bash|zsh|fish`, and the hidden commands the generated files come
/// from: `__complete KIND` (candidates at completion time) and `__man` (the man page).
enum CompletionCommands {
    static let shells = ["bash", "zsh", "fish"]

    static let completion = Command(CommandSpec(
        "completion",
        abstract: "print a shell completion script",
        discussion: """
        bash:  douctl completion bash > ~/.local/share/bash-completion/completions/douctl
        zsh:   douctl completion zsh > "${fpath[1]}/_douctl"   (then restart zsh)
        fish:  douctl completion fish > ~/.config/fish/completions/douctl.fish
        Profile names are completed by asking douctl at completion time.
        """,
        arguments: [ArgumentSpec("SHELL", help: "bash, zsh or fish", kind: .choice(shells), completion: .choices(shells))]), run: printCompletion)

    static let complete = Command(CommandSpec(
        "__complete", abstract: "print completion candidates (used by the completion scripts)",
        arguments: [ArgumentSpec("KIND", help: "what to list: profiles, keys, presets")],
        isHidden: true), run: printCandidates)

    static let manual = Command(CommandSpec("__man", abstract: "print the man page (roff)", isHidden: true), run: printManual)

    static func script(for shell: String) -> String? {
        switch shell {
        case "bash": return BashCompletion.render(Douctl.rootSpec)
        case "zsh": return ZshCompletion.render(Douctl.rootSpec)
        case "fish": return FishCompletion.render(Douctl.rootSpec)
        default: return nil
        }
    }

    static func printCompletion(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        guard let script = script(for: invocation.parsed.argument("SHELL") ?? "") else {
            throw .usage("missing argument SHELL")
        }
        invocation.stdout.write(script)
        return .success
    }

    /// One candidate per line; never fails loudly (a completion must not print errors).
    static func printCandidates(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        var candidates: [String] = []
        switch invocation.parsed.argument("KIND") {
        case "profiles":
            let configured = (try? invocation.config().profiles.map(\.name)) ?? []
            candidates = configured + Preset.all.map(\.name).filter { !configured.contains($0) }
        case "keys":
            candidates = ProfileKey.allCases.map(\.rawValue)
        case "presets":
            candidates = Preset.all.map(\.name)
        default:
            break
        }
        for candidate in candidates { invocation.stdout.line(candidate) }
        return .success
    }

    static func printManual(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        invocation.stdout.write(ManPageContent.page.render())
        return .success
    }
}

/// What the man page says beyond the command tree.
enum ManPageContent {
    /// The date printed in the man page header: the release date of this version, fixed so
    /// the checked-in page does not drift.
    static let releaseDate = "2026-11-21"

    static var page: ManPage {
        ManPage(root: Douctl.rootSpec, date: releaseDate, version: Douctl.version, description: description, extraSections: sections)
    }

    static let description: [ManPage.Block] = [
        .paragraph("douctl is a command-line client for Douban API v2 and Coding-style REST APIs: OAuth2 login, a token file store with automatic refresh, typed commands for users and 广播 (shuo, status posts), streaming multipart uploads, and a raw api command for any endpoint."),
        .paragraph("Data goes to standard output: one JSON document per reply, pretty (two-space indent, like jq .) when stdout is a terminal and compact otherwise, or one JSON value per line (NDJSON) for --all, --paginate and upload. The server's key order and number text are kept and 中文 stays readable. Everything meant for a person (progress, prompts, warnings, errors) goes to standard error."),
        .paragraph("douctl sandbox serves a faithful local Douban API v2 with OAuth2 (and Coding's paths) on the loopback interface, so every command can be tried with no account and no network; douctl demo runs a guided tour against one."),
        .paragraph("A Douban error reply such as {\"msg\":\"uri_not_found\",\"code\":1001,\"request\":\"GET /shuo/v2/statuses/1\"} becomes one line on stderr, douctl: not found (uri_not_found, code 1001, GET /shuo/v2/statuses/1), and an exit status from the table below. Douban answers authentication errors with HTTP 400 and a code (102 missing, 103 invalid, 106 expired); douctl refreshes the token once and replays the request on 106 and 103."),
    ]

    static var sections: [ManPage.Section] {
        [
            ManPage.Section(title: "FILES", blocks: [
                .definitions([
                    (term: "$DOUCTL_CONFIG_DIR, else $XDG_CONFIG_HOME/douctl, else ~/.config/douctl", text: "The config directory, created with mode 0700. --config-dir overrides it."),
                    (term: "config.json", text: "Profiles and the default profile: {\"default_profile\": NAME, \"profiles\": {NAME: {KEY: VALUE}}}. Keys: " + ProfileKey.allCases.map(\.rawValue).joined(separator: ", ") + ". Unknown keys are an error. Written atomically, mode 0600."),
                    (term: "credentials.json", text: "Per profile: access_token, refresh_token, expires_at (RFC 3339), scopes, user_id, user_name. Mode 0600; douctl refuses a file other users can read. Replaced atomically (temp file, fsync, rename) under an flock on .credentials.lock, so concurrent douctl processes never spend a single-use refresh token twice."),
                    (term: "cookies-PROFILE.json", text: "The cookie session of a Coding password login (auth login --password), mode 0600, written like credentials.json."),
                ]),
            ]),
            ManPage.Section(title: "ENVIRONMENT", blocks: [
                .definitions([
                    (term: "DOUCTL_PROFILE", text: "The profile to use when --profile is not given."),
                    (term: "DOUCTL_CONFIG_DIR", text: "The config directory (see FILES)."),
                    (term: "XDG_CONFIG_HOME, HOME", text: "Where the config directory is when DOUCTL_CONFIG_DIR is not set."),
                    (term: "DOUCTL_TOKEN", text: "An access token to use instead of the stored one. It is never written anywhere, never refreshed, and auth login refuses to run while it is set."),
                    (term: "DOUCTL_CLIENT_ID, DOUCTL_CLIENT_SECRET", text: "Override the profile's client_id and client_secret."),
                    (term: "BROWSER", text: "The command auth login --web opens URLs with (a ':'-separated list; %s marks the URL). Without it douctl uses xdg-open (open on macOS) when a display is available."),
                    (term: "DISPLAY, WAYLAND_DISPLAY", text: "Whether a browser can open here; without one (and without BROWSER) auth login prefers the device flow."),
                    (term: "NO_COLOR", text: "When set and non-empty, douctl prints no colour."),
                    (term: "TMPDIR", text: "Where douctl demo makes its temporary config directory."),
                    (term: "http_proxy, HTTPS_PROXY, https_proxy, ALL_PROXY, all_proxy, NO_PROXY, no_proxy", text: "Proxies, read by libcurl as curl reads them: http_proxy for http:// URLs (an upper-case HTTP_PROXY is ignored, as curl does), HTTPS_PROXY or https_proxy for https:// URLs, ALL_PROXY for both, NO_PROXY a comma-separated list of hosts or domains to reach directly (* for all). They win over the profile's proxy key; --proxy wins over them. See NETWORKS."),
                    (term: "CURL_CA_BUNDLE, SSL_CERT_FILE", text: "A PEM file of CA certificates to trust instead of the system's, as for curl (CURL_CA_BUNDLE first). Used when neither --cacert nor --capath is given; wins over the profile's ca_bundle."),
                    (term: "SSL_CERT_DIR", text: "A directory of hashed CA certificates to trust, as for curl. Used when neither --cacert nor --capath is given; wins over the profile's ca_path."),
                    (term: "DOUCTL_LIBCURL", text: "The libcurl shared library to load instead of libcurl.so.4 (libcurl.4.dylib on macOS)."),
                    (term: "DOUCTL_TEST_HOLD_BEFORE_RENAME", text: "For douctl's own tests: seconds to pause between writing a temporary file and renaming it over the target."),
                ]),
            ]),
            ManPage.Section(title: "NETWORKS", blocks: [
                .paragraph("douctl speaks HTTPS through libcurl and always verifies the server's certificate chain and host name, with TLS 1.2 as the lowest version it accepts. -v shows the negotiated TLS version and cipher and the server certificate's subject, issuer and expiry date."),
                .paragraph("Trust: the CA certificates come from the first of: --cacert FILE and --capath DIR; the environment (CURL_CA_BUNDLE, else SSL_CERT_FILE, and SSL_CERT_DIR); the profile keys ca_bundle and ca_path; the system's CA store. So: option > environment > profile > system. A file or directory named in any of these that cannot be read is exit 3, before anything is sent."),
                .paragraph("Identity: --cert FILE (and --key FILE when the key is not in the same PEM file), else the profile keys client_cert and client_key, present a client certificate to servers that ask for one (mutual TLS)."),
                .paragraph("--insecure (-k) or the profile key insecure set to true skips verification; douctl prints a one-line warning on stderr every time. auth login never stores it; set it only with douctl config set insecure true."),
                .paragraph("TLS failures are exit 7, each with its own message naming the host: a certificate that is not trusted (with how to trust it), a certificate for another host name, an expired certificate, a failed handshake (no common TLS version or cipher, or not TLS at all), and a client certificate that was refused or is required."),
                .paragraph("Proxies: --proxy URL; else the proxy variables (see ENVIRONMENT), which libcurl reads as curl does, NO_PROXY included; else the profile key proxy, for each scheme (http, https) no variable covers. https:// requests go through an HTTP proxy with CONNECT, so the proxy never sees their content. A password in a proxy URL (http://user:password@proxy:3128) is shown as *** in -v output and in errors."),
                .paragraph("Redirects: GET and HEAD follow 301, 302, 303, 307 and 308 replies, at most 10 hops. When a hop leaves the origin (scheme, host and port) of the request, the Authorization header, cookies, X-XSRF-TOKEN and the access_token query parameter are not sent on. A redirect from https to http is refused (exit 7). Other methods (POST, PUT, DELETE) do not follow: the 3xx reply is the result."),
            ]),
            ManPage.Section(title: "EXIT STATUS", blocks: [
                .definitions(ExitStatus.allCases.map { (term: String($0.rawValue), text: $0.meaning) }),
                .paragraph("When several things run (upload, shuo delete), the exit status is the worst of them."),
            ]),
            ManPage.Section(title: "EXAMPLES", blocks: [
                .example(command: "douctl demo", explanation: "A guided tour against a built-in sandbox."),
                .example(command: "douctl sandbox & douctl --profile sandbox auth login", explanation: "Run a sandbox and log in to it."),
                .example(command: "douctl shuo post \"你好\" --image pic.jpg | jq -r .id", explanation: "Post a 广播 with a picture and print its id."),
                .example(command: "douctl shuo get 1402640366 | jq -r .text", explanation: "Read a status's text."),
                .example(command: "douctl shuo timeline --all | jq -c '{id, text}'", explanation: "Every status of the home timeline, one per line."),
                .example(command: "douctl upload --parallel 4 *.jpg | jq -r 'select(.ok | not) | .file'", explanation: "Upload pictures four at a time; list the ones that failed."),
                .example(command: "douctl api /v2/user/~me | jq -r .name", explanation: "Call any endpoint."),
                .example(command: "curl -H \"Authorization: Bearer $(douctl auth token)\" https://api.douban.com/v2/user/~me", explanation: "Hand the token to another tool."),
            ]),
            ManPage.Section(title: "CODING", blocks: [
                .paragraph("A profile whose style is coding (presets coding and coding-sandbox) talks to Coding's legacy API: paths under /api/, replies wrapped in {\"code\": 0, \"data\": ...} (douctl prints data; --raw prints the envelope), errors {\"code\": N, \"msg\": {\"key\": \"text\"}} printed as their texts (the keys appear in --error-format json), and tokens sent as the access_token query parameter."),
                .paragraph("The same commands work: user me and user get GLOBAL_KEY; shuo post uploads a picture to /api/tweet/insert_image (field tweetImg) and posts its Markdown link with the text; shuo get ID (or GLOBAL_KEY/ID), delete, timeline (--user KEY, --public; walked with the last_id cursor), comments (page/pageSize), comment, uncomment COMMENT_ID --status ID, like and unlike. Commands Coding has no equivalent for (user search, follow, reshare, rec links) exit 2 and say so."),
                .paragraph("auth login --password performs Coding's cookie login: a captcha check first (the image is saved to a file whose path is shown), the account and password from the terminal (the password is not echoed) or from stdin, the password sent as the hex SHA-1 of its UTF-8 bytes, and a two-factor code when asked. The session cookies are kept in the profile's cookie jar and XSRF-TOKEN is sent back as X-XSRF-TOKEN. Codes 1000 and 3207 mean not logged in (exit 4); 907 and 1018 mean a captcha is required, and the error says how to pass it."),
                .paragraph("douctl api also understands the CODING OpenAPI dialect {\"Response\": {..., \"Error\": {\"Code\", \"Message\"}, \"RequestId\"}}."),
            ]),
            ManPage.Section(title: "SEE ALSO", blocks: [
                .paragraph("jq(1), curl(1), gh(1). Douban API v2 and OAuth2: https://developers.douban.com/wiki/?title=api_v2. OAuth 2.0 for native apps: RFC 8252; PKCE: RFC 7636; device grant: RFC 8628; token revocation: RFC 7009; multipart/form-data: RFC 7578."),
            ]),
        ]
    }
}
