/// Douban's half of the state: users and who follows whom, statuses, likes and reshares.
extension SandboxState {
    // MARK: Users

    func user(_ id: Int64) -> UserRecord? { users[id] }

    /// A numeric id or a uid (`1000001` or `ahbei`).
    func user(named name: String) -> UserRecord? {
        if let id = Int64(name), let user = users[id] { return user }
        return userIDsByUID[name].flatMap { users[$0] }
    }

    @discardableResult
    mutating func addUser(uid: String, name: String, description: String = "", signature: String = "",
                          locationID: String = "108288", locationName: String = "北京", created: Double) -> UserRecord {
        let user = UserRecord(id: nextUserID, uid: uid, name: name, description: description, signature: signature,
                              locationID: locationID, locationName: locationName, created: created)
        nextUserID += 1
        insert(user)
        generation += 1
        return user
    }

    mutating func insert(_ user: UserRecord) {
        if users[user.id] == nil { userOrder.append(user.id) }
        users[user.id] = user
        userIDsByUID[user.uid] = user.id
        nextUserID = max(nextUserID, user.id + 1)
    }

    func isFollowing(_ follower: Int64, _ followee: Int64) -> Bool {
        follows[follower]?.contains { $0.userID == followee } ?? false
    }

    func followingIDs(of userID: Int64) -> [Int64] {
        (follows[userID] ?? []).map(\.userID)
    }

    /// Followers of `userID`, most recent first.
    func followerIDs(of userID: Int64) -> [Int64] {
        var found: [(Int64, Double)] = []
        for (follower, list) in follows {
            if let entry = list.first(where: { $0.userID == userID }) { found.append((follower, entry.since)) }
        }
        return found.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 > $1.0 }.map(\.0)
    }

    mutating func follow(_ follower: Int64, _ followee: Int64, at time: Double) {
        guard !isFollowing(follower, followee) else { return }
        follows[follower, default: []].append((followee, time))
        generation += 1
    }

    mutating func unfollow(_ follower: Int64, _ followee: Int64) {
        guard isFollowing(follower, followee) else { return }
        follows[follower]?.removeAll { $0.userID == followee }
        generation += 1
    }

    func statusCount(of userID: Int64) -> Int {
        statusCounts[userID] ?? 0
    }

    // MARK: Statuses

    mutating func insert(_ status: StatusRecord) {
        if let previous = statuses[status.id] {
            statusCounts[previous.userID, default: 1] -= 1
        }
        statusCounts[status.userID, default: 0] += 1
        if statuses[status.id] == nil {
            if let last = statusOrder.last, last > status.id {
                let index = statusOrder.firstIndex { $0 > status.id } ?? statusOrder.count
                statusOrder.insert(status.id, at: index)
            } else {
                statusOrder.append(status.id)
            }
        }
        statuses[status.id] = status
        if let original = status.resharedID { reshares[original, default: []].append(status.id) }
        nextStatusID = max(nextStatusID, status.id + 1)
        generation += 1
    }

    mutating func newStatusID() -> Int64 {
        defer { nextStatusID += 1 }
        return nextStatusID
    }

    /// Removes a status with its comments, likes and picture; returns the picture's file name.
    mutating func removeStatus(_ id: Int64) -> String? {
        guard let status = statuses.removeValue(forKey: id) else { return nil }
        statusCounts[status.userID, default: 1] -= 1
        if let index = binarySearch(statusOrder, id) { statusOrder.remove(at: index) }
        for commentID in commentsByStatus.removeValue(forKey: id) ?? [] { comments[commentID] = nil }
        likes[id] = nil
        if let original = status.resharedID { reshares[original]?.removeAll { $0 == id } }
        generation += 1
        if let pictureID = status.pictureID, let picture = pictures.removeValue(forKey: pictureID) {
            return picture.fileName
        }
        return nil
    }

    func isLiked(_ statusID: Int64, by userID: Int64) -> Bool {
        likes[statusID]?.contains { $0.userID == userID } ?? false
    }

    /// Statuses by `authors` (all when nil), newest first, with Douban's paging rules:
    /// `since_id` strictly newer, `until_id` inclusive, then `start` skipped and `count` taken.
    func timeline(authors: Set<Int64>?, sinceID: Int64?, untilID: Int64?, start: Int, count: Int) -> [StatusRecord] {
        var result: [StatusRecord] = []
        var skipped = 0
        var index = statusOrder.count - 1
        if let untilID {
            // The last position whose id is ≤ untilID.
            var low = 0
            var high = statusOrder.count
            while low < high {
                let middle = (low + high) / 2
                if statusOrder[middle] <= untilID { low = middle + 1 } else { high = middle }
            }
            index = low - 1
        }
        while index >= 0 && result.count < count {
            let id = statusOrder[index]
            index -= 1
            if let sinceID, id <= sinceID { break }
            guard let status = statuses[id] else { continue }
            if let authors, !authors.contains(status.userID) { continue }
            if skipped < start {
                skipped += 1
                continue
            }
            result.append(status)
        }
        return result
    }
}
