#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCommands
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 44.3 in process: the handoff between the receive and the reformat thread, and the
/// pipeline a streamed JSON array goes through, against the synchronous reformatter. No
/// timing: each test waits only for the threads it starts.
@Suite("Reformat pipeline")
struct ReformatPipelineTests {
    /// Bytes that differ from block to block, so a block out of order or lost shows.
    static func pattern(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ ($0 >> 8)) }
    }

    @Test func blocksArriveInOrderEachAsItWasPutAndLargerOnesSplit() throws {
        let handoff = BlockHandoff(blocks: 3, blockSize: 1000)
        let sizes = (0..<300).map { [1, 999, 1000, 1001, 2500, 17][$0 % 6] }
        let chunks = sizes.enumerated().map { Self.pattern($0.element, seed: $0.offset) }
        let received = LockedValue<[[UInt8]]>([])
        let consumer = try JoinableThread {
            while handoff.take({ block in
                received.withLock { $0.append(Array(block)) }
                return true
            }) {}
        }
        for chunk in chunks { #expect(chunk.withUnsafeBytes { handoff.put($0) }) }
        handoff.close()
        consumer.join()
        let blocks = received.value
        // A chunk of at most a block is one block; a larger one is cut into full blocks and the rest.
        let expected = chunks.flatMap { chunk in stride(from: 0, to: chunk.count, by: 1000).map { Array(chunk[$0..<min(chunk.count, $0 + 1000)]) } }
        let same = blocks == expected
        #expect(same, "\(blocks.count) blocks, expected \(expected.count)")
    }

    @Test func aConsumerThatRefusesStopsTheProducer() throws {
        let handoff = BlockHandoff(blocks: 2, blockSize: 64)
        let taken = LockedValue(0)
        let consumer = try JoinableThread {
            while handoff.take({ _ in taken.withLock { $0 += 1; return $0 < 3 } }) {}
        }
        let chunk = Self.pattern(64, seed: 1)
        var accepted = 0
        // The third block is refused: at most the two blocks of the queue more are taken in.
        while chunk.withUnsafeBytes({ handoff.put($0) }) {
            accepted += 1
            #expect(accepted < 100, "the producer was never told")
            if accepted >= 100 { break }
        }
        handoff.close()
        consumer.join()
        #expect(taken.value == 3)
        #expect(accepted >= 3 && accepted <= 5, "\(accepted)")
        #expect(handoff.isRefused)
        #expect(!chunk.withUnsafeBytes { handoff.put($0) })
    }

    @Test func smallAppendsAreGatheredIntoFullBlocks() throws {
        let handoff = BlockHandoff(blocks: 2, blockSize: 4096)
        let received = LockedValue<[[UInt8]]>([])
        let consumer = try JoinableThread {
            while handoff.take({ block in
                received.withLock { $0.append(Array(block)) }
                return true
            }) {}
        }
        var all: [UInt8] = []
        for index in 0..<1000 {
            let piece = Self.pattern(1 + index % 150, seed: index)
            all += piece
            #expect(piece.withUnsafeBytes { handoff.append($0) })
        }
        handoff.close()  // sends the block being filled
        consumer.join()
        let blocks = received.value
        let joined = blocks.flatMap { $0 }
        // Compared as one Bool: a failing comparison of megabytes would be diffed at length.
        let same = joined == all
        #expect(same, "\(joined.count) bytes, expected \(all.count)")
        #expect(blocks.dropLast().allSatisfy { $0.count == 4096 })
        #expect(blocks.last.map { !$0.isEmpty && $0.count <= 4096 } == true)
    }

    /// A document of escapes, CJK text and numbers, as the issue's 1 GiB array has them.
    static func document(items: Int, breakingAt broken: Int? = nil) -> [UInt8] {
        let elements = (0..<items).map { index -> String in
            let element = #"{"id":\#(index * 7919 - 100_000),"url":"https:\/\/img\#(index % 9).doubanio.com\/view\/p\#(index).jpg","t":"豆瓣\u4e2d \#(index)","n":[0,-\#(index),1.5e3,true,null]}"#
            return index == broken ? element.replacingOccurrences(of: "true", with: "tru!") : element
        }
        return Array(("[" + elements.joined(separator: ",") + "]").utf8)
    }

    /// Feeds `input` through a pipeline to a file in chunks of `chunk` bytes, as the
    /// transfer's callback does, and finishes as `StreamingReply` does. Returns what the
    /// file holds and the error, and how many chunks the pipeline took.
    static func throughPipeline(_ input: [UInt8], format: JSONFormat, chunk: Int, into path: String, blocks: Int = 3, blockSize: Int = 16 * 1024)
        throws -> (output: [UInt8], error: JSONParseError?, taken: Int) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        let stdout = OutputStream(fileDescriptor: descriptor, isTerminal: false)
        let pipeline = ReformatPipeline(stdout: stdout, blocks: blocks, blockSize: blockSize)
        let reformatter = JSONStreamReformatter(format: format) { pipeline.write($0) }
        #expect(pipeline.start(reformatter))
        var taken = 0
        input.withUnsafeBytes { raw in
            var start = 0
            while start < raw.count {
                let end = min(raw.count, start + chunk)
                guard pipeline.put(UnsafeRawBufferPointer(rebasing: raw[start..<end])) else { return }
                taken += 1
                start = end
            }
        }
        var failure = pipeline.end()
        if failure == nil {
            do throws(JSONParseError) { try reformatter.finish() } catch { failure = error }
        }
        stdout.flush()
        return (try FileIO.readFile(path), failure, taken)
    }

    /// What the reformatter fed on one thread emits before its error, and the error.
    static func synchronous(_ input: [UInt8], format: JSONFormat, chunk: Int) -> (output: [UInt8], error: JSONParseError?) {
        var output: [UInt8] = []
        let reformatter = JSONStreamReformatter(format: format) { output.append(contentsOf: $0) }
        do throws(JSONParseError) {
            try reformatter.feedAll(input, chunkSize: chunk)
            return (output, nil)
        } catch {
            return (output, error)
        }
    }

    @Test(arguments: [JSONFormat.compact, .pretty])
    func aDocumentThroughThePipelineIsTheOneShots(format: JSONFormat) throws {
        let input = Self.document(items: 20_000)
        #expect(input.count > 2 << 20)
        let path = TemporaryDirectory.make(prefix: "pipeline") + "/out.json"
        let piped = try Self.throughPipeline(input, format: format, chunk: 10_000, into: path)
        #expect(piped.error == nil)
        let expected = try JSONReformatter.reformat(input, format: format)
        let same = piped.output == expected
        #expect(same, "\(piped.output.count) bytes, expected \(expected.count)")
    }

    @Test(arguments: [JSONFormat.compact, .pretty])
    func aMalformedDocumentEndsWithTheSameErrorAndTheSameOutputBeforeIt(format: JSONFormat) throws {
        let input = Self.document(items: 20_000, breakingAt: 15_000)
        let path = TemporaryDirectory.make(prefix: "pipeline") + "/out.json"
        let piped = try Self.throughPipeline(input, format: format, chunk: 10_000, into: path)
        let expected = Self.synchronous(input, format: format, chunk: 10_000)
        let error = try #require(piped.error)
        #expect(error == expected.error)
        #expect(error.message.contains("literal"), "\(error)")
        #expect(!piped.output.isEmpty)
        let same = piped.output == expected.output
        #expect(same, "\(piped.output.count) bytes, expected \(expected.output.count)")
        // The transfer is told: the chunks after the error's are refused (a few blocks may be queued).
        #expect(piped.taken < input.count / 10_000)
    }

    @Test func aWriteThatFailsStopsThePipelineAndNothingMoreIsWritten() throws {
        let input = Self.document(items: 20_000)
        let descriptor = open("/dev/full", O_WRONLY)
        try #require(descriptor >= 0, "/dev/full")
        defer { close(descriptor) }
        let stdout = OutputStream(fileDescriptor: descriptor, isTerminal: false)
        let pipeline = ReformatPipeline(stdout: stdout, blocks: 2, blockSize: 16 * 1024)
        let reformatter = JSONStreamReformatter(format: .compact) { pipeline.write($0) }
        #expect(pipeline.start(reformatter))
        var refused = false
        input.withUnsafeBytes { raw in
            var start = 0
            while start < raw.count {
                let end = min(raw.count, start + 8192)
                guard pipeline.put(UnsafeRawBufferPointer(rebasing: raw[start..<end])) else {
                    refused = true
                    return
                }
                start = end
            }
        }
        #expect(pipeline.end() == nil)
        #expect(refused, "the transfer was never told to stop")
        #expect(stdout.failed)
        #expect(stdout.failure?.errno == ENOSPC)
    }
    /// The pipeline's writer thread writes its blocks unbuffered: a big one grows a pipe to
    /// 1 MiB as a full buffer does (it did not, and the writer and the reader took turns
    /// at every 64 KiB), while a small write leaves the pipe as it was.
    @Test func aBigUnbufferedWriteGrowsThePipeAndASmallOneDoesNot() throws {
        #if os(Linux)
        let getPipeSize: Int32 = 1032  // F_GETPIPE_SZ
        for (size, grows) in [(100, false), (256 * 1024, true)] {
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer { close(ends[0]); close(ends[1]) }
            let before = fcntl(ends[1], getPipeSize)
            let readEnd = ends[0]
            // A reader, so a write bigger than the pipe can finish.
            let reader = try JoinableThread {
                var sink = [UInt8](repeating: 0, count: 64 * 1024)
                var total = 0
                while total < size {
                    let count = sink.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                    if count <= 0 { break }
                    total += count
                }
            }
            let stdout = OutputStream(fileDescriptor: ends[1], isTerminal: false)
            Self.pattern(size, seed: 3).withUnsafeBytes { stdout.writeUnbuffered($0) }
            reader.join()
            let after = fcntl(ends[1], getPipeSize)
            if grows {
                // Where /proc/sys/fs/pipe-max-size allows it (1 MiB by default).
                let limit = (try? FileIO.readFile("/proc/sys/fs/pipe-max-size")).flatMap { Int(String(decoding: $0, as: UTF8.self).filter(\.isNumber)) } ?? 0
                #expect(after == Int32(min(1 << 20, max(limit, Int(before)))), "pipe \(before) -> \(after), limit \(limit)")
            } else {
                #expect(after == before)
            }
        }
        #endif
    }
}
