import DouctlArguments
import Testing

/// `CommandSpec.discussion` is made when read (`LazyText`): start-up builds the whole tree,
/// and some discussions list every profile key or preset (issue 23).
@Suite("Lazy discussions")
struct LazyTextTests {
    @Test func aDiscussionIsMadeOnlyWhenRead() {
        let counter = Counter()
        let spec = CommandSpec("x", abstract: "a", discussion: counter.next())
        #expect(counter.value == 0, "building a spec formats nothing")
        #expect(spec.discussion == "1")
        var changed = spec
        changed.discussion = "set"
        #expect(changed.discussion == "set")
        #expect(spec != changed)
    }
}

private final class Counter: @unchecked Sendable {
    private(set) var value = 0
    func next() -> String {
        value += 1
        return String(value)
    }
}
