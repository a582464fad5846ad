import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Issue 43 against real servers nobody here wrote: Strawberry GraphQL under uvicorn, with
/// nested connections (viewer → repositories → issues → comments) and Relay's node(id:).
/// The walk is compared with the server's own dump of the same data. Skips, naming the
/// PyPI package, when python3 cannot import it.
extension NSObject {
    /// The value at a dotted path of dictionaries ("data.viewer.login").
    func at(_ path: String) -> NSObject? {
        var current: NSObject? = self
        for key in path.split(separator: ".") { current = (current as? NSDictionary)?[String(key)] as? NSObject }
        return current
    }
}

@Suite("real servers: Strawberry GraphQL", .serialized)
struct GraphQLServerTests {
    static let lock = NSLock()
    nonisolated(unsafe) static var shared: PythonPeer?

    static func strawberry() throws -> PythonPeer {
        try PythonPeer.require(module: "strawberry, uvicorn", package: "strawberry-graphql uvicorn")
        lock.lock()
        defer { lock.unlock() }
        if let shared { return shared }
        let peer = try PythonPeer(name: "strawberry", source: source)
        shared = peer
        return peer
    }

    func douctl(_ peer: PythonPeer) throws -> Douctl {
        let douctl = Douctl()
        let added = try douctl.run(["profile", "add", "gql", "--api-base", peer.base])
        #expect(added.status == 0, "\(added)")
        return douctl
    }

    /// JSON values compared as Foundation reads them (member order aside).
    static func parsed(_ text: String) throws -> NSObject {
        try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as? NSObject ?? NSNull()
    }

    static func fetch(_ url: String) throws -> String {
        let result = try Douctl().run(["api", url])
        guard result.status == 0 else { throw TestFailure("\(url): \(result)") }
        return result.stdoutText
    }

    @Test func errorsFailAndPartialResultsSayThemselves() throws {
        let peer = try Self.strawberry()
        let douctl = try douctl(peer)
        // The issue's own reproduction: exit 0, nothing on stderr, the errors on stdout before.
        let missing = try douctl.run(["--profile", "gql", "api", "/graphql", "-f", "query={ item(id: 99) { name } }"])
        #expect(missing.status == 1, "\(missing)")
        #expect(missing.stdout.isEmpty, "\(missing)")
        #expect(missing.errorLine == "douctl: the API answered HTTP 200 (GraphQL: Item 99 not found (at item), POST /graphql)", "\(missing)")
        // A query that fails validation, by the profile's endpoint.
        let invalid = try douctl.run(["--profile", "gql", "api", "graphql", "-f", "query={ item(id: 1) { nam } }", "--error-body", "none"])
        #expect(invalid.status == 1 && invalid.stdout.isEmpty, "\(invalid)")
        #expect(invalid.stderr.contains("Cannot query field 'nam' on type 'Item'") && invalid.stderr.contains("(line 1:"), "\(invalid)")
        // Data and errors: the data printed, exit 10; the server's escape code shown, not obeyed.
        let partial = try douctl.run(["--profile", "gql", "api", "graphql", "-f", "query={ maybeItem(id: 99) { name } viewer { login } }"])
        #expect(partial.status == 10, "\(partial)")
        #expect(try Self.parsed(partial.stdoutText).at("data.viewer.login") as? String == "octo", "\(partial)")
        #expect(partial.stderr.contains("Item 99 not found \\x1B[31mred (at maybeItem)") && !partial.stderr.contains("\u{1B}"), "\(partial)")
        // Typed variables; the query from a file with -f query=@FILE.
        let file = TemporaryDirectory.make(prefix: "douctl-gql") + "/q.graphql"
        try Data("query($id: Int!) { item(id: $id) { name } }".utf8).write(to: URL(fileURLWithPath: file))
        let typed = try douctl.run(["--profile", "gql", "api", "graphql", "-f", "query=@\(file)", "-F", "id=1"])
        #expect(typed.status == 0 && typed.stdoutText == #"{"data":{"item":{"name":"one"}}}"# + "\n", "\(typed)")
    }

    static let nestedQuery = """
        query($endCursor: String, $n: Int!) {
          viewer { repositories(first: 3, after: $endCursor) {
            nodes { id __typename name issues(first: $n) { nodes { id __typename title
              comments(first: 2) { nodes { body } pageInfo { hasNextPage endCursor } } } pageInfo { hasNextPage endCursor } } }
            pageInfo { hasNextPage endCursor } } }
        }
        """

    @Test func nestedConnectionsComeBackWholeAsTheServersOwnDumpHasThem() throws {
        let peer = try Self.strawberry()
        let douctl = try douctl(peer)
        let truth = try Self.parsed(try Self.fetch("\(peer.base)/truth"))
        let walk = try douctl.run(["--profile", "gql", "api", "graphql", "-f", "query=\(Self.nestedQuery)", "-F", "n=2", "--paginate"], timeout: 120)
        #expect(walk.status == 0, "\(walk)\n\(peer.log.suffix(2000))")
        #expect(walk.stderr.isEmpty, "\(walk)")
        let lines = try walk.stdoutText.split(separator: "\n").map { try Self.parsed(String($0)) }
        #expect(lines.count == 7)
        #expect(NSArray(array: lines).isEqual(truth), "\(walk.stdoutText)")

        // By hand, the outer walk alone (gh's rule) leaves inner connections at their first page.
        let firstPage = try douctl.run(["--profile", "gql", "api", "graphql", "-f", "query=\(Self.nestedQuery)", "-F", "n=2"])
        #expect(firstPage.stdoutText.contains(#""hasNextPage":true"#), "the data has inner pages to complete: \(firstPage)")

        // --slurp: one document, every repository under the connection's nodes.
        let slurped = try douctl.run(["--profile", "gql", "api", "graphql", "-f", "query=\(Self.nestedQuery)", "-F", "n=2", "--paginate", "--slurp"], timeout: 120)
        #expect(slurped.status == 0, "\(slurped)")
        let document = try Self.parsed(slurped.stdoutText)
        #expect((document.at("data.viewer.repositories.nodes") as? NSArray)?.isEqual(truth) == true, "\(slurped)")
        #expect(document.at("data.viewer.repositories.pageInfo.hasNextPage") as? Bool == false)

        // Edges instead of nodes: each edge a line, its node whole.
        let edgesQuery = Self.nestedQuery.replacingOccurrences(of: "repositories(first: 3, after: $endCursor) {\n    nodes {", with: "repositories(first: 3, after: $endCursor) {\n    edges { cursor node {")
            .replacingOccurrences(of: "} } } pageInfo { hasNextPage endCursor } } }\n    pageInfo", with: "} } } pageInfo { hasNextPage endCursor } } } }\n    pageInfo")
        let edges = try douctl.run(["--profile", "gql", "api", "graphql", "-f", "query=\(edgesQuery)", "-F", "n=2", "--paginate"], timeout: 120)
        #expect(edges.status == 0, "\(edges)")
        let nodes = try edges.stdoutText.split(separator: "\n").map { try Self.parsed(String($0)).at("node") ?? NSNull() }
        #expect(NSArray(array: nodes).isEqual(truth), "\(edges)")
    }

    static let source = #"""
import json, socket, sys, threading, time, typing
import strawberry, uvicorn
from strawberry.asgi import GraphQL

REPOS = 7
def issue_count(r): return (r * 2) % 7
def comment_count(r, i): return (r + i) % 4

def page(count, first, after):
    start = int(after) + 1 if after is not None else 0
    end = min(start + first, count)
    return list(range(start, end)), PageInfo(has_next_page=end < count, end_cursor=str(end - 1) if end > start else after)

@strawberry.interface
class Node:
    id: strawberry.ID

@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: typing.Optional[str]

@strawberry.type
class Comment(Node):
    body: str

@strawberry.type
class CommentConnection:
    nodes: typing.List[Comment]
    page_info: PageInfo

@strawberry.type
class Issue(Node):
    title: str
    r: strawberry.Private[int]
    i: strawberry.Private[int]
    @strawberry.field
    def comments(self, first: int = 2, after: typing.Optional[str] = None) -> CommentConnection:
        indexes, info = page(comment_count(self.r, self.i), first, after)
        return CommentConnection(nodes=[make_comment(self.r, self.i, c) for c in indexes], page_info=info)

@strawberry.type
class IssueConnection:
    nodes: typing.List[Issue]
    page_info: PageInfo

@strawberry.type
class Repository(Node):
    name: str
    r: strawberry.Private[int]
    @strawberry.field
    def issues(self, first: int = 2, after: typing.Optional[str] = None) -> IssueConnection:
        indexes, info = page(issue_count(self.r), first, after)
        return IssueConnection(nodes=[make_issue(self.r, i) for i in indexes], page_info=info)

@strawberry.type
class RepositoryEdge:
    cursor: str
    node: Repository

@strawberry.type
class RepositoryConnection:
    nodes: typing.List[Repository]
    edges: typing.List[RepositoryEdge]
    page_info: PageInfo

def make_comment(r, i, c): return Comment(id=strawberry.ID("Comment:%d-%d-%d" % (r, i, c)), body="comment %d of issue %d of repo %d" % (c, i, r))
def make_issue(r, i): return Issue(id=strawberry.ID("Issue:%d-%d" % (r, i)), title="issue %d of repo %d" % (i, r), r=r, i=i)
def make_repo(r): return Repository(id=strawberry.ID("Repository:%d" % r), name="repo%d" % r, r=r)

@strawberry.type
class Viewer:
    login: str
    @strawberry.field
    def repositories(self, first: int = 3, after: typing.Optional[str] = None) -> RepositoryConnection:
        indexes, info = page(REPOS, first, after)
        repos = [make_repo(r) for r in indexes]
        return RepositoryConnection(nodes=repos, edges=[RepositoryEdge(cursor=str(r), node=make_repo(r)) for r in indexes], page_info=info)

@strawberry.type
class Item:
    name: str

@strawberry.type
class Query:
    @strawberry.field
    def viewer(self) -> Viewer: return Viewer(login="octo")
    @strawberry.field
    def node(self, id: strawberry.ID) -> typing.Optional[Node]:
        kind, _, rest = id.partition(":")
        parts = [int(p) for p in rest.split("-")]
        if kind == "Repository": return make_repo(*parts)
        if kind == "Issue": return make_issue(*parts)
        if kind == "Comment": return make_comment(*parts)
        return None
    @strawberry.field
    def item(self, id: int) -> Item:
        if id != 1: raise Exception("Item %d not found" % id)
        return Item(name="one")
    @strawberry.field
    def maybe_item(self, id: int) -> typing.Optional[Item]:
        if id != 1: raise Exception("Item %d not found \x1b[31mred" % id)
        return Item(name="one")

schema = strawberry.Schema(query=Query, types=[Repository, Issue, Comment])
gql = GraphQL(schema)
requests = [0]

def truth():
    def info(count): return {"hasNextPage": False, "endCursor": str(count - 1) if count else None}
    out = []
    for r in range(REPOS):
        issues = []
        for i in range(issue_count(r)):
            comments = [{"body": "comment %d of issue %d of repo %d" % (c, i, r)} for c in range(comment_count(r, i))]
            issues.append({"id": "Issue:%d-%d" % (r, i), "__typename": "Issue", "title": "issue %d of repo %d" % (i, r),
                           "comments": {"nodes": comments, "pageInfo": info(len(comments))}})
        out.append({"id": "Repository:%d" % r, "__typename": "Repository", "name": "repo%d" % r,
                    "issues": {"nodes": issues, "pageInfo": info(len(issues))}})
    return out

async def app(scope, receive, send):
    if scope["type"] == "http" and scope["path"] in ("/truth", "/count"):
        body = json.dumps(truth() if scope["path"] == "/truth" else requests[0]).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
        return
    if scope["type"] == "http": requests[0] += 1
    await gql(scope, receive, send)

"""# + PythonPeer.servedByUvicorn(app: "app")
}
