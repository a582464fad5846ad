import DouctlHTTP
import DouctlSystem

/// Whether this run's https requests go through the connection keeper, as the command
/// layer read it (`--no-keep`, `DOUCTL_KEEP`), and what starts one: the session adds the
/// profile's `keep` key and the network settings (a proxy or `--unix-socket` go direct).
public struct KeeperChoice: Sendable, Equatable {
    /// The douctl binary a client starts the keeper with (`douctl keeper serve`); nil when
    /// this process is not douctl (tests in process): one that runs is used, none started.
    public var executable: String?
    public var version: String
    /// `DOUCTL_KEEP=5m`: the idle time, over the profile's.
    public var idleSeconds: Double?

    public init(executable: String?, version: String, idleSeconds: Double? = nil) {
        self.executable = executable
        self.version = version
        self.idleSeconds = idleSeconds
    }

    /// `DOUCTL_KEEP`: unset, `1`, `on` or `true` keep connections; `0`, `off`, `false` or
    /// `no` turn the keeper off (nil); a duration (`5m`) is the idle time.
    /// `executable` is asked for only when the keeper is on (finding it reads /proc/self/exe).
    public static func fromEnvironment(_ value: String?, executable: @autoclosure () -> String?, version: String) -> KeeperChoice? {
        guard let value = value?.lowercased(), !value.isEmpty else { return KeeperChoice(executable: executable(), version: version) }
        if ["0", "off", "false", "no"].contains(value) { return nil }
        return KeeperChoice(executable: executable(), version: version, idleSeconds: KeeperRoute.idleSeconds(value))
    }

    /// The route for a run with these network settings and profile, or nil: direct.
    public func route(network: NetworkSettings, profile: ResolvedProfile, environment: [String: String], configDirectory: String) -> KeeperRoute? {
        if profile.keep == "false" { return nil }
        // Through a proxy or a socket of the user's choosing, requests go direct.
        guard network.proxy == nil, network.unixSocket == nil, network.fallbackProxies["https"] == nil,
              !(NetworkSettings.proxyVariables["https"] ?? []).contains(where: { environment[$0]?.isEmpty == false }) else { return nil }
        // The keeper is one process with one OpenSSL configuration (the system's: it is not
        // given OPENSSL_CONF), so a run that names its own goes direct, as that file says.
        if environment["OPENSSL_CONF"]?.isEmpty == false { return nil }
        let idle = idleSeconds ?? profile.keep.flatMap(KeeperRoute.idleSeconds) ?? KeeperRoute.defaultIdleSeconds
        let directory = KeeperRoute.directory(environment: environment, configDirectory: configDirectory)
        let path = KeeperRoute.socketPath(directory: directory, version: version)
        // A socket path longer than sun_path holds cannot be used.
        guard path.utf8.count < 100 else { return nil }
        return KeeperRoute(socketPath: path, version: version,
                           start: executable.map { [$0, "keeper", "serve", "--idle", String(Int(idle.rounded(.up))), "--directory", directory] })
    }
}
