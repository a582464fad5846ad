/// A failure a test reports by throwing, with the reason in words: a reply that cannot be
/// read, a file that cannot be made. Shared by every test target.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
