import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Testing

/// `SentSecrets`: the run's registry of what it sent as a secret, and the forms a server may
/// echo each in (issue 38, point 8).
@Suite struct SentSecretsTests {
    @Test func aSecretIsMaskedAsSentAndAsAFormOrJSONStringCarriesIt() {
        let secrets = SentSecrets()
        secrets.add(#"a b/c"d+e"#)
        #expect(secrets.scrub(#"raw a b/c"d+e."#) == "raw ***.")
        #expect(secrets.scrub("form a+b%2Fc%22d%2Be&x") == "form ***&x")
        #expect(secrets.scrub("query a%20b%2Fc%22d%2Be") == "query ***")
        #expect(secrets.scrub(#"json "a b/c\"d+e""#) == #"json "***""#)
        #expect(secrets.scrub(Array("bytes a b/c\"d+e".utf8)) == Array("bytes ***".utf8))
        #expect(secrets.scrub("nothing here") == "nothing here")
    }

    @Test func shortTextIsNotASecretAndTheLongestIsMaskedWhole() {
        let secrets = SentSecrets()
        secrets.add("pw1")
        #expect(secrets.isEmpty, "too short to mask without mangling ordinary text")
        secrets.add("abcd")
        secrets.add("abcdefgh")
        #expect(secrets.scrub("abcdefgh and abcd") == "*** and ***")
    }

    /// A request's credentials as it leaves: its own `secrets`, the Authorization value (a
    /// Basic one's password too, and a client secret form-encoded before it was joined), a
    /// key header `-v` masks by name.
    @Test func aRequestRegistersWhatItCarries() throws {
        let secrets = SentSecrets()
        let transport = ScriptedTransport([.json(200, "{}")])
        let registering = SecretRegisteringTransport(transport, secrets: secrets)
        var request = HTTPRequest(method: "GET", url: "http://api.test/x", headers: [
            HTTPHeader("Authorization", "Basic " + Base64.encode(Array("cid:s3cr%2Ft%2Bx".utf8))),
            HTTPHeader("X-API-Key", "k3y-value"),
            HTTPHeader("Accept", "application/json"),
        ])
        request.secrets = ["form-secret"]
        _ = try registering.fetch(request)
        #expect(transport.requests.count == 1)
        #expect(secrets.scrub("s3cr/t+x k3y-value form-secret application/json") == "*** *** *** application/json")
        #expect(secrets.scrub(Base64.encode(Array("cid:s3cr%2Ft%2Bx".utf8))) == "***")
    }
}
