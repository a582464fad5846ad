import DouctlJSON
import DouctlSandbox
import Foundation
import Testing

@Suite("douctl user")
struct UserTests {
    @Test func meAndGet() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let me = try fixture.douctl.run("user", "me")
        #expect(me.status == 0, "\(me)")
        #expect(try me.json()["uid"]?.stringValue == "ahbei")
        for id in ["linglu", fixture.sandbox.userID(of: "linglu") ?? "?"] {
            let user = try fixture.douctl.run("user", "get", id)
            #expect(try user.json()["uid"]?.stringValue == "linglu")
        }
        #expect(fixture.sandbox.requests.map(\.path) == ["/v2/user/~me", "/v2/user/linglu", "/v2/user/\(fixture.sandbox.userID(of: "linglu") ?? "?")"])
        let missing = try fixture.douctl.run("user", "get", "nobody-here")
        #expect(missing.status == 5)
    }

    @Test func searchOnePageAndAll() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let page = try fixture.douctl.run("user", "search", "a", "--count", "2")
        #expect(page.status == 0, "\(page)")
        let json = try page.json()
        #expect(json["users"]?.arrayValue?.count == 2)
        #expect(json["count"]?.intValue == 2)
        let total = try #require(json["total"]?.intValue)
        let all = try fixture.douctl.run("user", "search", "a", "--count", "2", "--all")
        let lines = try all.lines()
        #expect(lines.count == total)
        #expect(Set(lines.compactMap { $0["id"]?.stringValue }).count == total)
        let first = try #require(fixture.sandbox.requests.first { $0.path == "/v2/user" })
        #expect(first.query.map { "\($0.name)=\($0.value)" } == ["q=a", "count=2"])
    }

    @Test func followingFollowersFollowUnfollow() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let following = try fixture.douctl.run("user", "following", "ahbei", "--all")
        #expect(following.status == 0, "\(following)")
        let before = try following.lines().compactMap { $0["uid"]?.stringValue }
        let target = try #require(Sandbox.seededUsers.first { $0 != "ahbei" && !before.contains($0) })
        let targetID = try #require(fixture.sandbox.userID(of: target))
        let followed = try fixture.douctl.run("user", "follow", targetID)
        #expect(try followed.json()["following"]?.boolValue == true)
        let create = try #require(fixture.sandbox.requests.last { $0.path == "/shuo/v2/friendships/create" })
        #expect(create.method == "POST")
        #expect(create.form.map { "\($0.name)=\($0.value)" } == ["user_id=\(targetID)"])
        let after = try fixture.douctl.run("user", "following", "ahbei", "--all").lines().compactMap { $0["uid"]?.stringValue }
        #expect(after.contains(target))
        #expect(try fixture.douctl.run("user", "followers", targetID, "--all").lines().contains { $0["uid"]?.stringValue == "ahbei" })
        let unfollowed = try fixture.douctl.run("user", "unfollow", targetID)
        #expect(try unfollowed.json()["following"]?.boolValue == false)
        #expect(fixture.sandbox.requests.last?.path == "/shuo/v2/friendships/destroy")
    }
}
