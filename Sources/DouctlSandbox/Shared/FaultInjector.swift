import DouctlSystem

/// Decides, request by request, which faults fire.
final class FaultInjector: Sendable {
    let faults: [SandboxFault]
    private let generator: LockedValue<SplitMix64?>

    init(faults: [SandboxFault], seed: UInt64?) {
        self.faults = faults
        generator = LockedValue(seed.map { SplitMix64(seed: $0) })
    }

    /// A uniform draw in [0, 1).
    private func draw() -> Double {
        generator.withLock { seeded -> Double in
            let bits: UInt64
            if var generator = seeded {
                bits = generator.next()
                seeded = generator
            } else {
                var system = SystemRandomNumberGenerator()
                bits = system.next()
            }
            return Double(bits >> 11) * 0x1.0p-53
        }
    }

    private func fires(_ probability: Double) -> Bool {
        probability > 0 && draw() < probability
    }

    /// The status fault that fires for this request, if any (checked in the order given).
    func statusFault() -> Int? {
        for fault in faults {
            if case .status(let code, let probability) = fault.kind, fires(probability) { return code }
        }
        return nil
    }

    func resetFires() -> Bool {
        for fault in faults {
            if case .reset(let probability) = fault.kind, fires(probability) { return true }
        }
        return false
    }

    func truncateFires() -> Bool {
        for fault in faults {
            if case .truncate(let probability) = fault.kind, fires(probability) { return true }
        }
        return false
    }

    var latency: Double {
        faults.reduce(0) { total, fault in
            if case .latency(let seconds) = fault.kind { return total + seconds }
            return total
        }
    }

    var slowBodyPause: Double? {
        for fault in faults {
            if case .slowBody(let pause) = fault.kind { return pause }
        }
        return nil
    }

    var slowDownPolls: Int {
        faults.reduce(0) { total, fault in
            if case .slowDown(let polls) = fault.kind { return max(total, polls) }
            return total
        }
    }
}
