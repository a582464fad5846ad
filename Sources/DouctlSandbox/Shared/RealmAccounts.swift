/// Who signs in on each side: the accounts a consent or verification page offers, and the one
/// an automatic approval (`--approve auto`) picks, ahbei on Douban and coder on Coding.
extension APIRealm {
    /// The uid (Douban) or global_key (Coding) of the default login.
    var defaultUID: String {
        self == .coding ? CodingSeed.defaultUserKey : DoubanSeed.defaultUserUID
    }

    /// The default login's user id.
    func defaultUserID(in state: SandboxState) -> Int64 {
        switch self {
        case .douban: return state.user(named: DoubanSeed.defaultUserUID)?.id ?? state.userOrder.first ?? 1_000_001
        case .coding: return state.coding.user(named: CodingSeed.defaultUserKey)?.id ?? state.coding.userOrder.first ?? 9001
        }
    }

    /// The accounts a consent or verification page offers: (uid or global_key, name).
    func accounts(in state: SandboxState) -> [(uid: String, name: String)] {
        switch self {
        case .douban: return state.userOrder.compactMap { state.users[$0] }.map { (uid: $0.uid, name: $0.name) }
        case .coding: return state.coding.userOrder.compactMap { state.coding.users[$0] }.map { (uid: $0.globalKey, name: $0.name) }
        }
    }

    /// A user id from a uid (Douban) or global_key (Coding).
    func userID(named name: String, in state: SandboxState) -> Int64? {
        switch self {
        case .douban: return state.user(named: name)?.id
        case .coding: return state.coding.user(named: name)?.id
        }
    }
}
