/// The Coding world a fresh sandbox starts with: four accounts (one with two-factor login)
/// who follow each other, eight tweets in Chinese, a few comments and likes.
enum CodingSeed {
    static let defaultUserKey = "coder"
    /// Every seeded account's password (the login form sends its SHA-1).
    static let password = "douctl-pass"
    static let users = ["coder", "twofa", "devmei", "opszhang"]

    static func makeState() -> CodingState {
        var state = CodingState()
        let coder = state.addUser(globalKey: "coder", name: "码农小王", email: "coder@example.com", phone: "13800000001",
                                  password: password, slogan: "写代码，也冒泡。", location: "广东 深圳",
                                  created: BeijingTime.epoch(2015, 3, 1, 10, 20, 30))
        let twofa = state.addUser(globalKey: "twofa", name: "安全控老李", email: "twofa@example.com", phone: "13800000002",
                                  password: password, twoFactor: true, slogan: "两步验证，安心一步。", location: "浙江 杭州",
                                  created: BeijingTime.epoch(2016, 8, 12, 14, 5, 0))
        let devmei = state.addUser(globalKey: "devmei", name: "前端小美", email: "devmei@example.com", phone: "13800000003",
                                   password: password, slogan: "CSS 是一门玄学", location: "上海",
                                   created: BeijingTime.epoch(2017, 1, 23, 9, 0, 0))
        let opszhang = state.addUser(globalKey: "opszhang", name: "运维老张", email: "opszhang@example.com", phone: "13800000004",
                                     password: password, slogan: "线上无小事", location: "北京",
                                     created: BeijingTime.epoch(2014, 11, 5, 22, 40, 12))

        let base = BeijingTime.epoch(2025, 6, 1, 9, 0, 0)
        func at(_ step: Int) -> Double { base + Double(step) * 5 * 3600 + Double(step * 13 % 60) * 60 }

        for (index, (follower, followee)) in [(coder, devmei), (coder, opszhang), (devmei, coder), (opszhang, coder),
                                              (twofa, coder), (devmei, opszhang)].enumerated() {
            state.follow(follower.id, followee.id, at: base - Double(60 - index) * 86_400)
        }

        func tweet(_ user: CodingUserRecord, _ content: String, _ step: Int, device: String = "") -> Int64 {
            state.addTweet(ownerID: user.id, content: content, created: at(step), device: device).id
        }
        let welcome = tweet(coder, "欢迎来到 Coding 冒泡沙盒！这里的数据都是假的，接口却是真的。", 0)
        _ = tweet(devmei, "今天把项目的样式全部迁移到了 Grid 布局，舒服。", 1, device: "iPhone")
        let alarm = tweet(opszhang, "凌晨三点的告警，永远是最准时的闹钟。#运维日常#", 2)
        _ = tweet(twofa, "开启了两步验证，账号安全感 +1。", 3)
        let cli = tweet(coder, "有人在用命令行刷冒泡吗？\n\n试试 douctl --profile coding-sandbox shuo timeline", 4)
        _ = tweet(devmei, "周末去西湖边写代码，风景很好，网速一般。", 5, device: "iPad")
        _ = tweet(opszhang, "发布成功，回家睡觉。", 6)
        _ = tweet(coder, "Markdown 链接也可以：[Coding 帮助](https://coding.net/help)", 7)

        func comment(_ tweetID: Int64, _ user: CodingUserRecord, _ content: String, _ step: Int) {
            _ = state.addComment(tweetID: tweetID, ownerID: user.id, content: content, created: at(step) + 600)
        }
        comment(welcome, devmei, "沙盒好评！", 0)
        comment(welcome, opszhang, "已关注 👍", 1)
        comment(cli, devmei, "我在用，很顺手！", 4)
        comment(alarm, coder, "辛苦了，早点休息。", 2)

        for (tweetID, user, step) in [(welcome, devmei, 0), (welcome, opszhang, 1), (welcome, twofa, 2), (cli, devmei, 4),
                                      (alarm, coder, 3)] {
            state.likes[tweetID, default: []].append((user.id, at(step) + 1200))
        }
        return state
    }
}
