import DouctlServer
import DouctlSystem

/// The device grant (RFC 8628) for both fakes: a device code and a user code, a verification
/// page where a person approves or denies (or `--approve auto` approves on the first poll), and
/// the polls, with `slow_down` for pollers that do not wait (and for the `slow-down` fault).
struct DeviceGrant: Sendable {
    let state: LockedValue<SandboxState>
    let configuration: SandboxConfiguration
    let faults: FaultInjector
    let baseURL: BaseURL

    /// Issues a device code and user code (RFC 8628 §3.2) for `realm`.
    func start(clientID: String, scopes: [String], realm: APIRealm, verificationPath: String) -> HTTPServerResponse {
        let now = configuration.clock.now()
        let lifetime = configuration.deviceCodeLifetime
        let interval = max(0, configuration.deviceInterval)
        let record: DeviceRecord = state.withLock { state in
            state.pruneTransientRecords(now: now)
            var userCode = Secrets.userCode()
            while state.deviceCodesByUserCode[Secrets.normalizeUserCode(userCode)] != nil { userCode = Secrets.userCode() }
            let record = DeviceRecord(deviceCode: Secrets.hex(byteCount: 20), userCode: userCode, clientID: clientID,
                                      scopes: scopes, expiresAt: now + lifetime, interval: interval, realm: realm)
            state.devices[record.deviceCode] = record
            state.deviceCodesByUserCode[Secrets.normalizeUserCode(userCode)] = record.deviceCode
            return record
        }
        let verificationURI = baseURL.value + verificationPath
        return Reply.json(200, [
            "device_code": .string(record.deviceCode), "user_code": .string(record.userCode),
            "verification_uri": .string(verificationURI),
            "verification_uri_complete": .string(verificationURI + "?user_code=" + URLText.encode(record.userCode)),
            "expires_in": .number(lifetime.jsonNumberText), "interval": .number(interval.jsonNumberText),
        ], headers: Reply.noStore)
    }

    /// One poll of the device grant (RFC 8628 §3.4, §3.5): `issue` makes the tokens once the
    /// code is approved (inside the state lock, so a code is redeemed exactly once).
    func redeem<Issued>(_ parameters: [String: String], clientID: String, realm: APIRealm,
                        issue: (inout SandboxState, _ userID: Int64, _ scopes: [String]) -> Issued)
        -> Result<Issued, StandardOAuthError> {
        guard let deviceCode = parameters["device_code"], !deviceCode.isEmpty else {
            return .failure(StandardOAuthError(error: "invalid_request", description: "device_code is missing"))
        }
        let now = configuration.clock.now()
        let slowDownPolls = faults.slowDownPolls
        let autoApprove = configuration.approval == .auto
        let defaultUser = state.withLock { realm.defaultUserID(in: $0) }
        return state.withLock { state in
            guard var record = state.devices[deviceCode], record.clientID == clientID, record.realm == realm else {
                return .failure(StandardOAuthError(error: "invalid_grant", description: "unknown device_code"))
            }
            defer { state.devices[deviceCode] = record }
            guard record.expiresAt > now else {
                return .failure(StandardOAuthError(error: "expired_token", description: "the device code has expired"))
            }
            switch record.decision {
            case .redeemed:
                return .failure(StandardOAuthError(error: "invalid_grant", description: "the device code has already been used"))
            case .denied:
                return .failure(StandardOAuthError(error: "access_denied", description: "the user denied the request"))
            case .pending, .approved:
                break
            }
            record.polls += 1
            let previous = record.lastPoll
            record.lastPoll = now
            if record.polls <= slowDownPolls {
                return .failure(StandardOAuthError(error: "slow_down", description: "polling too fast (injected fault)"))
            }
            if let previous, now - previous < record.interval - 0.01 {
                record.interval += 5
                return .failure(StandardOAuthError(error: "slow_down",
                                                   description: "poll at most every \(record.interval.jsonNumberText) seconds"))
            }
            var approvedUser: Int64
            switch record.decision {
            case .approved(let userID):
                approvedUser = userID
            default:
                guard autoApprove else {
                    return .failure(StandardOAuthError(error: "authorization_pending", description: nil))
                }
                approvedUser = defaultUser
            }
            record.decision = .redeemed
            record.settledAt = now
            return .success(issue(&state, approvedUser, record.scopes))
        }
    }

    /// Approves or denies a pending device code (of `realm`, or of either when nil) as `uid`
    /// (the realm's default user when nil); false when there is no such pending code or user.
    func decide(userCode: String, approve: Bool, uid: String? = nil, realm: APIRealm? = nil) -> Bool {
        let now = configuration.clock.now()
        return state.withLock { state in
            guard let deviceCode = state.deviceCodesByUserCode[Secrets.normalizeUserCode(userCode)],
                  var record = state.devices[deviceCode], record.expiresAt > now, record.decision == .pending,
                  realm == nil || realm == record.realm else {
                return false
            }
            if approve {
                guard let userID = record.realm.userID(named: uid ?? record.realm.defaultUID, in: state) else {
                    return false
                }
                record.decision = .approved(userID: userID)
            } else {
                record.decision = .denied
                record.settledAt = now
            }
            state.devices[deviceCode] = record
            return true
        }
    }

    /// The verification page (Douban's, or Coding's `/oauth_device.html`): GET shows the
    /// form, POST records the decision.
    func verificationPage(_ exchange: Exchange, realm: APIRealm) throws -> HTTPServerResponse {
        let users: [(uid: String, name: String)] = state.withLock { realm.accounts(in: $0) }
        if exchange.request.method == "GET" {
            return Reply.html(200, Pages.deviceVerify(userCode: exchange.query("user_code") ?? "", users: users,
                                                      defaultUID: realm.defaultUID, notice: nil, realm: realm))
        }
        let userCode = try exchange.field("user_code") ?? ""
        let approve = try exchange.field("decision") == "approve"
        let uid = try exchange.field("user") ?? realm.defaultUID
        guard !userCode.isEmpty else {
            return Reply.html(400, Pages.deviceVerify(userCode: "", users: users, defaultUID: uid,
                                                      notice: "请输入设备上显示的代码。Enter the code shown on your device.", realm: realm))
        }
        guard decide(userCode: userCode, approve: approve, uid: uid, realm: realm) else {
            return Reply.html(400, Pages.deviceVerify(userCode: userCode, users: users, defaultUID: uid,
                                                      notice: "代码无效、已过期或已使用。The code is unknown, expired or already used.",
                                                      realm: realm))
        }
        return Reply.html(200, approve
            ? Pages.message(title: "已授权", message: "The device is signed in as \(uid). You can return to your terminal.", realm: realm)
            : Pages.message(title: "已拒绝", message: "The request was denied. You can close this page.", realm: realm))
    }
}
