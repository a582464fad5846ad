import DouctlJSON
import DouctlSystem

extension TerminalText {
    /// A reply made safe for a view: every string (keys too) through `shown`.
    static func shown(_ json: JSON) -> JSON {
        switch json {
        case .string(let text): return .string(shown(text))
        case .array(let items): return .array(items.map(shown))
        case .object(let object): return .object(JSONObject(object.map { (shown($0.key), shown($0.value)) }))
        default: return json
        }
    }
}
