import DouctlCore
import DouctlJSON
import DouctlSystem

/// `douctl sandbox --openapi FILE`: the description read with the reader `profile add
/// --openapi` uses (references to relative files followed), made into an `OpenAPIFake`.
enum SandboxOpenAPI {
    static let help = """
    --openapi FILE serves the API a description (OpenAPI 3.0, 3.1 or Swagger 2.0, JSON or
    YAML) describes, in place of Douban's and Coding's: paths as its templates give them
    (under its first server's path, e.g. /v1, or without it); each reply the operation's
    first 2xx response's example, else one made from its schema (enums' first value,
    formats such as date-time, uuid and email given sensible values, bounds respected,
    arrays of one item); path, query and header parameters and JSON bodies checked as
    'douctl NAME OPERATION' checks them, a violation answered 422 (a body that is not JSON
    400) as a problem document (application/problem+json) naming the field and the rule;
    an unknown path 404 and a method not described 405, each naming the described paths
    or methods. Auth in its simplest honest form: an operation whose security asks for a
    bearer token (http bearer, oauth2, openIdConnect), HTTP Basic or an API key answers
    401 without that credential, and accepts any non-empty one. --fault, --signing,
    --quota and --replay work on it as on the Douban fake (a request the replay lacks is
    answered by the description). To call it: douctl profile add NAME --openapi FILE
    --api-base URL, with the URL it prints.
    """

    /// The fake of the description at `path`, or a refusal naming where it cannot be read.
    static func fake(_ path: String, context: CommandContext) throws(DouctlError) -> OpenAPIFake {
        let source = OpenAPIProfile.absoluteSource(path, context: context)
        let bytes: [UInt8]
        do { bytes = try FileIO.readFile(source) } catch {
            throw .localInput("cannot read the API description \(TerminalText.escaped(path)) (\(error))")
        }
        let root = try OpenAPIReader.decode(bytes, source: source)
        var reader = OpenAPIReader(source: source, root: root) { (location: String) throws(DouctlError) -> [UInt8] in
            guard !OpenAPIProfile.isURL(location) else {
                throw .localInput("cannot read the API description \(TerminalText.escaped(source)): $ref to \(TerminalText.escaped(location)); the sandbox follows references to files only")
            }
            do { return try FileIO.readFile(location) } catch {
                throw .localInput("cannot read the API description \(TerminalText.escaped(location)) (\(error))")
            }
        }
        return try OpenAPIFake.make(reader: &reader)
    }
}
