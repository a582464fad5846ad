/// Why a reply is not valid JSON, and where.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What is wrong, e.g. "unexpected end of input" or "unexpected 'x' after the JSON value".
    public let message: String
    /// Byte offset of the problem from the start of the input (a BOM counts).
    public let offset: Int
    /// 1-based line (lines end at "\n").
    public let line: Int
    /// 1-based column, counted in Unicode scalars so it matches what an editor shows for 中文 text.
    public let column: Int
    /// True when the input ended in the middle of a value: the reply was probably cut off.
    public let isTruncated: Bool

    public init(message: String, offset: Int, line: Int, column: Int, isTruncated: Bool = false) {
        self.message = message
        self.offset = offset
        self.line = line
        self.column = column
        self.isTruncated = isTruncated
    }

    /// "unexpected end of input at line 3, column 7"
    public var description: String { "\(message) at line \(line), column \(column)" }
}
