import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// The man page's OTHER APIS recipes, each run as written (URLs pointed at a local fake of
/// the API's shape) by the built douctl.
@Suite("OTHER APIS recipes")
struct OtherAPIRecipeTests {
    let douctl = Douctl()
    typealias Base = RESTAPITests.Base

    static func json(_ text: String, status: Int = 200, _ headers: [(String, String)] = []) -> HTTPServerResponse {
        RESTAPITests.json(text, status: status, headers)
    }

    static func query(_ request: TestServer.Received) -> String {
        request.target.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
    }

    @Test func gitHubWithTheDeviceFlow() throws {
        let base = Base()
        let repos = RESTAPITests.gitHub(base)
        let server = try TestServer { request in
            switch request.path {
            case "/login/device/code":
                return Self.json(#"{"device_code":"dev-1","user_code":"WDJB-MJHT","verification_uri":"\#(base.url)/login/device","expires_in":900,"interval":1}"#)
            case "/login/oauth/access_token":
                return Self.json(#"{"access_token":"gho_recipe","token_type":"bearer","scope":"repo"}"#)
            default:
                return repos(request)
            }
        }
        base.url = server.baseURL
        let add = try douctl.run("profile", "add", "github", "--api-base", base.url, "--device-authorization-url", base.url + "/login/device/code",
                                 "--token-url", base.url + "/login/oauth/access_token", "--client-id", "Iv1.recipe", "--token-auth", "none", "--scopes", "repo")
        #expect(add.status == 0, "\(add)")
        let login = try douctl.run("auth", "login", "--profile", "github", "--device")
        #expect(login.status == 0, "\(login)")
        #expect(login.stderr.contains("WDJB-MJHT"), "\(login)")
        let walk = try douctl.run("api", "/user/repos?per_page=2", "--paginate", "--profile", "github")
        #expect(walk.status == 0, "\(walk)")
        #expect(try walk.lines().map { $0["full_name"]?.stringValue } == (1...6).map { "octo/r\($0)" })
        let pages = server.received.filter { $0.path == "/user/repos" }
        #expect(pages.count == 3)
        #expect(pages.allSatisfy { $0.header("Authorization") == "Bearer gho_recipe" })
        let device = try #require(server.received.first { $0.path == "/login/device/code" })
        #expect(device.form.first { $0.name == "client_id" }?.value == "Iv1.recipe")
    }

    @Test func gitLabWithTheBrowserAndPKCE() throws {
        let browser = try FakeBrowser()
        let base = Base()
        let server = try TestServer { request in
            switch request.path {
            case "/oauth/authorize":
                let redirect = request.queryValue("redirect_uri") ?? ""
                let state = request.queryValue("state") ?? ""
                return HTTPServerResponse(status: 302, headers: [("Location", "\(redirect)?code=gl-code&state=\(state)")], body: .bytes([]))
            case "/oauth/token":
                let form = request.form
                guard form.contains(where: { $0.name == "code_verifier" && $0.value.count >= 43 }) else {
                    return Self.json(#"{"error":"invalid_grant"}"#, status: 400)
                }
                return Self.json(#"{"access_token":"glpat-recipe","token_type":"Bearer","expires_in":7200,"refresh_token":"glrt-1","scope":"read_api"}"#)
            case "/api/v4/projects":
                // GitLab's shape: a bare array, X-Page/X-Next-Page/X-Total-Pages, and a Link
                // with next, first and last.
                let page = RESTAPITests.page(Self.query(request))
                let next = page < 2 ? String(page + 1) : ""
                var links = [#"<\#(base.url)/api/v4/projects?membership=true&per_page=2&page=1>; rel="first""#,
                             #"<\#(base.url)/api/v4/projects?membership=true&per_page=2&page=2>; rel="last""#]
                if page < 2 { links.insert(#"<\#(base.url)/api/v4/projects?membership=true&per_page=2&page=\#(page + 1)>; rel="next""#, at: 0) }
                let items = page == 1 ? #"[{"id":11},{"id":12}]"# : #"[{"id":13}]"#
                return Self.json(items, [("X-Page", String(page)), ("X-Next-Page", next), ("X-Total-Pages", "2"), ("Link", links.joined(separator: ", "))])
            default:
                return Self.json(#"{"id":5,"username":"gl"}"#)
            }
        }
        base.url = server.baseURL
        let redirect = "http://127.0.0.1:\(unusedPort())/callback"
        let add = try douctl.run("profile", "add", "gitlab", "--api-base", base.url + "/api/v4", "--authorize-url", base.url + "/oauth/authorize",
                                 "--token-url", base.url + "/oauth/token", "--client-id", "app-recipe", "--token-auth", "none",
                                 "--redirect-uri", redirect, "--scopes", "read_api")
        #expect(add.status == 0, "\(add)")
        let login = try douctl.run(["auth", "login", "--profile", "gitlab", "--web"], environment: ["BROWSER": browser.command("follow")])
        #expect(login.status == 0, "\(login)")
        let authorize = try #require(server.received.first { $0.path == "/oauth/authorize" })
        #expect(authorize.queryValue("code_challenge_method") == "S256")
        // The registered host and port (the path is another change's business: issue 22's OAuth part).
        #expect(authorize.queryValue("redirect_uri")?.hasPrefix(redirect) == true)
        let walk = try douctl.run("api", "/projects?membership=true&per_page=2", "--paginate", "--profile", "gitlab")
        #expect(walk.status == 0, "\(walk)")
        #expect(try walk.lines().map { $0["id"]?.intValue } == [11, 12, 13])
        #expect(server.received.filter { $0.path == "/api/v4/projects" }.allSatisfy { $0.header("Authorization") == "Bearer glpat-recipe" })
        #expect(walk.stderr.isEmpty, "\(walk)")
    }

    @Test func giteaWithATokenFromAFile() throws {
        let base = Base()
        let server = try TestServer { request in
            guard request.path == "/api/v1/repos/search" else { return Self.json(#"{"id":3,"login":"tea"}"#) }
            // Gitea's shape: {"ok","data":[…]} with Link and X-Total-Count.
            let page = RESTAPITests.page(Self.query(request))
            var headers = [("X-Total-Count", "3")]
            if page == 1 { headers.append(("Link", #"<\#(base.url)/api/v1/repos/search?limit=2&page=2>; rel="next",<\#(base.url)/api/v1/repos/search?limit=2&page=2>; rel="last""#)) }
            let data = page == 1 ? #"[{"id":1,"full_name":"a/1"},{"id":2,"full_name":"a/2"}]"# : #"[{"id":3,"full_name":"a/3"}]"#
            return Self.json(#"{"ok":true,"data":\#(data)}"#, headers)
        }
        base.url = server.baseURL
        #expect(try douctl.run("profile", "add", "gitea", "--api-base", base.url + "/api/v1", "--auth-scheme", "token").status == 0)
        let login = try douctl.run(["auth", "login", "--profile", "gitea", "--with-token"], input: Array("gt-recipe\n".utf8))
        #expect(login.status == 0, "\(login)")
        let walk = try douctl.run("api", "/repos/search?limit=2", "--paginate", "--profile", "gitea")
        #expect(walk.status == 0, "\(walk)")
        #expect(try walk.lines().map { $0["full_name"]?.stringValue } == ["a/1", "a/2", "a/3"])
        #expect(server.received.filter { $0.path == "/api/v1/repos/search" }.map { $0.header("Authorization") } == ["token gt-recipe", "token gt-recipe"])
    }

    @Test func codingOpenAPIWithAPersonalAccessToken() throws {
        let server = try TestServer { request in
            guard request.path == "/open-api" else { return Self.json(#"{"Response":{"Error":{"Code":"InvalidAction","Message":"no"}}}"#, status: 404) }
            let action = (try? JSONParser.parse(request.body))?["Action"]?.stringValue ?? request.queryValue("Action") ?? ""
            func error(_ code: String) -> HTTPServerResponse {
                Self.json(#"{"Response":{"Error":{"Code":"\#(code)","Message":"\#(code) says no"},"RequestId":"req-\#(code)"}}"#)
            }
            switch action {
            case "DescribeCodingCurrentUser":
                return Self.json(#"{"Response":{"User":{"Id":7,"GlobalKey":"coder","Name":"码农"},"RequestId":"req-1"}}"#)
            case "AuthFail": return error("AuthFailure.InvalidToken")
            case "Missing": return error("ResourceNotFound.Project")
            case "Busy": return error("LimitExceeded")
            default: return error("InvalidParameterValue")
            }
        }
        #expect(try douctl.run("profile", "add", "coding", "--preset", "coding-openapi", "--api-base", server.baseURL + "/open-api").status == 0)
        let login = try douctl.run(["auth", "login", "--profile", "coding", "--with-token"], input: Array("pat-recipe\n".utf8))
        #expect(login.status == 0, "\(login)")
        #expect(try login.json()["user_name"]?.stringValue == "coder", "\(login)")
        let me = try douctl.run("api", "-f", "Action=DescribeCodingCurrentUser", "--profile", "coding")
        #expect(me.status == 0, "\(me)")
        #expect(try me.json()["User"]?["GlobalKey"]?.stringValue == "coder")
        let call = try #require(server.received.last)
        #expect(call.method == "POST" && call.target == "/open-api")
        #expect(call.header("Authorization") == "token pat-recipe")
        #expect(call.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(call.bodyText == #"{"Action":"DescribeCodingCurrentUser"}"#)
        for (action, exit) in [("AuthFail", Int32(4)), ("Missing", 5), ("Busy", 6), ("Other", 1)] {
            let result = try douctl.run("api", "-f", "Action=\(action)", "--profile", "coding", "--error-body", "none")
            #expect(result.status == exit, "\(action): \(result)")
            #expect(result.errorLine.contains("says no"), "\(result)")
        }
    }

    @Test func anAPIThatSignsRequestsLikeDoubansAppAPI() throws {
        let server = try TestServer(json: #"{"subjects":[]}"#)
        let add = try douctl.run("profile", "add", "signed", "--api-base", server.baseURL, "--client-id", "key-recipe",
                                 "--signing", "hmac-sha1", "--signing-secret", "$SIGNING_SECRET")
        #expect(add.status == 0, "\(add)")
        let result = try douctl.run(["api", "/v2/movie/top250", "--profile", "signed"], environment: ["SIGNING_SECRET": "s3cret-recipe"])
        #expect(result.status == 0, "\(result)")
        let request = try #require(server.received.first)
        let timestamp = try #require(request.queryValue("_ts"))
        #expect(request.queryValue("apikey") == "key-recipe")
        #expect(request.queryValue("_sig") == RequestSignature.hmacSHA1(method: "GET", path: "/v2/movie/top250", timestamp: timestamp, secret: "s3cret-recipe"))
        #expect(!(try String(contentsOfFile: douctl.configDirectory + "/config.json", encoding: .utf8)).contains("s3cret-recipe"))
    }
}
