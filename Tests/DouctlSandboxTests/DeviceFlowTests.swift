import DouctlJSON
import DouctlSandbox
import Testing

@Suite struct DeviceFlowTests {
    @Test func deviceAuthorizationReply() throws {
        let harness = try Harness { $0.deviceCodeLifetime = 900; $0.deviceInterval = 5 }
        defer { harness.stop() }
        let json = try harness.startDevice()
        let userCode = try #require(json["user_code"]?.stringValue)
        let letters = Set("BCDFGHJKLMNPQRSTVWXZ")
        #expect(userCode.count == 9)
        #expect(Array(userCode)[4] == "-")
        #expect(userCode.filter { $0 != "-" }.allSatisfy { letters.contains($0) }, "\(userCode)")
        #expect((json["device_code"]?.stringValue?.count ?? 0) >= 32)
        #expect(json["verification_uri"] == .string(harness.base + "/service/auth2/device/verify"))
        #expect(json["verification_uri_complete"] == .string(harness.base + "/service/auth2/device/verify?user_code=" + userCode))
        #expect(json["expires_in"] == .number("900"))
        #expect(json["interval"] == .number("5"))
    }

    @Test func pendingUntilApprovedThenTokensThenSpent() throws {
        let harness = try Harness { $0.approval = .manual; $0.deviceInterval = 0 }
        defer { harness.stop() }
        let device = try harness.startDevice()
        let deviceCode = try #require(device["device_code"]?.stringValue)
        let pending = try harness.pollDevice(deviceCode)
        #expect(pending.status == 400)
        #expect(pending.oauthError == "authorization_pending")
        #expect(harness.sandbox.approveDevice(userCode: try #require(device["user_code"]?.stringValue)))
        let granted = try harness.pollDevice(deviceCode)
        #expect(granted.status == 200)
        let json = try granted.json()
        #expect(isHex32(json["access_token"]) && isHex32(json["refresh_token"]))
        #expect(json["douban_user_id"] == .string("1000001"))
        #expect(try harness.get("/shuo/v2/statuses/home_timeline", token: json["access_token"]?.stringValue).status == 200)
        let spent = try harness.pollDevice(deviceCode)
        #expect(spent.oauthError == "invalid_grant")
        #expect(!harness.sandbox.approveDevice(userCode: "BBBB-CCCC"))
    }

    @Test func autoApprovalGrantsOnTheFirstPoll() throws {
        let harness = try Harness { $0.approval = .auto }
        defer { harness.stop() }
        let device = try harness.startDevice()
        let granted = try harness.pollDevice(try #require(device["device_code"]?.stringValue))
        #expect(granted.status == 200)
        #expect(isHex32(try granted.json()["access_token"]))
    }

    @Test func slowDownFaultAnswersTheFirstPolls() throws {
        let harness = try Harness {
            $0.approval = .auto
            $0.deviceInterval = 0
            $0.faults = try! SandboxFault.parseList("slow-down:2")
        }
        defer { harness.stop() }
        let deviceCode = try #require(try harness.startDevice()["device_code"]?.stringValue)
        let first = try harness.pollDevice(deviceCode)
        #expect(first.status == 400)
        #expect(first.oauthError == "slow_down")
        #expect(try harness.pollDevice(deviceCode).oauthError == "slow_down")
        #expect(try harness.pollDevice(deviceCode).status == 200)
    }

    @Test func pollingFasterThanTheIntervalGivesSlowDown() throws {
        let harness = try Harness { $0.approval = .manual; $0.deviceInterval = 5 }
        defer { harness.stop() }
        let deviceCode = try #require(try harness.startDevice()["device_code"]?.stringValue)
        #expect(try harness.pollDevice(deviceCode).oauthError == "authorization_pending")
        let tooSoon = try harness.pollDevice(deviceCode)
        #expect(tooSoon.status == 400)
        #expect(tooSoon.oauthError == "slow_down")
    }

    @Test func expiredDeviceCode() throws {
        let clock = VirtualClock()
        let harness = try Harness { $0.approval = .manual; $0.deviceCodeLifetime = 0.3; $0.deviceInterval = 0; $0.clock = SandboxClock(now: clock.read) }
        defer { harness.stop() }
        let device = try harness.startDevice()
        clock.advance(0.5)
        let expired = try harness.pollDevice(try #require(device["device_code"]?.stringValue))
        #expect(expired.status == 400)
        #expect(expired.oauthError == "expired_token")
        #expect(!harness.sandbox.approveDevice(userCode: try #require(device["user_code"]?.stringValue)))
    }

    @Test func deniedDeviceCode() throws {
        let harness = try Harness { $0.approval = .manual; $0.deviceInterval = 0 }
        defer { harness.stop() }
        let device = try harness.startDevice()
        #expect(harness.sandbox.denyDevice(userCode: try #require(device["user_code"]?.stringValue)))
        let denied = try harness.pollDevice(try #require(device["device_code"]?.stringValue))
        #expect(denied.status == 400)
        #expect(denied.oauthError == "access_denied")
    }

    @Test func verificationPageApprovesAsTheChosenUser() throws {
        let harness = try Harness { $0.approval = .manual; $0.deviceInterval = 0 }
        defer { harness.stop() }
        let device = try harness.startDevice()
        let userCode = try #require(device["user_code"]?.stringValue)
        let complete = try #require(device["verification_uri_complete"]?.stringValue)
        let page = try harness.get(try target(of: complete, base: harness.base))
        #expect(page.status == 200)
        #expect(page.text.contains("value=\"\(userCode)\""))
        let typed = userCode.lowercased().replacingAll("-", with: " ")
        let approved = try harness.post("/service/auth2/device/verify",
                                        form: [("user_code", typed), ("user", "chenmo"), ("decision", "approve")])
        #expect(approved.status == 200, "\(approved.text)")
        let granted = try harness.pollDevice(try #require(device["device_code"]?.stringValue))
        #expect(try granted.json()["douban_user_name"] == .string("陈默"))
        let unknown = try harness.post("/service/auth2/device/verify", form: [("user_code", "ZZZZ-ZZZZ"), ("decision", "approve")])
        #expect(unknown.status == 400)
    }

    @Test func deviceEndpointErrors() throws {
        let harness = try Harness()
        defer { harness.stop() }
        #expect(try harness.get("/service/auth2/device").code == 101)
        let noClient = try harness.post("/service/auth2/device", form: [("scope", "shuo_basic_r")])
        #expect(noClient.code == 113)
        #expect(noClient.msg == "required_parameter_is_missing: client_id")
        #expect(try harness.post("/service/auth2/device", form: [("client_id", "x")]).code == 104)
        #expect(try harness.pollDevice("unknown").oauthError == "invalid_grant")
        let noCode = try harness.tokenRequest(Harness.client + [("grant_type", "urn:ietf:params:oauth:grant-type:device_code")])
        #expect(noCode.oauthError == "invalid_request")
    }
}

extension String {
    func replacingAll(_ old: Character, with new: String) -> String {
        var result = ""
        for character in self { if character == old { result += new } else { result.append(character) } }
        return result
    }
}
