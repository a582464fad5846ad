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

    static func printCompletion(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        guard let script = script(for: context.parsed.argument("SHELL") ?? "") else {
            throw .usage("missing argument SHELL")
        }
        context.stdout.write(script)
        return .success
    }

    /// One candidate per line; never fails loudly (a completion must not print errors).
    static func printCandidates(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        var candidates: [String] = []
        switch context.parsed.argument("KIND") {
        case "profiles":
            let configured = (try? context.config().profiles.map(\.name)) ?? []
            candidates = configured + Preset.all.map(\.name).filter { !configured.contains($0) }
        case "keys":
            candidates = ProfileKey.allCases.map(\.rawValue)
        case "presets":
            candidates = Preset.all.map(\.name)
        default:
            break
        }
        for candidate in candidates { context.stdout.line(candidate) }
        return .success
    }

    static func printManual(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        context.stdout.write(ManPageContent.page.render())
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
                    (term: "$XDG_CACHE_HOME/douctl (else ~/.cache/douctl)", text: "The response cache of --cache: one NAME.reply file per GET/HEAD reply, mode 0600 in a 0700 directory; see REQUEST SHAPING."),
                    (term: ".ratelimit-PROFILE.json, .ratelimit-PROFILE.lock", text: "The send times the rate_limit quota counts, shared by concurrent douctl processes under an flock."),
                    (term: "credentials.json.corrupt-TIME", text: "Where auth logout moves a credentials.json it cannot read."),
                    (term: "cookies-PROFILE.json", text: "The cookie session of a Coding password login (auth login --password) and who logged in to it, mode 0600, written like credentials.json."),
                ]),
            ]),
            OutputOptions.manSection,
            ManPage.Section(title: "ENVIRONMENT", blocks: [
                .definitions([
                    (term: "DOUCTL_PROFILE", text: "The profile to use when --profile is not given."),
                    (term: "DOUCTL_CONFIG_DIR", text: "The config directory (see FILES)."),
                    (term: "XDG_CONFIG_HOME, HOME", text: "Where the config directory is when DOUCTL_CONFIG_DIR is not set."),
                    (term: "DOUCTL_TOKEN", text: "An access token to use instead of the stored one (or the cookie session, which is then not sent). It is never written anywhere, never refreshed, and auth login refuses to run while it is set."),
                    (term: "DOUCTL_CLIENT_ID, DOUCTL_CLIENT_SECRET", text: "Override the profile's client_id and client_secret."),
                    (term: "BROWSER", text: "The command auth login --web opens URLs with (a ':'-separated list; %s marks the URL). Without it douctl uses xdg-open (open on macOS) when a display is available."),
                    (term: "DISPLAY, WAYLAND_DISPLAY", text: "Whether a browser can open here; without one (and without BROWSER) auth login prefers the device flow."),
                    (term: "NO_COLOR", text: "When set and non-empty, douctl prints no colour (unless --color always)."),
                    (term: "XDG_CACHE_HOME", text: "Where the response cache is (XDG_CACHE_HOME/douctl; else HOME/.cache/douctl)."),
                    (term: "TMPDIR", text: "Where douctl demo makes its temporary config directory."),
                    (term: "http_proxy, HTTPS_PROXY, https_proxy, ALL_PROXY, all_proxy, NO_PROXY, no_proxy", text: "Proxies, read by libcurl as curl reads them: http_proxy for http:// URLs (an upper-case HTTP_PROXY is ignored, as curl does), HTTPS_PROXY or https_proxy for https:// URLs, ALL_PROXY for both, NO_PROXY a comma-separated list of hosts or domains to reach directly (* for all). They win over the profile's proxy key; --proxy wins over them. See NETWORKS."),
                    (term: "CURL_CA_BUNDLE, SSL_CERT_FILE", text: "A PEM file of CA certificates to trust instead of the system's, as for curl (CURL_CA_BUNDLE first). Used when neither --cacert nor --capath is given; wins over the profile's ca_bundle."),
                    (term: "SSL_CERT_DIR", text: "A directory of hashed CA certificates to trust, as for curl. Used when neither --cacert nor --capath is given; wins over the profile's ca_path."),
                    (term: "DOUCTL_LIBCURL", text: "The libcurl shared library to load instead of libcurl.so.4 (libcurl.4.dylib on macOS)."),
                    (term: "DOUCTL_TEST_HOLD_BEFORE_RENAME", text: "For douctl's own tests: seconds to pause between writing a temporary file and renaming it over the target."),
                ]),
            ]),
            ManPage.Section(title: "LOGINS AND PROFILES", blocks: [
                .paragraph("Commands that act as a user (user, shuo, and upload to its default target) check for a login before sending anything: without a token or a cookie session they exit 4 with: not logged in to PROFILE; run: douctl auth login --profile PROFILE. douctl api and upload --to PATH are curl-like: without a login they send the request anonymously, so public endpoints work, and an authentication error from the server says how to log in."),
                .paragraph("A profile has one identity. A new login replaces the profile's stored token and its cookie session (Coding's --password login), and auth status names the credential requests use (\"credential\": token, cookie session or DOUCTL_TOKEN) and its owner. auth status --check (the default when stdout is a terminal) asks the server whether the login still works; --no-check only reads the files."),
                .paragraph("auth login --wait SECONDS bounds the wait for approval in the browser, pasted-code and device flows (default 300). The global --timeout is always the per-request network timeout, wherever it is written. The device flow retries its requests on transient failures (HTTP 429, 500, 502, 503, 504, timeouts, refused connections) with back-off, within the device code's lifetime."),
                .paragraph("When credentials.json cannot be read (corrupt JSON, a missing access_token), auth login stops before starting a flow and says how to move the file aside; auth logout moves it to credentials.json.corrupt-TIME itself, with a warning, so no data is lost and every profile can log in again."),
                .paragraph("--profile accepts the configured profiles and the presets (douban, coding, coding-openapi, sandbox, coding-sandbox); profile list shows them all (\"configured\" tells which are in config.json), and a mistyped name gets a did-you-mean."),
                .paragraph("The sandbox prints its seeded logins when it starts: Douban logins are approved as ahbei; Coding accounts coder, twofa (two-factor), devmei and opszhang share the password douctl-pass. The captcha and two-factor codes of a Coding password login appear on the sandbox's standard error as they are issued; douctl saves the captcha picture in the config directory and removes it once answered."),
            ]),
            ManPage.Section(title: "API FIELDS", blocks: [
                .paragraph("douctl api follows gh: -f KEY=VALUE sends a string, -F KEY=VALUE a typed value (true, false, null, numbers), and -F KEY=@FILE the contents of FILE as the field's value (KEY=@- reads standard input); the text must be UTF-8. A file part needs --attach KEY=FILE (KEY=- reads standard input): the body then becomes multipart/form-data with the file's name and its MIME type (from its first bytes, then its extension), and the other fields as text parts."),
                .paragraph("--input FILE sends the file as the body, streamed with Content-Length (from a pipe, chunked). Its Content-Type is what -H says; otherwise application/json for a file named *.json and application/octet-stream for anything else: douctl does not guess from the contents."),
                .paragraph("upload without --to posts each file as a public status (on Douban, a 广播 with a picture). On a terminal, posting more than one file that way asks first; --yes (-y) skips the question, and scripts (no terminal) are not asked."),
            ]),
            ManPage.Section(title: "SCRIPTING", blocks: [
                .paragraph("On an error exit nothing goes to standard output unless asked. --error-body stdout|stderr|none says where an API error reply's body goes; api defaults to stdout on a terminal and stderr otherwise, other commands to none. A walk (--all, --paginate) that fails part-way leaves the items it printed, and the error line names the page that failed (--max-time running out included); --slurp closes its array so the output still parses. A walk stops after 100,000 pages; reaching that cap means it did not reach the end, so it says so on standard error and exits 8."),
                .paragraph("Standard output: when its reader goes away (douctl api ... --paginate | head -n 3), douctl stops at the first failed write, fetches no more pages, and exits 141 without a message, the status a shell reports for a tool killed by SIGPIPE (as gh does). Any other failed write to standard output (a full disk, a closed descriptor: >&-) is an error, as for coreutils: one line, exit 3. A standard input, output or error that is closed when douctl starts is replaced by /dev/null (opened read-only, so writing to a closed standard output still fails), so no file or connection douctl opens takes its place."),
                .paragraph("--json sends the fields of douctl api as one JSON object with Content-Type application/json: -F values keep their JSON types (true, false, null, numbers), NAME[KEY]=V nests objects, NAME[]=V builds arrays, and -F 'NAME:=JSON' takes any JSON value. The profile key body_format (form or json) sets the default. --input - sends standard input as application/json when it starts with { or [."),
                .paragraph("--slurp, with --all or --paginate, prints one JSON array of every item instead of one item per line; it is written as the pages arrive, so memory stays flat."),
                .paragraph("{me} in an api path or a typed command's ID or --user stands for the logged-in user's id (from the stored login, else asked of the API once)."),
                .paragraph("--dry-run prints each request a command would send (api, user, shuo, upload, download) as a curl command line: method, URL, headers and body, with the token written as $DOUCTL_TOKEN for the shell to fill in and file parts as curl -F arguments. Nothing is sent and the token store is not read; a step that needs a real reply (the picture URL of a Coding post) ends the dry run there."),
                .paragraph("Retries: idempotent requests (GET, HEAD, PUT, DELETE) are retried on connection errors and on HTTP 429, 502, 503 and 504 with exponential back-off and Retry-After honoured: --retry N times (default 2; --no-retry is --retry 0), none starting later than --retry-max-time SECONDS after the first try. --max-time SECONDS bounds the whole command: when it runs out the command stops as Ctrl-C stops it and exits 7. --wait-on-rate-limit waits out a rate-limited reply (HTTP 429, Douban codes 111 and 112) for its Retry-After (else 60 seconds), with a countdown on a terminal, and sends the request again, POSTs included; the waits add up to at most --retry-max-time (default three hours)."),
                .paragraph("auth export prints the profile's stored login, refresh token included, as JSON; on a terminal only with --yes-i-know. auth login --with-credentials reads that JSON from standard input on another machine (a CI job) and stores it without sending anything. Neither takes a secret from the command line."),
            ]),
            ManPage.Section(title: "REQUEST SHAPING", blocks: [
                .paragraph("Profile keys shape every request sent to the profile's own API origin. common_params and common_headers (NAME=VALUE,... or a JSON object) are added to each request: parameters to the query of GET and DELETE, otherwise to the form, multipart or JSON body (the query for --input bodies); a value written \"$VAR\" is read from the environment when the request is sent; a -f, -F or -H of the call wins over the profile's. A header name must be an RFC 9110 token and a value may not contain CR, LF or NUL, checked byte by byte wherever the header comes from: a -H that breaks the rule exits 2, a common_headers value in config.json (or read from \"$VAR\" when the request is sent), a cookie in the jar or a signing command's header exits 3, before anything is sent. Multipart field names and file names are escaped as curl does (\" as %22, CR as %0D, LF as %0A)."),
                .paragraph("signing chooses a scheme. hmac-sha1: _sig is the base64 HMAC-SHA1 with signing_secret of METHOD&PATH&TIMESTAMP (the path percent-encoded, unreserved characters kept), sent in the query with _ts (the Unix time) and apikey (client_id). md5-sorted: sign is the lowercase MD5 hex of the query and form parameters sorted by name, joined as k=v&..., followed by the secret. command: signing_command runs through /bin/sh with the canonical request on standard input as JSON ({\"method\", \"url\", \"path\", \"query\": [[k, v]], \"headers\", \"body_sha256\", \"timestamp\"}) and prints {\"headers\": {...}, \"params\": {...}} to add. signing_secret is never taken from the command line: douctl config set signing_secret - reads it from standard input, or \"$VAR\" names an environment variable; it is masked in profile show and -v."),
                .paragraph("--cache DURATION (30s, 5m, 1h, 1d) answers GET and HEAD from the response cache in $XDG_CACHE_HOME/douctl (else ~/.cache/douctl) when an entry is younger than DURATION; otherwise it fetches and stores the reply. Entries are keyed by profile, method, URL and a SHA-256 of the credential in force, the token or the cookie session (never the credential itself), so one account's replies are never served to another; a logged-out profile's commands exit 4 whatever the cache holds, auth login and auth logout drop the profile's entries, and Set-Cookie is never stored. Entries are written atomically with mode 0600, skipped when the reply says Cache-Control: no-store, and evicted least recently used first beyond cache_max_mb (default 50). When the network fails or answers 5xx, an older entry is used with a warning (stale-if-error). --cache-only never sends: with nothing cached it exits 5, \"not in the cache\" (not 7: nothing was contacted). douctl cache info and douctl cache clear manage the directory."),
                .paragraph("--record DIR writes every exchange as DIR/NNNN-METHOD-PATH.json: the request (method, path, query, headers, body) and the reply, with tokens, secrets, cookies and signatures replaced by REDACTED: besides the fields known by name, every live secret (the access and refresh tokens, client_secret, signing_secret, the session's cookies) is replaced wherever it appears, a server's echo of it in a reply header or body included. douctl sandbox --replay DIR answers from them, matching method, path and query (tokens, signatures and timestamps ignored). Downloads stream to files and are neither recorded nor cached; rate_limit counts them."),
                .paragraph("rate_limit (N/UNIT: 40/min, 10/5s, 1000/hour) is a quota shared by every douctl process of the profile through .ratelimit-PROFILE.json in the config directory, changed under an flock: a request that would go over waits until the oldest one in the window ages out, so upload --parallel and loops stay under an API key's quota instead of collecting 429s."),
                .paragraph("Typed commands check the replies they print: a status needs id, text and created_at, a user id, uid and name (Coding: id, content, created_at; id, global_key, name). A reply without them is a bad reply (exit 8) naming the missing field. douctl api prints whatever the server sent."),
            ]),
            ManPage.Section(title: "NETWORKS", blocks: [
                .paragraph("douctl speaks HTTPS through libcurl and always verifies the server's certificate chain and host name, with TLS 1.2 as the lowest version it accepts. -v shows the negotiated TLS version and cipher and the server certificate's subject, issuer and expiry date."),
                .paragraph("Trust: the CA certificates come from the first of: --cacert FILE and --capath DIR; the environment (CURL_CA_BUNDLE, else SSL_CERT_FILE, and SSL_CERT_DIR); the profile keys ca_bundle and ca_path; the system's CA store. So: option > environment > profile > system. A file or directory named in any of these that cannot be read is exit 3, before anything is sent."),
                .paragraph("Identity: --cert FILE (and --key FILE when the key is not in the same PEM file), else the profile keys client_cert and client_key, present a client certificate to servers that ask for one (mutual TLS)."),
                .paragraph("--insecure (-k) or the profile key insecure set to true skips verification; douctl prints a one-line warning on stderr every time. auth login never stores it; set it only with douctl config set insecure true."),
                .paragraph("TLS failures are exit 7, each with its own message naming the host: a certificate that is not trusted (with how to trust it), a certificate for another host name, an expired certificate, a failed handshake (no common TLS version or cipher, or not TLS at all), and a client certificate that was refused or is required."),
                .paragraph("Proxies: --proxy URL; else the proxy variables (see ENVIRONMENT), which libcurl reads as curl does, NO_PROXY included; else the profile key proxy, for each scheme (http, https) no variable covers. https:// requests go through an HTTP proxy with CONNECT, so the proxy never sees their content. A password in a proxy URL (http://user:password@proxy:3128) is shown as *** in -v output and in errors."),
                .paragraph("Redirects: GET and HEAD follow 301, 302, 303, 307 and 308 replies, at most 10 hops. When a hop leaves the origin (scheme, host and port) of the request, the Authorization header, cookies, X-XSRF-TOKEN and the access_token query parameter are not sent on. A redirect from https to http is refused (exit 7). Other methods (POST, PUT, PATCH, DELETE) follow only a 307 or 308 on the same origin, with the same method and body (a body read from a pipe cannot be sent again). Any redirect douctl does not follow is exit 7, naming its Location: the request was not carried out there, so a script never mistakes it for success."),
                .paragraph("A proxy that refuses the credentials (HTTP 407) is exit 7, the proxy refused the credentials, over http and https alike; the request is not sent again, since the same credentials cannot pass."),
                .paragraph("Errors are judged by their HTTP status: 401 and 403 are exit 4, 404 exit 5, 429 exit 6, any other status of 400 and above exit 1, whatever the body holds, and the API's own code decides where the body has one (Douban's HTTP 400 with code 106 or 103 means an expired or invalid token). A body that is not JSON (a gateway's HTML page) is quoted briefly: its title or first words, on one line, without control characters. A HEAD reply has no body to judge."),
                .paragraph("Advice to run douctl auth login appears only where logging in can help: not for a permission error (HTTP 403, Douban's need_permission, code 1000) when a token was sent, and not for a URL outside the profile's api_base, where no credentials are sent."),
                .paragraph("Timeouts, as curl's --connect-timeout, --speed-limit and --speed-time: --timeout SECONDS (default 30) bounds connecting, and a transfer that moves fewer than 100 bytes a second (upload and download together) for SECONDS has stalled, so a silent server and one trickling a few bytes a second both end with exit 7. --max-time bounds the whole command. A reply that is not HTTP (no status line or a malformed one, HTTP/0.9, a bad Content-Length, a body its Content-Encoding cannot decode) is exit 8."),
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
                .paragraph("auth login --password performs Coding's cookie login: a captcha check first (the image is saved in the config directory, its path shown, and removed once answered), the account and password from the terminal (the password is not echoed) or from stdin, the password sent as the hex SHA-1 of its UTF-8 bytes, and a two-factor code when asked. The session cookies are kept in the profile's cookie jar and XSRF-TOKEN is sent back as X-XSRF-TOKEN. Codes 1000 and 3207 mean not logged in (exit 4); 907 and 1018 mean a captcha is required, and the error says how to pass it."),
                .paragraph("douctl api also understands the CODING OpenAPI dialect {\"Response\": {..., \"Error\": {\"Code\", \"Message\"}, \"RequestId\"}}."),
            ]),
            ManPage.Section(title: "OTHER APIS", blocks: [
                .paragraph("A profile without a preset is any OAuth2 REST API. The token goes as Authorization: Bearer TOKEN, or with the scheme auth_scheme names (token for GitHub, Gitea and CODING personal access tokens). api --paginate follows a Link header's rel=\"next\" (RFC 8288), a next link in the body (next, next_url, paging.next, _links.next.href, links.next), or start/count and page/pageSize, on the same origin only; a page that repeats an earlier one ends the walk with a warning. The items of a page are the reply when it is an array, else the first array of data, items, results, values, list, entries, records or nodes (also one level under data), else the object's only array. When a reply of such a profile carries no link and names no position, size or total, a short page is only a guess at the end, and the walk says so on stderr."),
                .paragraph("Such a profile follows the RFCs: scopes are sent space-separated (RFC 6749 §3.3), form bodies are application/x-www-form-urlencoded with no parameters, and a redirect_uri you set is sent as registered, host and path kept, only a missing or zero port chosen freely (RFC 8252 §7.3). No request asks who the token belongs to unless user_url names the endpoint (a path under api_base or a URL), with user_id_field (default id) and user_name_field (default login, then username, then name) naming the fields, dotted paths allowed (data.id); without it a login stores the token and auth status shows the user as null. Presets keep their APIs' conventions."),
                .example(command: "douctl profile add github --api-base https://api.github.com --device-authorization-url https://github.com/login/device/code --token-url https://github.com/login/oauth/access_token --client-id CLIENT_ID --token-auth none --scopes repo", explanation: "GitHub with the device flow (enable it in the OAuth app's settings)."),
                .example(command: "douctl auth login --profile github --device && douctl api '/user/repos?per_page=100' --paginate --profile github | jq -r .full_name", explanation: "Log in, then walk every page by its Link header."),
                .example(command: "douctl profile add gitlab --api-base https://gitlab.com/api/v4 --authorize-url https://gitlab.com/oauth/authorize --token-url https://gitlab.com/oauth/token --client-id APP_ID --token-auth none --redirect-uri http://127.0.0.1:7777/callback --scopes read_api", explanation: "GitLab with the browser and PKCE (register the same redirect URI)."),
                .example(command: "douctl auth login --profile gitlab --web && douctl api '/projects?membership=true&per_page=100' --paginate --profile gitlab", explanation: "GitLab pages with Link and X-Next-Page; douctl follows the Link."),
                .example(command: "douctl profile add gitea --api-base https://gitea.example/api/v1 --auth-scheme token && douctl auth login --profile gitea --with-token < token.txt", explanation: "Gitea with an access token from a file (never from the command line)."),
                .example(command: "douctl api '/repos/search?limit=50' --paginate --profile gitea | jq -r .full_name", explanation: "Every repository, page after page."),
                .example(command: "douctl profile add coding --preset coding-openapi && printenv CODING_TOKEN | douctl auth login --profile coding --with-token", explanation: "CODING OpenAPI with a personal access token (Authorization: token); for a team's own host add --api-base https://TEAM.coding.net/open-api."),
                .example(command: "douctl api -f Action=DescribeCodingProjects -F PageNumber=1 -F PageSize=20 --profile coding", explanation: "Without PATH the fields go to api_base as JSON, {\"Action\": …}; the Response is printed, and Response.Error codes AuthFailure* exit 4, ResourceNotFound* 5, LimitExceeded 6, others 1."),
                .example(command: "douctl profile add signed --api-base https://api.example.com --client-id API_KEY --signing hmac-sha1 --signing-secret '$SIGNING_SECRET'", explanation: "An API that signs requests like Douban's app API: apikey, _ts and _sig in each query (see REQUEST SHAPING); the secret is read from the environment when a request is sent."),
            ]),
            ManPage.Section(title: "SEE ALSO", blocks: [
                .paragraph("jq(1), curl(1), gh(1). Douban API v2 and OAuth2: https://developers.douban.com/wiki/?title=api_v2. OAuth 2.0 for native apps: RFC 8252; PKCE: RFC 7636; device grant: RFC 8628; token revocation: RFC 7009; multipart/form-data: RFC 7578."),
            ]),
        ]
    }
}
