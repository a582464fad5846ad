/// Just enough of a GraphQL document to re-query one of its connections on its own: the
/// operation's variable definitions, the fields by their response keys (through inline
/// fragments and named fragments), each field's arguments and source text, and the
/// fragments a piece of text uses. Not a validator: the server validates.
struct GraphQLDocument {
    struct Token: Equatable {
        enum Kind: Equatable { case name, punctuator, string, number, spread }
        var kind: Kind
        var text: String
        /// Where the token starts and ends in the source's unicode scalars.
        var start: Int
        var end: Int
    }

    struct Field {
        var key: String
        var name: String
        /// The arguments' source texts by name, in order.
        var arguments: [(name: String, text: String)]
        /// The selection set's source text, braces included; nil for a leaf.
        var selection: String?
        /// Index of the first token of the selection set (its `{`), for searching inside it.
        var selectionStart: Int?
    }

    struct ParseError: Error { var message: String }

    let scalars: [Unicode.Scalar]
    let tokens: [Token]
    /// The operation's variables: name (without `$`) → its definition's text (`$n: Int = 3`).
    private(set) var variables: [(name: String, text: String)] = []
    /// Token index of the operation's selection set.
    private(set) var operationSelection = 0
    /// Named fragments: name → (token index of its selection set, its whole source text).
    private(set) var fragments: [String: (selection: Int, text: String)] = [:]

    init(_ source: String, operationName: String? = nil) throws(ParseError) {
        scalars = Array(source.unicodeScalars)
        tokens = try Self.tokenize(scalars)
        try readDefinitions(operationName: operationName)
    }

    func text(_ from: Int, _ to: Int) -> String {
        String(String.UnicodeScalarView(scalars[from..<to]))
    }

    // MARK: - tokens

    static func tokenize(_ s: [Unicode.Scalar]) throws(ParseError) -> [Token] {
        var tokens: [Token] = []
        var i = 0
        func isNameStart(_ c: Unicode.Scalar) -> Bool { c == "_" || ("a"..."z").contains(c) || ("A"..."Z").contains(c) }
        func isNameChar(_ c: Unicode.Scalar) -> Bool { isNameStart(c) || ("0"..."9").contains(c) }
        while i < s.count {
            let c = s[i]
            if c == " " || c == "\t" || c == "\n" || c == "\r" || c == "," || c == "\u{FEFF}" { i += 1; continue }
            if c == "#" {
                while i < s.count, s[i] != "\n", s[i] != "\r" { i += 1 }
                continue
            }
            let start = i
            if c == "." {
                guard i + 2 < s.count, s[i + 1] == ".", s[i + 2] == "." else { throw ParseError(message: "a lone '.'") }
                i += 3
                tokens.append(Token(kind: .spread, text: "...", start: start, end: i))
                continue
            }
            if "{}()[]:=@$!|&".unicodeScalars.contains(c) {
                i += 1
                tokens.append(Token(kind: .punctuator, text: String(c), start: start, end: i))
                continue
            }
            if c == "\"" {
                if i + 2 < s.count, s[i + 1] == "\"", s[i + 2] == "\"" {
                    i += 3
                    while i < s.count {
                        if s[i] == "\\", i + 3 < s.count, s[i + 1] == "\"", s[i + 2] == "\"", s[i + 3] == "\"" { i += 4; continue }
                        if s[i] == "\"", i + 2 < s.count, s[i + 1] == "\"", s[i + 2] == "\"" { i += 3; break }
                        i += 1
                    }
                } else {
                    i += 1
                    while i < s.count, s[i] != "\"" {
                        if s[i] == "\n" { throw ParseError(message: "a string is not closed") }
                        i += s[i] == "\\" ? 2 : 1
                    }
                    guard i < s.count else { throw ParseError(message: "a string is not closed") }
                    i += 1
                }
                tokens.append(Token(kind: .string, text: "", start: start, end: min(i, s.count)))
                continue
            }
            if c == "-" || ("0"..."9").contains(c) {
                i += 1
                while i < s.count, ("0"..."9").contains(s[i]) || s[i] == "." || s[i] == "e" || s[i] == "E" || s[i] == "+" || s[i] == "-" { i += 1 }
                tokens.append(Token(kind: .number, text: String(String.UnicodeScalarView(s[start..<i])), start: start, end: i))
                continue
            }
            if isNameStart(c) {
                while i < s.count, isNameChar(s[i]) { i += 1 }
                tokens.append(Token(kind: .name, text: String(String.UnicodeScalarView(s[start..<i])), start: start, end: i))
                continue
            }
            throw ParseError(message: "unexpected character '\(Character(c))'")
        }
        return tokens
    }

    // MARK: - definitions

    private func isPunct(_ index: Int, _ text: String) -> Bool {
        index < tokens.count && tokens[index].kind == .punctuator && tokens[index].text == text
    }

    /// The index after the bracketed group that opens at `index` (`{`, `(` or `[`).
    func skipGroup(_ index: Int) throws(ParseError) -> Int {
        var depth = 0
        var i = index
        while i < tokens.count {
            let token = tokens[i]
            if token.kind == .punctuator {
                if ["{", "(", "["].contains(token.text) { depth += 1 }
                if ["}", ")", "]"].contains(token.text) { depth -= 1 }
                if depth == 0 { return i + 1 }
            }
            i += 1
        }
        throw ParseError(message: "a bracket is not closed")
    }

    private mutating func readDefinitions(operationName: String?) throws(ParseError) {
        var i = 0
        var chosen: Int?
        var chosenVariables: [(String, String)] = []
        while i < tokens.count {
            if isPunct(i, "{") {
                if chosen == nil { chosen = i }
                i = try skipGroup(i)
                continue
            }
            guard tokens[i].kind == .name else { throw ParseError(message: "unexpected '\(tokens[i].text)'") }
            if tokens[i].text == "fragment" {
                let start = tokens[i].start
                guard i + 1 < tokens.count, tokens[i + 1].kind == .name else { throw ParseError(message: "a fragment has no name") }
                let name = tokens[i + 1].text
                var j = i + 2
                while j < tokens.count, !isPunct(j, "{") { j += 1 }
                guard j < tokens.count else { throw ParseError(message: "fragment \(name) has no selection") }
                let end = try skipGroup(j)
                fragments[name] = (j, text(start, tokens[end - 1].end))
                i = end
                continue
            }
            // query|mutation|subscription Name? (vars)? directives? { ... }
            var j = i + 1
            var name: String?
            if j < tokens.count, tokens[j].kind == .name { name = tokens[j].text; j += 1 }
            var variables: [(String, String)] = []
            if isPunct(j, "(") {
                let close = try skipGroup(j) - 1
                var k = j + 1
                while k < close {
                    guard isPunct(k, "$"), k + 1 < close else { throw ParseError(message: "a variable definition does not start with $") }
                    let start = tokens[k].start
                    let variable = tokens[k + 1].text
                    var m = k + 2
                    var depth = 0
                    while m < close {
                        if isPunct(m, "[") || isPunct(m, "{") || isPunct(m, "(") { depth += 1 }
                        if isPunct(m, "]") || isPunct(m, "}") || isPunct(m, ")") { depth -= 1 }
                        if depth == 0, isPunct(m, "$") { break }
                        m += 1
                    }
                    variables.append((variable, text(start, tokens[m - 1].end)))
                    k = m
                }
                j = close + 1
            }
            while j < tokens.count, !isPunct(j, "{") { j = isPunct(j, "(") ? try skipGroup(j) : j + 1 }
            guard j < tokens.count else { throw ParseError(message: "an operation has no selection") }
            if chosen == nil && (operationName == nil || operationName == name) {
                chosen = j
                chosenVariables = variables
            }
            i = try skipGroup(j)
        }
        guard let chosen else { throw ParseError(message: operationName.map { "no operation named \($0)" } ?? "no operation") }
        operationSelection = chosen
        variables = chosenVariables
    }

    // MARK: - fields

    /// The field at `path` (response keys from the operation's root); nil when none is.
    func field(at path: [String]) -> Field? {
        var selection = operationSelection
        for (index, key) in path.enumerated() {
            guard let found = try? field(key, inSelection: selection, visited: []) else { return nil }
            if index == path.count - 1 { return found }
            guard let next = found.selectionStart else { return nil }
            selection = next
        }
        return nil
    }

    /// The field whose response key is `key` in the selection set opening at `open`,
    /// looking inside inline fragments and named fragments too.
    func field(_ key: String, inSelection open: Int, visited: Set<String>) throws(ParseError) -> Field? {
        let close = try skipGroup(open) - 1
        var i = open + 1
        while i < close {
            if tokens[i].kind == .spread {
                if i + 1 < close, tokens[i + 1].kind == .name, tokens[i + 1].text != "on" {
                    let name = tokens[i + 1].text
                    i += 2
                    while i < close, isPunct(i, "@") { i = skipDirective(i, close) }
                    if !visited.contains(name), let fragment = fragments[name],
                       let found = try field(key, inSelection: fragment.selection, visited: visited.union([name])) {
                        return found
                    }
                    continue
                }
                var j = i + 1
                while j < close, !isPunct(j, "{") { j += 1 }
                guard j < close else { return nil }
                if let found = try field(key, inSelection: j, visited: visited) { return found }
                i = try skipGroup(j)
                continue
            }
            guard tokens[i].kind == .name else { i += 1; continue }
            var name = tokens[i].text
            let responseKey = name
            var j = i + 1
            if isPunct(j, ":"), j + 1 < close, tokens[j + 1].kind == .name {
                name = tokens[j + 1].text
                j += 2
            }
            var arguments: [(String, String)] = []
            if isPunct(j, "(") {
                let argumentsEnd = try skipGroup(j)
                var k = j + 1
                while k < argumentsEnd - 1 {
                    guard tokens[k].kind == .name else { k += 1; continue }
                    let argument = tokens[k].text
                    let argumentStart = tokens[k].start
                    var m = k + 2
                    if m < argumentsEnd - 1, isPunct(m, "{") || isPunct(m, "[") { m = try skipGroup(m) } else { m += 1 }
                    if isPunct(k + 2, "$") { m = k + 4 }
                    arguments.append((argument, text(argumentStart, tokens[m - 1].end)))
                    k = m
                }
                j = argumentsEnd
            }
            while j < close, isPunct(j, "@") { j = skipDirective(j, close) }
            var field = Field(key: responseKey, name: name, arguments: arguments)
            if isPunct(j, "{") {
                let end = try skipGroup(j)
                field.selection = text(tokens[j].start, tokens[end - 1].end)
                field.selectionStart = j
                j = end
            }
            if responseKey == key { return field }
            i = j
        }
        return nil
    }

    private func skipDirective(_ at: Int, _ close: Int) -> Int {
        var j = at + 2
        if isPunct(j, "("), let end = try? skipGroup(j) { j = end }
        return min(j, close)
    }

    /// The variables (without `$`) that `text` uses.
    static func variablesUsed(in text: String) -> Set<String> {
        guard let tokens = try? tokenize(Array(text.unicodeScalars)) else { return [] }
        var names = Set<String>()
        for (index, token) in tokens.enumerated() where token.kind == .punctuator && token.text == "$" {
            if index + 1 < tokens.count, tokens[index + 1].kind == .name { names.insert(tokens[index + 1].text) }
        }
        return names
    }

    /// The named fragments `text` spreads, and those they spread, as definitions' texts.
    func fragmentsUsed(by text: String) -> [String] {
        var pending = [text]
        var seen = Set<String>()
        var out: [String] = []
        while let next = pending.popLast() {
            guard let tokens = try? Self.tokenize(Array(next.unicodeScalars)) else { continue }
            for (index, token) in tokens.enumerated() where token.kind == .spread {
                guard index + 1 < tokens.count, tokens[index + 1].kind == .name, tokens[index + 1].text != "on" else { continue }
                let name = tokens[index + 1].text
                guard seen.insert(name).inserted, let fragment = fragments[name] else { continue }
                out.append(fragment.text)
                pending.append(fragment.text)
            }
        }
        return out
    }
}
