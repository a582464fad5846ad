/// A misbehaviour the sandbox injects so clients' retry, timeout and resume logic can be tested.
/// Faults apply to every endpoint except the HTML consent and device-verification pages.
public struct SandboxFault: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Answer with `status` (429, 500, 502, 503 or 504) with this probability, before the
        /// request is acted on. 429 and 503 carry `Retry-After: 1`.
        case status(Int, probability: Double)
        /// Delay every reply by this many seconds.
        case latency(Double)
        /// With this probability, act on the request, send the reply's head and part of its
        /// body, then reset the connection.
        case reset(probability: Double)
        /// With this probability, act on the request, then send a well-framed reply whose body
        /// is only the first half of the real one (JSON cut off mid-value).
        case truncate(probability: Double)
        /// Send every reply body in small pieces with this pause (seconds) between them.
        case slowBody(pause: Double)
        /// Answer the first N polls of each device code with `slow_down`.
        case slowDown(polls: Int)
    }

    public var kind: Kind

    public init(_ kind: Kind) {
        self.kind = kind
    }

    public static let statusCodes: Set<Int> = [429, 500, 502, 503, 504]

    /// The syntax of `--fault`, for `douctl sandbox --help`.
    public static let faultHelp = """
        --fault SPEC injects failures; SPEC is a comma-separated list of:
          CODE[:P]          answer HTTP CODE (429, 500, 502, 503 or 504) with probability P
                            (0 to 1, default 1) before acting on the request; 429 and 503
                            carry Retry-After: 1; 429 and 500 have a Douban JSON body (codes
                            111 and 999), 502-504 a proxy's HTML page
          latency:DURATION  delay every reply, e.g. latency:200ms or latency:1.5s
          reset[:P]         with probability P (default 1), act on the request, then send the
                            reply head and part of its body and reset the connection
          truncate[:P]      with probability P (default 1), act on the request, then send a
                            complete reply (matching Content-Length) whose body is only the
                            first half of the real one: truncated JSON
          slow-body[:DURATION]
                            send reply bodies in small pieces, pausing DURATION between
                            them (default 50ms)
          slow-down[:N]     answer the first N polls (default 1) of each device code with
                            the RFC 8628 error slow_down
        Faults never apply to the HTML consent and device-verification pages.
        Example: --fault 503:0.2,latency:200ms,reset:0.05,slow-body,slow-down:1
        """

    /// Parses `503:0.2,latency:200ms,reset:0.05,slow-body,slow-down:1`.
    public static func parseList(_ spec: String) throws -> [SandboxFault] {
        var faults: [SandboxFault] = []
        for piece in spec.split(separator: ",", omittingEmptySubsequences: false) {
            let item = piece.trimmingSpaces()
            if item.isEmpty {
                throw SandboxError("invalid --fault '\(spec)': empty item (items are separated by single commas)")
            }
            faults.append(try parse(item))
        }
        return faults
    }

    /// Parses one item, e.g. `503:0.2` or `latency:200ms`.
    public static func parse(_ item: String) throws -> SandboxFault {
        let parts = item.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let name = parts[0].lowercased()
        let argument = parts.count > 1 ? parts[1] : nil
        func fail(_ reason: String) -> SandboxError {
            SandboxError("invalid --fault item '\(item)': \(reason); expected CODE[:P], latency:DURATION, reset[:P], truncate[:P], slow-body[:DURATION] or slow-down[:N]")
        }
        func probability() throws -> Double {
            guard let argument else { return 1 }
            guard let value = Double(argument), value.isFinite, (0...1).contains(value) else {
                throw fail("the probability must be a number from 0 to 1")
            }
            return value
        }
        func duration(default fallback: Double?) throws -> Double {
            guard let argument else {
                if let fallback { return fallback }
                throw fail("a duration is required, such as 200ms or 2s")
            }
            guard let seconds = parseDuration(argument) else {
                throw fail("'\(argument)' is not a duration such as 200ms or 2s")
            }
            return seconds
        }
        if let code = Int(name) {
            guard statusCodes.contains(code) else {
                throw fail("status \(code) is not one of 429, 500, 502, 503, 504")
            }
            return SandboxFault(.status(code, probability: try probability()))
        }
        switch name {
        case "latency":
            return SandboxFault(.latency(try duration(default: nil)))
        case "reset":
            return SandboxFault(.reset(probability: try probability()))
        case "truncate":
            return SandboxFault(.truncate(probability: try probability()))
        case "slow-body":
            return SandboxFault(.slowBody(pause: try duration(default: 0.05)))
        case "slow-down":
            guard let argument else { return SandboxFault(.slowDown(polls: 1)) }
            guard let count = Int(argument), count >= 0 else { throw fail("N must be a whole number ≥ 0") }
            return SandboxFault(.slowDown(polls: count))
        default:
            throw fail("unknown fault '\(parts[0])'")
        }
    }

    /// `200ms`, `2s`, `1.5s`; a bare number means milliseconds.
    static func parseDuration(_ text: String) -> Double? {
        let lowered = text.lowercased()
        let (number, scale): (Substring, Double)
        if lowered.hasSuffix("ms") {
            (number, scale) = (lowered.dropLast(2), 0.001)
        } else if lowered.hasSuffix("s") {
            (number, scale) = (lowered.dropLast(), 1)
        } else {
            (number, scale) = (Substring(lowered), 0.001)
        }
        guard let value = Double(number), value.isFinite, value >= 0 else { return nil }
        return value * scale
    }

    /// The item as `parse` reads it back.
    public var description: String {
        switch kind {
        case .status(let code, let probability): return "\(code):\(probability)"
        case .latency(let seconds): return "latency:\((seconds * 1000).jsonNumberText)ms"
        case .reset(let probability): return "reset:\(probability)"
        case .truncate(let probability): return "truncate:\(probability)"
        case .slowBody(let pause): return "slow-body:\((pause * 1000).jsonNumberText)ms"
        case .slowDown(let polls): return "slow-down:\(polls)"
        }
    }
}
