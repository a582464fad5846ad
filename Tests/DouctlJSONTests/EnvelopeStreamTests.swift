import DouctlJSON
import Testing

/// The envelope unwrapper against the whole-reply path (parse, take `data`, print): wherever
/// the chunks split an envelope, the data it streams is the bytes the held path prints.
@Suite("Envelope stream")
struct EnvelopeStreamTests {
    static let codeKeys = ["code", "errcode", "errCode", "errorno"]
    static let dataKeys = ["data", "ret"]
    static let rule = EnvelopeStreamUnwrapper.Rule(
        codeKeys: codeKeys, dataKeys: dataKeys, memberLimit: 64 << 10,
        mayBeginEnvelope: { (codeKeys + dataKeys + ["msg", "errmsg", "errMsg", "errormsg", "Response"]).contains($0) },
        isSuccess: { $0 == "0" || $0 == "200" })

    struct Outcome {
        var decision: EnvelopeStreamUnwrapper.Decision
        var output: [UInt8]
        var failure: EnvelopeStreamUnwrapper.Failure?
        var code: String?
        var remainder: [UInt8]
        var dataBeforeCode: Bool
    }

    /// Feeds `body` cut at `cuts` (offsets), then finishes.
    static func unwrap(_ body: [UInt8], cuts: [Int], format: JSONFormat = .compact, output: EnvelopeStreamUnwrapper.Output? = nil) -> Outcome {
        var printed: [UInt8] = []
        let unwrapper = EnvelopeStreamUnwrapper(rule: rule, output: output ?? .reformat(format)) { printed.append(contentsOf: $0) }
        var failure: EnvelopeStreamUnwrapper.Failure?
        body.withUnsafeBytes { raw in
            var start = 0
            do throws(EnvelopeStreamUnwrapper.Failure) {
                for cut in cuts.sorted() + [raw.count] where cut >= start && cut <= raw.count {
                    try unwrapper.feed(UnsafeRawBufferPointer(rebasing: raw[start..<cut]))
                    start = cut
                }
                try unwrapper.finish()
            } catch {
                failure = error
            }
        }
        return Outcome(decision: unwrapper.decision, output: printed, failure: failure, code: unwrapper.code,
                       remainder: unwrapper.remainder, dataBeforeCode: unwrapper.dataBeforeCode)
    }

    static func unwrap(_ text: String, chunkSize: Int, format: JSONFormat = .compact) -> Outcome {
        let body = bytes(text)
        return unwrap(body, cuts: Array(stride(from: chunkSize, to: body.count, by: chunkSize)), format: format)
    }

    /// What the held path prints for a successful envelope: the parsed `data` (else `ret`), serialized.
    static func heldOutput(_ body: [UInt8], format: JSONFormat) -> [UInt8]? {
        guard case .success(let json) = parseResult(body), case .object(let object) = json else { return nil }
        for key in dataKeys {
            if let data = object[key], !data.isNull { return data.serialized(format) }
        }
        return nil
    }

    // MARK: - chunk boundaries

    @Test func everySplitOfAnEnvelopeWithEscapesAndANestedData() {
        let fixture = #"{ "code" : 0 , "msg":"o\"k \\ \u00e9","data":{"data":[1,"a\\\"]b}",{"code":5,"ret":[]}],"x":"\u4e2d\ud83d\ude00","n":-1.5e+3,"t":true,"z":null},"tail":{"data":"not this"}}"#
        let body = bytes(fixture)
        for format in [JSONFormat.compact, .pretty] {
            guard let expected = Self.heldOutput(body, format: format) else {
                Issue.record("fixture does not parse")
                return
            }
            for cut in 0...body.count {
                let outcome = Self.unwrap(body, cuts: [cut], format: format)
                #expect(outcome.failure == nil, "cut at \(cut)")
                #expect(outcome.decision == .streaming(key: "data"), "cut at \(cut)")
                #expect(text(outcome.output) == text(expected), "cut at \(cut)")
                #expect(outcome.code == "0")
            }
        }
    }

    @Test func everyPairOfSplitsOfAScalarAndAStringData() {
        for sample in [#"{"code":0,"data":12345}"#, #"{"code":"0","data":"a\"\\b\u0041"}"#, #"{"errcode":200,"data":true,"msg":null}"#, #"{"code":0,"data":-0.5e-3 }"#] {
            let body = bytes(sample)
            guard let expected = Self.heldOutput(body, format: .compact) else {
                Issue.record("fixture does not parse: \(sample)")
                continue
            }
            for first in 0...body.count {
                for second in first...body.count {
                    let outcome = Self.unwrap(body, cuts: [first, second])
                    #expect(outcome.failure == nil && text(outcome.output) == text(expected), "\(sample) cut at \(first), \(second)")
                }
            }
        }
    }

    @Test func rawOutputPassesTheDataAsReceived() {
        let sample = #"{"code":0,"data": [ 1 ,"a\"]" , {"b" : 2} ] ,"msg":"ok"}"#
        for size in 1...8 {
            let body = bytes(sample)
            let outcome = Self.unwrap(body, cuts: Array(stride(from: size, to: body.count, by: size)), output: .raw)
            #expect(text(outcome.output) == #"[ 1 ,"a\"]" , {"b" : 2} ]"#)
        }
    }

    // MARK: - the order rule and errors

    @Test func dataBeforeCodeIsHeld() {
        for sample in [#"{"data":[1,2],"code":0}"#, #"{"msg":"ok","data":[1],"code":0}"#, #"{"ret":{"a":1},"errcode":0}"#] {
            let outcome = Self.unwrap(sample, chunkSize: 3)
            #expect(outcome.decision == .holding, "\(sample)")
            #expect(outcome.dataBeforeCode, "\(sample)")
            #expect(outcome.output.isEmpty, "\(sample)")
            #expect(outcome.failure == nil, "\(sample)")
        }
    }

    @Test func anErrorStatusBeforeTheDataIsFailing() {
        let outcome = Self.unwrap(#"{"code":1018,"msg":"captcha required","data":[1,2,3]}"#, chunkSize: 5)
        #expect(outcome.decision == .failing)
        #expect(outcome.output.isEmpty)
        #expect(outcome.code == "1018")
        #expect(text(outcome.remainder) == #"{"code":1018,"msg":"captcha required","data":[1,2,3]}"#)
    }

    @Test func aLaterErrorStatusIsInTheRemainder() {
        let outcome = Self.unwrap(#"{"code":0,"data":[1,{"code":7}],"code":5,"msg":"late"}"#, chunkSize: 4)
        #expect(outcome.decision == .streaming(key: "data"))
        #expect(text(outcome.output) == #"[1,{"code":7}]"#)
        // The caller decodes the remainder (V as null) the way it decodes a whole reply.
        #expect(outcome.code == "5")
        #expect(text(outcome.remainder) == #"{"code":0,"data":null,"code":5,"msg":"late"}"#)
    }

    @Test func aNullDataLetsRetStream() {
        let outcome = Self.unwrap(#"{"code":0,"data":null,"ret":[1]}"#, chunkSize: 2)
        #expect(outcome.decision == .streaming(key: "ret"))
        #expect(text(outcome.output) == "[1]")
        #expect(outcome.failure == nil)
    }

    @Test func aMemberThatWouldReplaceThePrintedDataIsAnError() {
        for sample in [#"{"code":0,"data":[1],"data":[2]}"#, #"{"code":0,"data":[1],"data":null}"#, #"{"code":0,"ret":[1],"data":{}}"#] {
            let outcome = Self.unwrap(sample, chunkSize: 7)
            guard case .ambiguous? = outcome.failure else {
                Issue.record("\(sample): \(String(describing: outcome.failure))")
                continue
            }
        }
        // A lower-preference name after the data, or a null preferred one, replaces nothing.
        #expect(Self.unwrap(#"{"code":0,"data":[1],"ret":[2]}"#, chunkSize: 7).failure == nil)
        #expect(Self.unwrap(#"{"code":0,"ret":[1],"data":null}"#, chunkSize: 7).failure == nil)
    }

    @Test func anObjectThatDoesNotBeginLikeAnEnvelopeIsNotUnwrapped() {
        let outcome = Self.unwrap(#"{"id":1,"code":0,"data":[1]}"#, chunkSize: 3)
        #expect(outcome.decision == .holding)
        #expect(!outcome.dataBeforeCode)
        #expect(outcome.output.isEmpty)
    }

    @Test func membersBeyondTheBoundBeforeTheDataAreHeld() {
        let big = String(repeating: "x", count: 70 << 10)
        let outcome = Self.unwrap(#"{"code":0,"msg":"\#(big)","data":[1]}"#, chunkSize: 4096)
        #expect(outcome.decision == .holding)
        #expect(outcome.output.isEmpty)
        #expect(outcome.remainder.count < 64 << 10)
    }

    @Test func aLargeMemberAfterTheDataIsDroppedFromTheRemainder() {
        let big = String(repeating: "y", count: 70 << 10)
        let outcome = Self.unwrap(#"{"code":0,"data":[1],"extra":"\#(big)","msg":"ok"}"#, chunkSize: 4096)
        #expect(outcome.failure == nil)
        #expect(text(outcome.output) == "[1]")
        #expect(text(outcome.remainder) == #"{"code":0,"data":null,"msg":"ok"}"#)
    }

    @Test func malformedAndTruncatedRepliesAreErrors() {
        let bad = [
            #"{"code":0,"data":[1,]}"#, #"{"code":0,"data":[1]"#, #"{"code":0,"data":[1]} x"#, #"{"code":0,"data":[1],}"#,
            #"{"code":0,"data":"abc"#, #"{"code":0,"data":[1] "msg":"x"}"#, #"{"code":0 "data":[1]}"#, #"{"code":0,"data":tru}"#,
            #"{"code":0,"data":[1],"msg":[}"#, #"{"code":0,"data":{"a":1]}"#,
        ]
        for sample in bad {
            for size in [1, 3, 64] {
                let outcome = Self.unwrap(sample, chunkSize: size)
                #expect(outcome.failure != nil, "\(sample) in chunks of \(size)")
            }
        }
    }

    // MARK: - property: random envelopes, random chunkings

    @Test func randomEnvelopesAtRandomSplitsPrintWhatTheHeldPathPrints() {
        var generator = DocumentGenerator(seed: 23)
        generator.maximumDepth = 5
        var checked = 0
        for round in 0..<600 {
            var body: [UInt8] = []
            var value: [UInt8] = []
            repeat {
                value = []
                generator.value(&value, depth: 0)
            } while value == bytes("null")
            let dataKey = generator.pick(["data", "ret"])
            let codeKey = generator.pick(Self.codeKeys)
            var members: [[UInt8]] = []
            if generator.chance(30) { members.append(bytes("\"msg\":\"ok\"")) }
            members.append(bytes("\"\(codeKey)\":\(generator.pick(["0", "200", "\"0\"", "\"200\""]))"))
            if generator.chance(40) { members.append(bytes("\"request\":\"GET /x\"")) }
            members.append(bytes("\"\(dataKey)\":") + value)
            if generator.chance(40) {
                var extra: [UInt8] = []
                generator.value(&extra, depth: 2)
                members.append(bytes("\"extra\":") + extra)
            }
            if generator.chance(30) { members.append(bytes("\"msg\":\"done\"")) }
            body = bytes(generator.pick(["", " ", "\n"])) + bytes("{")
            for (index, member) in members.enumerated() {
                if index > 0 { body += bytes(generator.pick([",", " , ", ",\n"])) }
                body += member
            }
            body += bytes(generator.pick(["}", " }", "}\n"]))
            guard members.first.map({ text($0).hasPrefix("\"msg\"") || text($0).hasPrefix("\"\(codeKey)\"") }) == true else { continue }

            let cuts = (0..<generator.int(0...6)).map { _ in generator.int(0...body.count) }
            for format in [JSONFormat.compact, .pretty] {
                let expected = Self.heldOutput(body, format: format)
                let outcome = Self.unwrap(body, cuts: cuts, format: format)
                #expect(outcome.failure == nil, "round \(round): \(text(body).debugDescription)")
                #expect(outcome.decision == .streaming(key: dataKey), "round \(round): \(text(body).debugDescription)")
                #expect(expected.map(text) == text(outcome.output), "round \(round) cut at \(cuts): \(text(body).debugDescription)")
                #expect(outcome.code.map { $0 == "0" || $0 == "200" } == true)
                // The remainder parses, and names the data as null.
                if case .success(.object(let object)) = parseResult(outcome.remainder) {
                    #expect(object[dataKey] == .null)
                } else {
                    Issue.record("round \(round): remainder \(text(outcome.remainder).debugDescription)")
                }
            }
            checked += 1
        }
        #expect(checked == 600)
    }

    @Test func aLargeDataStreamsWithoutBeingKept() {
        // 8 MiB of data in 64 KiB chunks: nothing of it stays in the unwrapper.
        var printed = 0
        let unwrapper = EnvelopeStreamUnwrapper(rule: Self.rule, output: .reformat(.compact)) { printed += $0.count }
        let element = bytes(#"{"id":123456,"title":"\u4e2d \"x\"","tags":["a","b"]},"#)
        var chunk: [UInt8] = []
        while chunk.count < 64 << 10 { chunk += element }
        func feed(_ part: [UInt8]) -> Bool {
            part.withUnsafeBytes { raw in
                do throws(EnvelopeStreamUnwrapper.Failure) { try unwrapper.feed(raw) } catch { return false }
                return true
            }
        }
        var failed = !feed(bytes(#"{"code":0,"data":["#))
        for _ in 0..<128 where !failed { failed = !feed(chunk) }
        failed = failed || !feed(bytes(#"0],"msg":"ok"}"#)) || (try? unwrapper.finish()) == nil
        #expect(!failed)
        #expect(printed > 7 << 20)
        #expect(unwrapper.remainder.count < 64)
    }
}
