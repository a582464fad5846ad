import DouctlJSON
import DouctlSandbox
import Testing

@Suite struct UserEndpointTests {
    @Test func meIsTheTokenOwnersUserInfo() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let reply = try harness.get("/v2/user/~me", token: harness.token())
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json; charset=utf-8")
        let me = try reply.json()
        #expect(me["id"] == .string("1000001"))
        #expect(me["uid"] == .string("ahbei"))
        #expect(me["name"] == .string("阿北"))
        #expect(me["alt"] == .string("http://www.douban.com/people/ahbei/"))
        #expect(me["relation"] == .string("self"))
        #expect(me["created"] == .string("2005-03-06 21:12:47"))
        #expect(me["loc_id"] == .string("108288"))
        #expect(me["loc_name"] == .string("北京"))
        #expect(isString(me["desc"]) && isString(me["avatar"]))
        let other = try harness.get("/v2/user/~me", token: harness.token("linglu")).json()
        #expect(other["uid"] == .string("linglu"))
    }

    @Test func userByUIDOrIdWithRelation() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let byUID = try harness.get("/v2/user/linglu", token: token).json()
        let byID = try harness.get("/v2/user/\(byUID["id"]?.stringValue ?? "")", token: token).json()
        #expect(byUID == byID)
        #expect(byUID["relation"] == .string("friend"))  // they follow each other
        #expect(try harness.get("/v2/user/wangdali", token: token).json()["relation"] == .string("stranger"))
        _ = try harness.post("/shuo/v2/friendships/create", form: [("user_id", "wangdali")], token: token)
        #expect(try harness.get("/v2/user/wangdali", token: token).json()["relation"] == .string("contact"))
        let unknown = try harness.get("/v2/user/nobody_here", token: token)
        #expect(unknown.status == 404)
        #expect(unknown.code == 1001)
    }

    @Test func searchReturnsAnEnvelope() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let all = try harness.get("/v2/user?q=%E7%BE%8E", token: token).json()  // 美 (孙小美; no one's description has it)
        #expect(all["start"] == .number("0"))
        #expect(all["total"] == .number("1"))
        #expect(all["count"] == .number("1"))
        let user = try #require(all["users"]?[0])
        #expect(user["uid"] == .string("sunxiaomei"))
        #expect(user.objectValue?.keys == ["id", "name", "uid", "alt", "avatar"])
        #expect(isString(user["id"]))

        let everyone = try harness.get("/v2/user?q=a", token: token).json()  // ahbei, sunxiaomei, wangdali
        let total = try #require(everyone["total"]?.intValue)
        #expect(total >= 3)
        let paged = try harness.get("/v2/user?q=a&start=1&count=1", token: token).json()
        #expect(paged["start"] == .number("1"))
        #expect(paged["count"] == .number("1"))
        #expect(paged["total"] == .number(String(total)))
        #expect(paged["users"]?[0] == everyone["users"]?[1])
        let missing = try harness.get("/v2/user", token: token)
        #expect(missing.status == 400)
        #expect(missing.code == 113)
        #expect(missing.msg == "required_parameter_is_missing: q")
    }

    @Test func followingAndFollowersAreBareArraysOfShuoUsers() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let following = try harness.get("/shuo/v2/users/ahbei/following", token: token).json()
        let list = try #require(following.arrayValue)
        #expect(Set(list.compactMap { $0["uid"]?.stringValue }) == ["linglu", "chenmo"])
        let user = list[0]
        for key in ["uid", "id", "type", "description", "small_avatar", "large_avatar", "screen_name", "city", "location",
                    "url", "created_at", "icon_avatar"] {
            #expect(isString(user[key]), "\(key)")
        }
        for key in ["following_count", "followers_count", "statuses_count", "new_site_to_vu_count"] {
            #expect(isNumber(user[key]), "\(key)")
        }
        for key in ["blocked", "blocking", "following", "verified", "is_first_visit", "logged_in"] {
            #expect(isBool(user[key]), "\(key)")
        }
        #expect(user["following"] == true)
        #expect(isDoubanTime(user["created_at"]?.stringValue))

        let id = try #require(harness.sandbox.userID(of: "wangdali"))
        let followers = try harness.get("/shuo/v2/users/\(id)/followers?start=0&count=10", token: token).json()
        #expect(followers.arrayValue?.compactMap { $0["uid"]?.stringValue } == ["chenmo"])
        #expect(followers[0]?["following"] == true)  // ahbei follows chenmo
        let paged = try harness.get("/shuo/v2/users/ahbei/followers?start=1&count=1", token: token).json()
        #expect(paged.arrayValue?.count == 1)
        #expect(try harness.get("/shuo/v2/users/nobody/followers", token: token).code == 1001)
    }

    @Test func followAndUnfollow() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let followed = try harness.post("/shuo/v2/friendships/create", form: [("user_id", "wangdali")], token: token)
        #expect(followed.status == 200)
        let json = try followed.json()
        #expect(json["uid"] == .string("wangdali"))
        #expect(json["following"] == true)
        let followers = try harness.get("/shuo/v2/users/wangdali/followers", token: token).json()
        #expect(followers.arrayValue?.contains { $0["uid"] == .string("ahbei") } == true)
        // wangdali's statuses now reach ahbei's home timeline.
        let home = try harness.get("/shuo/v2/statuses/home_timeline?count=200", token: token).json()
        #expect(home.arrayValue?.contains { $0["user"]?["uid"] == .string("wangdali") } == true)

        let id = try #require(harness.sandbox.userID(of: "wangdali"))
        let unfollowed = try harness.post("/shuo/v2/friendships/destroy", form: [("user_id", id)], token: token)
        #expect(unfollowed.status == 200)
        #expect(try unfollowed.json()["following"] == false)
        let after = try harness.get("/shuo/v2/statuses/home_timeline?count=200", token: token).json()
        #expect(after.arrayValue?.contains { $0["user"]?["uid"] == .string("wangdali") } == false)

        let missing = try harness.post("/shuo/v2/friendships/create", form: [], token: token)
        #expect(missing.code == 113)
        #expect(missing.msg == "required_parameter_is_missing: user_id")
        #expect(try harness.post("/shuo/v2/friendships/create", form: [("user_id", "999")], token: token).code == 1001)
    }
}
