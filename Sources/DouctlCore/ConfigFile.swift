import DouctlJSON
import DouctlSystem

/// config.json: `{"default_profile": "...", "profiles": {"NAME": {...}}}`.
public struct ConfigFile: Sendable, Equatable {
    public var defaultProfile: String?
    public var profiles: [(name: String, settings: ProfileSettings)]

    public init(defaultProfile: String? = nil, profiles: [(name: String, settings: ProfileSettings)] = []) {
        self.defaultProfile = defaultProfile
        self.profiles = profiles
    }

    public func profile(named name: String) -> ProfileSettings? {
        profiles.first { $0.name == name }?.settings
    }

    public mutating func setProfile(_ name: String, _ settings: ProfileSettings?) {
        if let settings {
            if let index = profiles.firstIndex(where: { $0.name == name }) {
                profiles[index].settings = settings
            } else {
                profiles.append((name: name, settings: settings))
            }
        } else {
            profiles.removeAll { $0.name == name }
        }
    }

    public static func == (lhs: ConfigFile, rhs: ConfigFile) -> Bool {
        lhs.defaultProfile == rhs.defaultProfile && lhs.profiles.count == rhs.profiles.count
            && zip(lhs.profiles, rhs.profiles).allSatisfy { $0.name == $1.name && $0.settings == $1.settings }
    }

    /// Profile names: letters, digits, '.', '_' and '-' (they become file and path names).
    public static func checkProfileName(_ name: String) throws(DouctlError) {
        let allowed = name.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "._-".unicodeScalars.contains($0) }
        guard !name.isEmpty, name.count <= 64, allowed, !name.hasPrefix(".") else {
            throw .usage("invalid profile name '\(name)': use letters, digits, '.', '_' and '-'")
        }
    }

    // MARK: - JSON

    /// Reads the file's JSON; any problem is reported with the file's path, never repaired.
    public static func decode(_ json: JSON, path: String) throws(DouctlError) -> ConfigFile {
        guard case .object(let root) = json else {
            throw .badConfig(path: path, detail: "the top level must be an object")
        }
        var config = ConfigFile()
        // JSON allows a name twice; which one counts would be a guess, so it is an error
        // (and a write would silently drop one). Found by fuzzing the loader.
        if let twice = firstDuplicate(root.keys) {
            throw .badConfig(path: path, detail: "'\(twice)' appears twice")
        }
        for (key, value) in root {
            switch key {
            case "default_profile":
                guard let name = value.stringValue else {
                    throw .badConfig(path: path, detail: "default_profile must be a string")
                }
                config.defaultProfile = name
            case "profiles":
                guard case .object(let profiles) = value else {
                    throw .badConfig(path: path, detail: "profiles must be an object")
                }
                if let twice = firstDuplicate(profiles.keys) {
                    throw .badConfig(path: path, detail: "profile '\(twice)' appears twice")
                }
                for (name, body) in profiles {
                    config.profiles.append((name: name, settings: try decodeProfile(body, name: name, path: path)))
                }
            default:
                throw .badConfig(path: path, detail: "unknown key '\(key)'; valid keys: default_profile, profiles")
            }
        }
        return config
    }

    private static func decodeProfile(_ json: JSON, name: String, path: String) throws(DouctlError) -> ProfileSettings {
        guard case .object(let object) = json else {
            throw .badConfig(path: path, detail: "profile '\(name)' must be an object")
        }
        if let twice = firstDuplicate(object.keys) {
            throw .badConfig(path: path, detail: "key '\(twice)' appears twice in profile '\(name)'")
        }
        var settings = ProfileSettings()
        for (rawKey, value) in object {
            guard let key = ProfileKey(rawValue: rawKey) else {
                let valid = ProfileKey.allCases.map(\.rawValue).joined(separator: ", ")
                throw .badConfig(path: path, detail: "unknown key '\(rawKey)' in profile '\(name)'; valid keys: \(valid)")
            }
            if key.isMap {
                guard case .object(let object) = value else {
                    throw .badConfig(path: path, detail: "\(rawKey) of profile '\(name)' must be an object of strings")
                }
                var pairs: [ProfileValue.Pair] = []
                for (field, item) in object {
                    guard let text = item.stringValue ?? item.scalarText else {
                        throw .badConfig(path: path, detail: "\(rawKey).\(field) of profile '\(name)' must be a string")
                    }
                    pairs.append(.init(field, text))
                }
                if let problem = key.headerProblem(pairs) {
                    throw .badConfig(path: path, detail: "\(rawKey) of profile '\(name)': \(problem)")
                }
                settings[key] = .map(pairs)
            } else if key.isList {
                guard case .array(let items) = value, let strings = Optional(items.compactMap(\.stringValue)), strings.count == items.count else {
                    throw .badConfig(path: path, detail: "\(rawKey) of profile '\(name)' must be an array of strings")
                }
                settings[key] = .list(strings)
            } else {
                guard let text = value.stringValue else {
                    throw .badConfig(path: path, detail: "\(rawKey) of profile '\(name)' must be a string")
                }
                if let allowed = key.allowedValues, !allowed.contains(text) {
                    throw .badConfig(path: path, detail: "\(rawKey) of profile '\(name)' is '\(text)'; expected one of \(allowed.joined(separator: ", "))")
                }
                settings[key] = .text(text)
            }
        }
        return settings
    }

    private static func firstDuplicate(_ names: [String]) -> String? {
        var seen = Set<String>()
        return names.first { !seen.insert($0).inserted }
    }

    public func encoded() -> JSON {
        var root = JSONObject()
        if let defaultProfile { root["default_profile"] = .string(defaultProfile) }
        var profilesObject = JSONObject()
        for (name, settings) in profiles {
            var object = JSONObject()
            for (key, value) in settings.entries {
                switch value {
                case .text(let text): object[key.rawValue] = .string(text)
                case .list(let items): object[key.rawValue] = .array(items.map(JSON.string))
                case .map(let pairs): object[key.rawValue] = .object(JSONObject(pairs.map { ($0.name, JSON.string($0.value)) }))
                }
            }
            profilesObject[name] = .object(object)
        }
        root["profiles"] = .object(profilesObject)
        return .object(root)
    }
}
