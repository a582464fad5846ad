import DouctlServer
import DouctlSystem

/// Sends each request to its API family: Coding's paths to `CodingRouter`, everything else to
/// `DoubanRouter`. It builds the handler families once, handing each only what it works on:
/// the state behind its lock, the configuration, the base URL, the picture directory, and the
/// consent and device-grant steps both fakes share.
struct Router: Sendable {
    private let douban: DoubanRouter
    private let coding: CodingRouter

    init(state: LockedValue<SandboxState>, configuration: SandboxConfiguration, baseURL: BaseURL,
         pictureDirectory: String, deviceGrant: DeviceGrant) {
        let consent = ConsentFlow(state: state, configuration: configuration)
        let doubanAuthentication = DoubanAuthentication(state: state, configuration: configuration)
        douban = DoubanRouter(
            oauth: DoubanOAuthHandlers(state: state, configuration: configuration, consent: consent, deviceGrant: deviceGrant),
            users: DoubanUserHandlers(state: state, baseURL: baseURL, authentication: doubanAuthentication, clock: configuration.clock),
            statuses: DoubanStatusHandlers(state: state, baseURL: baseURL, pictureDirectory: pictureDirectory,
                                           authentication: doubanAuthentication, clock: configuration.clock),
            statics: StaticHandlers(state: state, baseURL: baseURL, pictureDirectory: pictureDirectory))
        let codingAuthentication = CodingAuthentication(state: state, clock: configuration.clock)
        coding = CodingRouter(
            oauth: CodingOAuthHandlers(state: state, configuration: configuration, consent: consent, deviceGrant: deviceGrant),
            accounts: CodingAccountHandlers(state: state, configuration: configuration, baseURL: baseURL,
                                            authentication: codingAuthentication),
            users: CodingUserHandlers(state: state, baseURL: baseURL, authentication: codingAuthentication),
            tweets: CodingTweetHandlers(state: state, baseURL: baseURL, pictureDirectory: pictureDirectory,
                                        authentication: codingAuthentication, clock: configuration.clock))
    }

    func dispatch(_ exchange: Exchange) -> HTTPServerResponse {
        if case .coding(let route) = exchange.route { return coding.dispatch(exchange, route) }
        return douban.dispatch(exchange)
    }
}
