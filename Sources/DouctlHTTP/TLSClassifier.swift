import CCurl

/// Tells the TLS failures apart from libcurl's result code, its error text, and the
/// certificate verification result (OpenSSL's X509_V_ERR_*, when libcurl uses OpenSSL;
/// the text covers GnuTLS builds).
enum TLSClassifier {
    static func classify(_ result: Int32, detail: String, verifyResult: Int, sentCertificate: Bool, gnuTLS: Bool = false) -> TLSFailure? {
        let text = detail.lowercased()
        switch result {
        case CCURLE_PEER_FAILED_VERIFICATION, CCURLE_SSL_ISSUER_ERROR, CCURLE_SSL_INVALIDCERTSTATUS, CCURLE_SSL_PINNEDPUBKEYNOTMATCH:
            // OpenSSL: X509_V_ERR_CERT_NOT_YET_VALID 9, X509_V_ERR_CERT_HAS_EXPIRED 10.
            // GnuTLS: a bit mask, GNUTLS_CERT_NOT_ACTIVATED 1<<9, GNUTLS_CERT_EXPIRED 1<<10.
            let expired = gnuTLS ? verifyResult & (1 << 9 | 1 << 10) != 0 : verifyResult == 9 || verifyResult == 10
            if expired || text.containsBytes("expired") || text.containsBytes("not yet valid") || text.containsBytes("not activated") {
                return .expired
            }
            // X509_V_ERR_HOSTNAME_MISMATCH 62, X509_V_ERR_IP_ADDRESS_MISMATCH 64
            if verifyResult == 62 || verifyResult == 64 || text.containsBytes("subject name") || text.containsBytes("does not match") || text.containsBytes("mismatch") {
                return .hostMismatch
            }
            return .untrusted
        case CCURLE_SSL_CLIENTCERT:
            return .clientCertificateRefused
        case CCURLE_SSL_CERTPROBLEM, CCURLE_SSL_ENGINE_NOTFOUND, CCURLE_SSL_ENGINE_SETFAILED, CCURLE_SSL_ENGINE_INITFAILED:
            return .clientCertificate
        case CCURLE_SSL_CACERT_BADFILE, CCURLE_SSL_CRL_BADFILE:
            return .caFile
        case CCURLE_SSL_CONNECT_ERROR, CCURLE_SSL_CIPHER, CCURLE_SSL_SHUTDOWN_FAILED, CCURLE_RECV_ERROR, CCURLE_SEND_ERROR:
            if refusesClientCertificate(text) { return .clientCertificateRefused }
            // GnuTLS does not name the alert. A fatal alert once the handshake is done comes
            // from the server checking our certificate (TLS 1.3 verifies it after Finished).
            if gnuTLS, result == CCURLE_RECV_ERROR, text.containsBytes("fatal alert") { return .clientCertificateRefused }
            if result == CCURLE_RECV_ERROR || result == CCURLE_SEND_ERROR { return nil }
            if isProtocolVersion(text) { return .protocolVersion }
            if isNotTLS(text) { return .notTLS }
            return .handshake
        default:
            return nil
        }
    }

    /// TLS alerts a server sends when it wants a client certificate or rejects ours.
    private static func refusesClientCertificate(_ text: String) -> Bool {
        ["certificate required", "bad certificate", "unknown ca", "certificate unknown", "unsupported certificate",
         "certificate revoked", "certificate expired"].contains { text.containsBytes("alert " + $0) || text.containsBytes("alert_" + $0.replacingAll(" ", with: "_")) }
    }

    /// No TLS version both sides speak: the server's `protocol_version` alert, or a version
    /// the client refuses (OpenSSL's "unsupported protocol", GnuTLS's "unsupported version").
    /// Only then does a failure mention douctl's lowest version, TLS 1.2.
    static func isProtocolVersion(_ text: String) -> Bool {
        ["alert protocol version", "alert_protocol_version", "unsupported protocol", "no protocols available",
         "version too low", "unsupported version", "protocol version"].contains { text.containsBytes($0) }
    }

    /// The first bytes back were not a TLS record: OpenSSL reads an HTTP status line's
    /// "HTTP" as a record of an unknown version ("wrong version number"), GnuTLS as an
    /// unexpected packet. Usually plain HTTP behind an https:// URL.
    static func isNotTLS(_ text: String) -> Bool {
        ["wrong version number", "packet length too long", "unexpected tls packet", "unexpected packet",
         "unexpected length"].contains { text.containsBytes($0) }
    }

    /// "SSL certificate problem: self-signed certificate" → "self-signed certificate".
    static func shorten(_ detail: String) -> String {
        var text = Substring(detail)
        for prefix in ["SSL certificate problem: ", "SSL: "] where text.hasPrefix(prefix) {
            text = text.dropFirst(prefix.count)
        }
        if let routines = text.firstRange(ofBytes: "routines::") { text = text[routines.upperBound...] }
        return String(text)
    }
}
