import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// How a reply held in memory is printed (`api`): its head with `--include`, then its
/// payload as JSON, reformatted without a tree, or its bytes as received. The payload is a
/// document (through `--jq` when given); the head never is.
extension Output {
    /// The status line and headers (`-i`, `-I`), as curl -i prints them: straight to stdout.
    func head(_ head: HTTPResponseHead) {
        headText(APIOutput.headText(head))
    }

    /// A head's text (`-I`), straight to stdout.
    func headText(_ text: String) {
        stdout.write(text)
    }

    /// The payload as JSON; the body as received with `raw`, when it is empty or when it
    /// is not JSON. On a terminal (unless `showsBytes`: `-o -`) a binary body is not shown
    /// and text that is not JSON is escaped (`TerminalBody`).
    func reply(_ response: HTTPResponse, payload: JSON?, raw: Bool, withHead: Bool, showsBytes: Bool = false) {
        if withHead { head(response.head) }
        if raw || response.body.isEmpty {
            bodyAsReceived(response, showsBytes: showsBytes, escapesText: false)
            return
        }
        if let payload {
            json(payload)
            return
        }
        if let formatted = try? JSONReformatter.reformat(response.body, format: prettyJSON ? .pretty : .compact) {
            jsonBytes(formatted)
        } else {
            bodyAsReceived(response, showsBytes: showsBytes, escapesText: true)
        }
    }

    private func bodyAsReceived(_ response: HTTPResponse, showsBytes: Bool, escapesText: Bool) {
        guard stdoutIsTerminal, !showsBytes, !response.body.isEmpty else {
            writeDocument(response.body)
            return
        }
        if TerminalBody.isBinary(mediaType: response.head.mediaType, prefix: response.body.prefix(8192)) {
            note(TerminalBody.notShown(mediaType: response.head.mediaType, size: response.body.count))
            return
        }
        writeDocument(escapesText ? TerminalBody.Escaper.escaped(response.body) : response.body)
    }

    /// A JSON array reply validated and reformatted without building a tree; nothing is
    /// printed (not even the head) when it turns out not to be JSON.
    func reformattedReply(_ response: HTTPResponse, withHead: Bool) throws(DouctlError) {
        let formatted: [UInt8]
        do {
            formatted = try JSONReformatter.reformat(response.body, format: prettyJSON ? .pretty : .compact)
        } catch {
            throw .badReply("the reply is not valid JSON (HTTP \(response.status): \(error.description))", httpStatus: response.status)
        }
        if withHead { head(response.head) }
        jsonBytes(formatted)
    }
}
