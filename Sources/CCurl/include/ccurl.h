// ccurl: the few libcurl entry points douctl uses, loaded at run time with dlopen.
//
// Why: FoundationNetworking cannot stream an upload with Content-Length and costs start-up
// time (so `douctl --help` never pays for it). Declaring the entry points here, instead of including <curl/curl.h>,
// means no -dev package is needed to build, and loading lazily keeps `douctl --help` fast.
// The variadic curl_easy_setopt is wrapped in functions typed by the option's value kind,
// so Swift never calls a C variadic.
#ifndef CCURL_H
#define CCURL_H

#include <stddef.h>
#include <stdint.h>

// Option numbers: CURLOPTTYPE_* base + index, exactly as in curl.h (stable ABI since 7.x).
#define CCURLOPT_WRITEDATA              10001
#define CCURLOPT_ACCEPT_ENCODING        10102
#define CCURLOPT_UNIX_SOCKET_PATH       10231
#define CCURLOPT_URL                    10002
#define CCURLOPT_PROXY                  10004
#define CCURLOPT_READDATA               10009
#define CCURLOPT_ERRORBUFFER            10010
#define CCURLOPT_WRITEFUNCTION          20011
#define CCURLOPT_READFUNCTION           20012
#define CCURLOPT_USERAGENT              10018
#define CCURLOPT_LOW_SPEED_LIMIT        19
#define CCURLOPT_LOW_SPEED_TIME         20
#define CCURLOPT_HTTPHEADER             10023
#define CCURLOPT_SSLCERT                10025
#define CCURLOPT_HEADERDATA             10029
#define CCURLOPT_SSLVERSION             32
#define CCURLOPT_CUSTOMREQUEST          10036
#define CCURLOPT_VERBOSE                41
#define CCURLOPT_NOPROGRESS             43
#define CCURLOPT_NOBODY                 44
#define CCURLOPT_UPLOAD                 46
#define CCURLOPT_POST                   47
#define CCURLOPT_FOLLOWLOCATION         52
#define CCURLOPT_SSL_VERIFYPEER         64
#define CCURLOPT_CAINFO                 10065
#define CCURLOPT_XFERINFODATA           10057
#define CCURLOPT_MAXREDIRS              68
#define CCURLOPT_HEADERFUNCTION         20079
#define CCURLOPT_HTTPGET                80
#define CCURLOPT_SSL_VERIFYHOST         81
#define CCURLOPT_SSLKEY                 10087
#define CCURLOPT_DEBUGFUNCTION          20094
#define CCURLOPT_DEBUGDATA              10095
#define CCURLOPT_CAPATH                 10097
#define CCURLOPT_BUFFERSIZE             98
#define CCURLOPT_NOSIGNAL               99
#define CCURLOPT_INFILESIZE_LARGE       30115
#define CCURLOPT_POSTFIELDSIZE_LARGE    30120
#define CCURLOPT_TCP_NODELAY            121
#define CCURLOPT_TIMEOUT_MS             155
#define CCURLOPT_CONNECTTIMEOUT_MS      156
#define CCURLOPT_SEEKFUNCTION           20167
#define CCURLOPT_SEEKDATA               10168
#define CCURLOPT_XFERINFOFUNCTION       20219
#define CCURLOPT_EXPECT_100_TIMEOUT_MS  227
#define CCURLOPT_UPLOAD_BUFFERSIZE      280
#define CCURLOPT_PROTOCOLS              181
#define CCURLOPT_REDIR_PROTOCOLS        182
#define CCURLOPT_PROTOCOLS_STR          10318
#define CCURLOPT_REDIR_PROTOCOLS_STR    10319
#define CCURLOPT_CONNECT_ONLY           141
#define CCURLOPT_HTTP_VERSION           84
#define CCURL_HTTP_VERSION_1_1          2

#define CCURLINFO_RESPONSE_CODE         0x200002
#define CCURLINFO_HTTP_CONNECTCODE      0x200016
#define CCURLINFO_SIZE_UPLOAD_T         0x600007
#define CCURLINFO_SIZE_DOWNLOAD_T       0x600008
#define CCURLINFO_SSL_VERIFYRESULT      0x20000D
#define CCURLINFO_NUM_CONNECTS          0x20001A
#define CCURLINFO_HTTP_VERSION          0x20002E
#define CCURLE_AGAIN                    81

// CURLOPT_SSLVERSION: at least TLS 1.2 (the value is CURL_SSLVERSION_TLSv1_2).
#define CCURL_SSLVERSION_TLSv1_2        6

// curl_infotype values passed to the debug callback.
#define CCURLINFO_TEXT        0
#define CCURLINFO_HEADER_IN   1
#define CCURLINFO_HEADER_OUT  2
#define CCURLINFO_DATA_IN     3
#define CCURLINFO_DATA_OUT    4

// Return values.
#define CCURLE_OK                       0
#define CCURLE_UNSUPPORTED_PROTOCOL     1
#define CCURLE_URL_MALFORMAT            3
#define CCURLE_WEIRD_SERVER_REPLY       8
#define CCURLE_BAD_CONTENT_ENCODING     61
#define CCURLE_COULDNT_RESOLVE_PROXY    5
#define CCURLE_COULDNT_RESOLVE_HOST     6
#define CCURLE_COULDNT_CONNECT          7
#define CCURLE_WRITE_ERROR              23
#define CCURLE_UNKNOWN_OPTION           48
#define CCURLPROTO_HTTP_AND_HTTPS       3
#define CCURLE_READ_ERROR               26
#define CCURLE_OPERATION_TIMEDOUT       28
#define CCURLE_ABORTED_BY_CALLBACK      42
#define CCURLE_SEND_ERROR               55
#define CCURLE_RECV_ERROR               56
#define CCURLE_PARTIAL_FILE             18
#define CCURLE_GOT_NOTHING              52
#define CCURLE_BAD_FUNCTION_ARGUMENT    43
#define CCURLE_TOO_MANY_REDIRECTS       47
#define CCURLE_SSL_CONNECT_ERROR        35
#define CCURLE_SSL_ENGINE_NOTFOUND      53
#define CCURLE_SSL_ENGINE_SETFAILED     54
#define CCURLE_SSL_CERTPROBLEM          58
#define CCURLE_SSL_CIPHER               59
#define CCURLE_PEER_FAILED_VERIFICATION 60
#define CCURLE_SSL_ENGINE_INITFAILED    66
#define CCURLE_SSL_CACERT_BADFILE       77
#define CCURLE_SSL_SHUTDOWN_FAILED      80
#define CCURLE_SSL_CRL_BADFILE          82
#define CCURLE_SSL_ISSUER_ERROR         83
#define CCURLE_SSL_PINNEDPUBKEYNOTMATCH 90
#define CCURLE_SSL_INVALIDCERTSTATUS    91
#define CCURLE_PROXY                    97
#define CCURLE_SSL_CLIENTCERT           98
#define CCURL_READFUNC_ABORT            0x10000000
#define CCURL_SEEKFUNC_OK               0
#define CCURL_SEEKFUNC_CANTSEEK         2

typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*ccurl_progress_callback)(void *context, int64_t download_total, int64_t download_now,
                                       int64_t upload_total, int64_t upload_now);
typedef int (*ccurl_debug_callback)(void *handle, int kind, char *data, size_t size, void *context);
typedef int (*ccurl_seek_callback)(void *context, int64_t offset, int origin);

/// Loads libcurl once (thread-safe). Returns 0 when it is usable; otherwise 1 and the reason,
/// which is also available later from ccurl_load_error(). `DOUCTL_LIBCURL`, when set, names
/// the library file to load instead of the platform default.
int ccurl_load(void);
/// The same load for a process whose first transfer does no TLS of its own (it goes through
/// the connection keeper, which holds the TLS connection, or it is plain http): when this call is the one that
/// loads libcurl, OpenSSL's configuration file is not read now but by the first later
/// ccurl_load(), so a process that never goes direct never reads it. Returns as ccurl_load.
int ccurl_load_plain(void);
const char *ccurl_load_error(void);
/// The loaded library's version string, e.g. "libcurl/7.88.1 OpenSSL/3.0.19".
const char *ccurl_version(void);

void *ccurl_easy_init(void);
void ccurl_easy_cleanup(void *handle);
void ccurl_easy_reset(void *handle);
int ccurl_easy_perform(void *handle);
const char *ccurl_easy_strerror(int code);

int ccurl_setopt_long(void *handle, int option, long value);
int ccurl_setopt_string(void *handle, int option, const char *value);
int ccurl_setopt_pointer(void *handle, int option, void *value);
int ccurl_setopt_offset(void *handle, int option, int64_t value);
int ccurl_setopt_data_callback(void *handle, int option, ccurl_data_callback callback);
int ccurl_setopt_progress_callback(void *handle, ccurl_progress_callback callback);
int ccurl_setopt_debug_callback(void *handle, ccurl_debug_callback callback);
int ccurl_setopt_seek_callback(void *handle, ccurl_seek_callback callback);

int ccurl_getinfo_long(void *handle, int info, long *value);
int ccurl_getinfo_offset(void *handle, int info, int64_t *value);

void *ccurl_slist_append(void *list, const char *string);
void ccurl_slist_free_all(void *list);

/// Opens the first of `names` (NULL-terminated) found in the system's library directories,
/// by absolute path, never beside the executable or in the working directory; or `override`
/// (an environment variable's value, named `variable`), which must be an absolute path.
/// NULL with `reason` filled when none opens. Linux; CJQ uses it for libjq too.
void *ccurl_trusted_dlopen(const char *override, const char *variable, const char *const *names, int flags, char *reason, size_t reason_size);
/// 1 when ccurl_trusted_dlopen(NULL, …, names, …) would find one of `names` to open (the same
/// search, each candidate checked for being readable instead of opened): a cheap "is it
/// installed" before a library is needed. (CCURL_TRUSTED_FIND_ONLY is the flag it passes.)
#define CCURL_TRUSTED_FIND_ONLY 0x40000000
int ccurl_trusted_find(const char *const *names);

/// One system library for libcurl, libjq and libyaml alike: `variable`'s value (an absolute
/// path) when set, else the first of the platform's names that opens (on Linux through
/// ccurl_trusted_dlopen, so never beside the executable). NULL when none opens, with
/// "cannot load WHAT (why)" written to `error`.
void *ccurl_open_system_library(const char *variable, const char *what, const char *const *apple_names, const char *const *linux_names, int flags, char *error, size_t error_size);

/// In a loader's load(): points `slot` at the library's `symbol`, or writes "WHAT lacks SYMBOL"
/// to `error` (a char array) and returns. Each loader wraps it as its own RESOLVE.
#define CCURL_RESOLVE(library, slot, symbol, what, error)                               \
    do {                                                                               \
        *(void **)(&(slot)) = dlsym(library, symbol);                                  \
        if (!(slot)) {                                                                 \
            snprintf(error, sizeof error, "%s lacks %s", what, symbol);                \
            return;                                                                    \
        }                                                                              \
    } while (0)

/// The keeper (douctl keeper serve): sending a client's request through a connection a
/// douctl process holds for this user. Client side: libcurl's sockets to the keeper are
/// made by `open` (libcurl connects them), handed to `ready` once connected and before the
/// request is sent (the handshake; non-zero aborts the transfer) and closed by `close`,
/// all given `context`.
typedef int (*ccurl_opensocket_callback)(void *context, int purpose, void *address);
typedef int (*ccurl_closesocket_callback)(void *context, int socket);
typedef int (*ccurl_prereq_callback)(void *context, char *primary_ip, char *local_ip, int primary_port, int local_port);
int ccurl_setopt_socket_callbacks(void *handle, ccurl_opensocket_callback open, ccurl_prereq_callback ready, ccurl_closesocket_callback close, void *context);
/// Tells the keeper, on `socket`, that the exchange on it ended cleanly (a byte carrying a
/// file descriptor, which libcurl's own bytes never do). 0 when sent.
int ccurl_keeper_mark_clean(int socket);
/// Keeper side: libcurl's CONNECT_ONLY transfers.
int ccurl_easy_send(void *handle, const void *buffer, size_t length, size_t *sent);
int ccurl_easy_recv(void *handle, void *buffer, size_t length, size_t *received);
/// The connected socket of a CONNECT_ONLY handle, or -1.
int ccurl_active_socket(void *handle);
/// 1 when a held connection is still open with nothing unread on it.
int ccurl_keeper_alive(void *handle);
/// Relays bytes between a client's Unix socket and a CONNECT_ONLY handle until the client
/// closes (1: the last exchange ended cleanly, the connection can serve another) or either
/// side fails (0). `traffic` counts the bytes relayed.
int ccurl_keeper_relay(int client, void *handle, int64_t *traffic);
/// The same after the caller sent a request's first bytes upstream itself.
int ccurl_keeper_relay_sent(int client, void *handle, int64_t *traffic);
/// A connected (close-on-exec) Unix stream socket to `path`, or -errno.
int ccurl_unix_connect(const char *path);
/// A listening (close-on-exec) Unix stream socket bound at `path` with mode 0600, or -errno.
int ccurl_unix_listen(const char *path);
/// The next connection on a listening socket (close-on-exec), or -errno.
int ccurl_unix_accept(int listener);
/// The uid of the peer of a connected Unix socket (SO_PEERCRED), or -1.
long ccurl_peer_uid(int socket);

/// The keeper's HTTP/2 side (issue 44): one multiplexed connection per origin, its streams
/// carrying the requests clients send as HTTP/1.1. 0 when this libcurl has what it needs
/// (curl_multi_poll and curl_multi_wakeup: 7.68 or later).
int ccurl_multi_load(void);
/// A multi handle with CURLMOPT_PIPELINING = CURLPIPE_MULTIPLEX, or NULL.
void *ccurl_multi_init_multiplexed(void);
void ccurl_multi_cleanup(void *multi);
int ccurl_multi_add(void *multi, void *handle);
int ccurl_multi_remove(void *multi, void *handle);
int ccurl_multi_perform(void *multi, int *running);
int ccurl_multi_wakeup(void *multi);
struct pollfd;
/// curl_multi_poll with `extra` descriptors to wait on as well (their revents filled).
int ccurl_multi_poll(void *multi, struct pollfd *extra, unsigned int count, int milliseconds);
/// The next finished transfer (its result in `result`), or NULL.
void *ccurl_multi_done(void *multi, int *result);
/// CURLPAUSE_RECV (1) and CURLPAUSE_SEND (4): the directions that stay paused; 0 resumes both.
int ccurl_easy_pause(void *handle, int bitmask);
/// Watches libcurl's lines for what ALPN chose: `outcome` becomes 2 (h2) or 1 (http/1.1).
int ccurl_setopt_alpn_watch(void *handle, int *outcome);
/// A non-blocking read of a client's socket that drops the clean-exchange mark: the bytes
/// read, 0 at its end, -errno (-EAGAIN: nothing yet).
long ccurl_keeper_read(int client, void *buffer, size_t size);

#define CCURL_WRITEFUNC_PAUSE 0x10000001
#define CCURL_READFUNC_PAUSE 0x10000001
#define CCURLOPT_PIPEWAIT 237
#define CCURLOPT_PATH_AS_IS 234
#define CCURL_HTTP_VERSION_2TLS 4
#define CCURLOPT_PRIVATE 10103

#endif
