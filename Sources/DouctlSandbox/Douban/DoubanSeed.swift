/// The world a fresh sandbox starts with: a few users who follow each other, about ten statuses
/// in Chinese, a couple of comments and likes, so the first `home_timeline` has something in it;
/// and Coding's accounts and tweets (CodingSeed).
enum DoubanSeed {
    static let defaultUserUID = "ahbei"

    static func makeState() -> SandboxState {
        var state = SandboxState()
        let ahbei = state.addUser(uid: "ahbei", name: "阿北", description: "豆瓣的阿北。喜欢读书、看电影、听音乐。",
                                  signature: "生活在别处", locationID: "108288", locationName: "北京",
                                  created: BeijingTime.epoch(2005, 3, 6, 21, 12, 47))
        let linglu = state.addUser(uid: "linglu", name: "林露", description: "在上海写代码，周末去看展。",
                                   signature: "慢慢来", locationID: "108296", locationName: "上海",
                                   created: BeijingTime.epoch(2008, 7, 19, 10, 4, 33))
        let chenmo = state.addUser(uid: "chenmo", name: "陈默", description: "摄影爱好者，胶片党。",
                                   signature: "光影之间", locationID: "118281", locationName: "广州",
                                   created: BeijingTime.epoch(2010, 11, 2, 18, 45, 12))
        let xiaomei = state.addUser(uid: "sunxiaomei", name: "孙小美", description: "喜欢喝茶，读诗。",
                                    signature: "一期一会", locationID: "118172", locationName: "杭州",
                                    created: BeijingTime.epoch(2012, 4, 23, 8, 30, 0))
        let dali = state.addUser(uid: "wangdali", name: "王大力", description: "跑步、火锅与科幻小说。",
                                 signature: "再跑一公里", locationID: "118318", locationName: "成都",
                                 created: BeijingTime.epoch(2014, 9, 9, 22, 15, 51))

        let base = BeijingTime.epoch(2025, 5, 20, 8, 0, 0)
        func at(_ step: Int) -> Double { base + Double(step) * 3 * 3600 + Double(step * 17 % 60) * 60 }

        for (index, (follower, followee)) in [(ahbei, linglu), (ahbei, chenmo), (linglu, ahbei), (linglu, xiaomei),
                                              (chenmo, ahbei), (chenmo, dali), (xiaomei, ahbei), (xiaomei, linglu),
                                              (dali, chenmo)].enumerated() {
            state.follow(follower.id, followee.id, at: base - Double(100 - index) * 86_400)
        }

        func post(_ user: UserRecord, _ text: String, _ step: Int, kind: StatusRecord.Kind = .text,
                  recommendation: Recommendation? = nil, reshared: Int64? = nil) -> Int64 {
            let id = state.newStatusID()
            state.insert(StatusRecord(id: id, userID: user.id, text: text, created: at(step), kind: kind,
                                      recommendation: recommendation, pictureID: nil, resharedID: reshared,
                                      source: "豆瓣"))
            return id
        }
        let welcome = post(ahbei, "欢迎来到豆瓣广播沙盒！这里的数据都是假的，接口却是真的。", 0)
        let bund = post(linglu, "今天在外滩散步，风很大，心情很好。", 1)
        _ = post(chenmo, "推荐一个清单", 2, kind: .rec,
                 recommendation: Recommendation(title: "豆瓣电影 Top 250", url: "https://movie.douban.com/top250",
                                                description: "值得一看再看的电影清单", image: ""))
        let poem = post(xiaomei, "读完了《人间词话》：“昨夜西风凋碧树，独上高楼，望尽天涯路。” #读书#", 3)
        _ = post(dali, "早上跑了十公里，奖励自己一顿火锅。", 4)
        let cli = post(ahbei, "有人在用命令行刷广播吗？ #douctl#", 5)
        _ = post(linglu, "", 6, kind: .reshare, reshared: poem)
        _ = post(chenmo, "广州下雨了，适合在家修照片。", 7)
        _ = post(xiaomei, "新买的龙井，清香扑鼻。", 8)
        _ = post(ahbei, "周末去看了一场话剧，演员们太棒了。", 9)

        func comment(_ statusID: Int64, _ user: UserRecord, _ text: String, _ step: Int) {
            let id = state.nextCommentID
            state.nextCommentID += 1
            state.comments[id] = CommentRecord(id: id, statusID: statusID, userID: user.id, text: text,
                                               created: at(step) + 600, source: "豆瓣")
            state.commentsByStatus[statusID, default: []].append(id)
        }
        comment(cli, linglu, "我在用，很顺手！", 5)
        comment(cli, chenmo, "求教程 🙏", 6)
        comment(bund, ahbei, "外滩的风确实大。", 1)

        for (statusID, user, step) in [(welcome, linglu, 0), (welcome, chenmo, 1), (cli, xiaomei, 6), (bund, ahbei, 2)] {
            state.likes[statusID, default: []].append((user.id, at(step) + 1200))
        }
        state.coding = CodingSeed.makeState()
        state.generation = 0
        return state
    }
}
