import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// How a reply held in memory is printed (`api`): its head with `--include`, then its
/// payload as JSON, reformatted without a tree, or its bytes as received.
extension Output {
    /// The status line and headers (`-i`), as curl -i prints them.
    func head(_ head: HTTPResponseHead) {
        stdout.write(APIOutput.headText(head))
    }

    /// The payload as JSON; the body as received with `raw`, when it is empty or when it
    /// is not JSON.
    func reply(_ response: HTTPResponse, payload: JSON?, raw: Bool, withHead: Bool) {
        if withHead { head(response.head) }
        if raw || response.body.isEmpty {
            stdout.write(response.body)
            return
        }
        if let payload {
            json(payload)
            return
        }
        if let formatted = try? JSONReformatter.reformat(response.body, format: prettyJSON ? .pretty : .compact) {
            jsonBytes(formatted)
        } else {
            stdout.write(response.body)
        }
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
