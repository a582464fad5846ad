#define _GNU_SOURCE
#include "ccurl.h"

#include <dlfcn.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

// Signatures of the real functions. CURL* and curl_slist* are opaque to us.
typedef int (*global_init_fn)(long flags);
typedef char *(*version_fn)(void);
typedef void *(*easy_init_fn)(void);
typedef void (*easy_cleanup_fn)(void *);
typedef void (*easy_reset_fn)(void *);
typedef int (*easy_perform_fn)(void *);
typedef const char *(*easy_strerror_fn)(int);
typedef int (*easy_setopt_fn)(void *, int, ...);
typedef int (*easy_getinfo_fn)(void *, int, ...);
typedef void *(*slist_append_fn)(void *, const char *);
typedef void (*slist_free_all_fn)(void *);
typedef int (*easy_send_fn)(void *, const void *, size_t, size_t *);
typedef int (*easy_recv_fn)(void *, void *, size_t, size_t *);
typedef int (*easy_pause_fn)(void *, int);
typedef void *(*multi_init_fn)(void);
typedef int (*multi_cleanup_fn)(void *);
typedef int (*multi_setopt_fn)(void *, int, ...);
typedef int (*multi_handle_fn)(void *, void *);
typedef int (*multi_perform_fn)(void *, int *);
typedef int (*multi_poll_fn)(void *, void *, unsigned int, int, int *);
typedef int (*multi_wakeup_fn)(void *);
typedef void *(*multi_info_read_fn)(void *, int *);

static struct {
    global_init_fn global_init;
    version_fn version;
    easy_init_fn easy_init;
    easy_cleanup_fn easy_cleanup;
    easy_reset_fn easy_reset;
    easy_perform_fn easy_perform;
    easy_strerror_fn easy_strerror;
    easy_setopt_fn easy_setopt;
    easy_getinfo_fn easy_getinfo;
    slist_append_fn slist_append;
    slist_free_all_fn slist_free_all;
    easy_send_fn easy_send;
    easy_recv_fn easy_recv;
    /* The keeper's HTTP/2 side only: looked up on first use (ccurl_multi_load), so a
       libcurl without them (older than 7.68) still serves every other call. */
    easy_pause_fn easy_pause;
    multi_init_fn multi_init;
    multi_cleanup_fn multi_cleanup;
    multi_setopt_fn multi_setopt;
    multi_handle_fn multi_add_handle;
    multi_handle_fn multi_remove_handle;
    multi_perform_fn multi_perform;
    multi_poll_fn multi_poll;
    multi_wakeup_fn multi_wakeup;
    multi_info_read_fn multi_info_read;
} curl;
static void *loaded_library;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_status = 1;
static char load_error[512] = "libcurl was not loaded";

/* Issue 44: a call through the connection keeper does no TLS in this process (libcurl
   speaks plain HTTP/1.1 to the keeper, which holds the TLS connection), nor does a direct
   call to an http:// URL with no proxy, yet curl_global_init initialises OpenSSL, and
   OpenSSL's initialisation reads and applies its configuration file
   (/usr/lib/ssl/openssl.cnf: ~0.8 M instructions and 8 system calls of a keeper call's
   ~15.9 M; Benchmarks/floor.py). When the first load is for such a call
   (ccurl_load_plain), OpenSSL is initialised first with OPENSSL_INIT_NO_LOAD_CONFIG, which
   marks its one-time configuration step done, so libcurl's own OPENSSL_init_ssl reads no
   file; the first ccurl_load() afterwards (any direct transfer, which may do TLS, and the
   keeper server) then loads that same file as OpenSSL's automatic step would have:
   CONF_modules_load_file(NULL, NULL, DEFAULT_CONF_MFLAGS), the default file (OPENSSL_CONF
   or OPENSSLDIR/openssl.cnf), its default section, a missing file and module errors
   ignored, before any TLS context exists, since libcurl makes one per connection. Only for
   OpenSSL 3 (whose init.c and conf_sap.c this follows); with anything else the load is
   ccurl_load's. */
static int defer_requested = 0;
static int tls_config_deferred = 0;
static pthread_once_t tls_config_once = PTHREAD_ONCE_INIT;
typedef int (*openssl_init_crypto_fn)(uint64_t options, const void *settings);
typedef int (*openssl_conf_load_fn)(const char *file, const char *appname, unsigned long flags);
typedef unsigned long (*openssl_version_num_fn)(void);
static openssl_conf_load_fn openssl_conf_load;
#define CCURL_OPENSSL_INIT_NO_LOAD_CONFIG 0x00000080UL
/* CONF_MFLAGS_DEFAULT_SECTION | CONF_MFLAGS_IGNORE_MISSING_FILE | CONF_MFLAGS_IGNORE_RETURN_CODES */
#define CCURL_OPENSSL_DEFAULT_CONF_MFLAGS (0x20UL | 0x10UL | 0x2UL)

static void defer_openssl_config(void *library) {
    openssl_version_num_fn version;
    openssl_init_crypto_fn init;
    openssl_conf_load_fn conf_load;
    *(void **)(&version) = dlsym(library, "OpenSSL_version_num");
    *(void **)(&init) = dlsym(library, "OPENSSL_init_crypto");
    *(void **)(&conf_load) = dlsym(library, "CONF_modules_load_file");
    if (!version || !init || !conf_load || version() < 0x30000000UL || version() >= 0x40000000UL) return;
    if (init(CCURL_OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1) return;
    openssl_conf_load = conf_load;
    tls_config_deferred = 1;
}

static void load_tls_config(void) {
    (void)openssl_conf_load(NULL, NULL, CCURL_OPENSSL_DEFAULT_CONF_MFLAGS);
}

/* The system's libcurl is opened RTLD_LAZY, as the dynamic loader treats a program's own
   libraries: the functions of its dependencies are bound when first called, not all
   ~10,000 at load, and a small request costs 2.7 M instructions (~0.4 ms) less
   (Benchmarks/floor.py). Libraries built with BIND_NOW (libcurl, libssl, libcrypto here)
   are bound at load either way, and a library that cannot be found still fails here. A
   library named by DOUCTL_LIBCURL is bound whole at load (RTLD_NOW), so one that lacks a
   function fails here with the loader's reason, not in the middle of a request. */
static const int open_flags = RTLD_LAZY | RTLD_LOCAL;

/* Issue 44: on Linux libcurl is opened RTLD_DEEPBIND as well, so the ~9,000 symbols that
   libcurl and its ~30 libraries look up in each other are searched for in their own scope
   first, as a program linked with -lcurl searches them, instead of passing douctl's global
   scope (the executable, libm, libc, the loader) before each. A small GET runs ~1.2 M
   fewer instructions in the loader (Benchmarks/floor.py). douctl exports no symbols
   (--no-export-dynamic), so nothing of the executable's is bypassed; what would be is an
   LD_PRELOAD library (torsocks, proxychains and the like replace connect() for libcurl),
   so with LD_PRELOAD naming a library or /etc/ld.so.preload present libcurl is opened as
   before. Valgrind's own preloads (vgpreload_*) do not count: valgrind redirects the
   functions it replaces itself, whatever the loader binds. Not under a sanitizer either,
   whose runtime must see every call and refuses DEEPBIND. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define CCURL_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CCURL_SANITIZED 1
#endif

#if defined(RTLD_DEEPBIND) && !defined(__APPLE__) && !defined(CCURL_SANITIZED)
#define CCURL_DEEPBIND 1
/* Whether LD_PRELOAD names a library other than valgrind's. */
static int interposing_preload(void) {
    const char *list = getenv("LD_PRELOAD");
    for (const char *entry = list ? list : ""; *entry;) {
        size_t length = strcspn(entry, ": \t");
        if (length > 0) {
            const char *base = entry;
            for (size_t i = 0; i < length; i++) if (entry[i] == '/') base = entry + i + 1;
            if ((size_t)(entry + length - base) < 10 || strncmp(base, "vgpreload_", 10) != 0) return 1;
        }
        entry += length;
        if (*entry) entry++;
    }
    return 0;
}
#endif

static int libcurl_open_flags(void) {
#if defined(CCURL_DEEPBIND)
    if (!interposing_preload() && access("/etc/ld.so.preload", F_OK) != 0) return open_flags | RTLD_DEEPBIND;
#endif
    return open_flags;
}

/* Issue 39: a library is loaded only from where the system keeps libraries, never from
   beside the executable or the working directory. dlopen of a bare name would search the
   calling object's RUNPATH first, and SwiftPM links executables with $ORIGIN in it (a debug
   build always; a release build unless --disable-local-rpath), so a libcurl.so.4 planted
   next to a copy of douctl would run its constructor on `douctl --version`. Instead each
   candidate is opened by absolute path, from, in order: LD_LIBRARY_PATH's absolute
   entries (the person's own choice, as for every program; an empty or relative entry,
   which would mean the working directory, is skipped), the directories of
   /etc/ld.so.conf and the files it includes (what ldconfig caches), then the standard
   directories. `override` (DOUCTL_LIBCURL, DOUCTL_LIBJQ) must be an absolute path. */
#if !defined(__APPLE__)
#include <glob.h>
#include <string.h>
#include <sys/auxv.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

#if defined(__x86_64__)
#define CCURL_TRIPLET "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define CCURL_TRIPLET "aarch64-linux-gnu"
#elif defined(__arm__)
#define CCURL_TRIPLET "arm-linux-gnueabihf"
#elif defined(__i386__)
#define CCURL_TRIPLET "i386-linux-gnu"
#elif defined(__riscv)
#define CCURL_TRIPLET "riscv64-linux-gnu"
#elif defined(__powerpc64__)
#define CCURL_TRIPLET "powerpc64le-linux-gnu"
#elif defined(__s390x__)
#define CCURL_TRIPLET "s390x-linux-gnu"
#else
#define CCURL_TRIPLET "unknown-linux-gnu"
#endif

/* dlopen, or with CCURL_TRUSTED_FIND_ONLY in `flags` only whether the file is there to open
   (a non-NULL marker that is no handle): what ccurl_trusted_find answers with. */
static void *attempt(const char *path, int flags) {
    static char found;
    if (flags & CCURL_TRUSTED_FIND_ONLY) return access(path, R_OK) == 0 ? &found : NULL;
    return dlopen(path, flags);
}

static void *open_in(const char *directory, size_t length, const char *name, int flags) {
    char path[4096];
    if (length == 0 || directory[0] != '/' || length + strlen(name) + 2 > sizeof path) return NULL;
    memcpy(path, directory, length);
    path[length] = '/';
    strcpy(path + length + 1, name);
    return attempt(path, flags);
}

/* The directories named in one ld.so.conf-style file, `include` globs followed (a few
   levels deep, so a loop of includes ends). */
static void *open_from_conf(const char *file, const char *name, int flags, int depth) {
    if (depth > 4) return NULL;
    FILE *conf = fopen(file, "r");
    if (!conf) return NULL;
    char line[4096];
    void *library = NULL;
    while (!library && fgets(line, sizeof line, conf)) {
        char *text = line;
        char *hash = strchr(text, '#');
        if (hash) *hash = 0;
        while (*text == ' ' || *text == '\t') text++;
        size_t length = strlen(text);
        while (length > 0 && (text[length - 1] == '\n' || text[length - 1] == ' ' || text[length - 1] == '\t' || text[length - 1] == '\r')) text[--length] = 0;
        if (length == 0) continue;
        if (strncmp(text, "include", 7) == 0 && (text[7] == ' ' || text[7] == '\t')) {
            char *pattern = text + 8;
            while (*pattern == ' ' || *pattern == '\t') pattern++;
            if (*pattern != '/') continue;
            glob_t found;
            if (glob(pattern, 0, NULL, &found) == 0) {
                for (size_t i = 0; !library && i < found.gl_pathc; i++) library = open_from_conf(found.gl_pathv[i], name, flags, depth + 1);
            }
            globfree(&found);
            continue;
        }
        library = open_in(text, length, name, flags);
    }
    fclose(conf);
    return library;
}

/* Issue 44: ldconfig's cache, /etc/ld.so.cache, lists the libraries of /etc/ld.so.conf's
   directories and the standard ones, each name with its path, in the order the loader
   prefers them. One read of it stands in for reading ld.so.conf and its includes and trying
   each directory (~15 system calls before libcurl). Only this machine's ABI's entries are
   taken, none for a hardware-capability subdirectory, and only an absolute path; anything
   else (no cache, another format, a name it lacks, a stale path) leaves the directory walk
   below to find the library as before. */
#if defined(__x86_64__)
#define CCURL_CACHE_ABI 0x0303 /* FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 */
#elif defined(__aarch64__)
#define CCURL_CACHE_ABI 0x0a03 /* FLAG_ELF_LIBC6 | FLAG_AARCH64_LIB64 */
#endif

static void *open_from_cache(const char *name, int flags) {
#if defined(CCURL_CACHE_ABI)
    enum { header = 48, entry_size = 24 }; /* struct cache_file_new, struct file_entry_new */
    int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    /* Mapped, not read: its pages are the page cache's, shared with the loader's own
       mapping of it, and nothing is copied into fresh heap pages. */
    struct stat info;
    const unsigned char *cache = NULL;
    size_t size = 0;
    if (fstat(fd, &info) == 0 && info.st_size >= header && info.st_size < (64 << 20)) {
        size = (size_t)info.st_size;
        void *mapped = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapped != MAP_FAILED) cache = mapped;
    }
    close(fd);
    if (!cache) return NULL;
    void *library = NULL;
    uint32_t count = 0;
    if (memcmp(cache, "glibc-ld.so.cache1.1", 20) == 0) memcpy(&count, cache + 20, sizeof count);
    if (count > (size - header) / entry_size) count = 0;
    for (uint32_t i = 0; i < count && !library; i++) {
        const unsigned char *entry = cache + header + (size_t)i * entry_size;
        int32_t abi;
        uint32_t key, value;
        uint64_t hwcap;
        memcpy(&abi, entry, 4);
        memcpy(&key, entry + 4, 4);
        memcpy(&value, entry + 8, 4);
        memcpy(&hwcap, entry + 16, 8);
        if (abi != CCURL_CACHE_ABI || hwcap != 0 || key >= size || value >= size) continue;
        /* Both strings must end inside the file. */
        size_t name_length = strlen(name);
        if (size - key <= name_length || memcmp(cache + key, name, name_length + 1) != 0) continue;
        const char *path = (const char *)cache + value;
        size_t path_length = strnlen(path, size - value);
        if (path_length == size - value || path[0] != '/') continue;
        library = attempt(path, flags);
    }
    munmap((void *)cache, size);
    return library;
#else
    (void)name;
    (void)flags;
    return NULL;
#endif
}

void *ccurl_trusted_dlopen(const char *override, const char *variable, const char *const *names, int flags, char *reason, size_t reason_size) {
    if (override && *override) {
        if (override[0] != '/') {
            snprintf(reason, reason_size, "%s must be an absolute path, not '%.200s'", variable, override);
            return NULL;
        }
        void *library = dlopen(override, RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            const char *said = dlerror();
            snprintf(reason, reason_size, "%s", said ? said : "not found");
        }
        return library;
    }
    static const char *const standard[] = {
        "/lib/" CCURL_TRIPLET, "/usr/lib/" CCURL_TRIPLET, "/lib64", "/usr/lib64", "/lib", "/usr/lib",
        "/usr/local/lib/" CCURL_TRIPLET, "/usr/local/lib", NULL};
    for (int n = 0; names[n]; n++) {
        const char *paths = getenv("LD_LIBRARY_PATH");
        if (paths && getauxval(AT_SECURE) == 0) {
            for (const char *entry = paths; *entry;) {
                size_t length = strcspn(entry, ":;");
                void *library = open_in(entry, length, names[n], flags);
                if (library) return library;
                entry += length;
                if (*entry) entry++;
            }
        }
        void *library = open_from_cache(names[n], flags);
        if (library) return library;
        library = open_from_conf("/etc/ld.so.conf", names[n], flags, 0);
        if (library) return library;
        for (int i = 0; standard[i]; i++) {
            library = open_in(standard[i], strlen(standard[i]), names[n], flags);
            if (library) return library;
        }
    }
    snprintf(reason, reason_size, "%s not found in LD_LIBRARY_PATH, /etc/ld.so.conf's directories or /usr/lib; install it, or set %s to its absolute path", names[0], variable);
    return NULL;
}
#endif

int ccurl_trusted_find(const char *const *names) {
#if defined(__linux__)
    char reason[8];
    return ccurl_trusted_dlopen(NULL, NULL, names, CCURL_TRUSTED_FIND_ONLY, reason, sizeof reason) != NULL;
#else
    (void)names;
    return 1;
#endif
}

void *ccurl_open_system_library(const char *variable, const char *what, const char *const *apple_names, const char *const *linux_names, int flags, char *error, size_t error_size) {
    const char *override = getenv(variable);
    void *library = NULL;
#if defined(__APPLE__)
    (void)linux_names;
    if (override && *override) {
        library = dlopen(override, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (int i = 0; apple_names[i] && !library; i++) library = dlopen(apple_names[i], flags);
    }
    const char *reason = library ? NULL : dlerror();
#else
    (void)apple_names;
    char why[400] = "not found";
    library = ccurl_trusted_dlopen(override, variable, linux_names, flags, why, sizeof why);
    const char *reason = why;
#endif
    if (!library) snprintf(error, error_size, "cannot load %s (%s)", what, reason ? reason : "not found");
    return library;
}

static void *open_library(void) {
    static const char *const apple_names[] = {"libcurl.4.dylib", "/usr/lib/libcurl.4.dylib", NULL};
    static const char *const linux_names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so", NULL};
    return ccurl_open_system_library("DOUCTL_LIBCURL", "libcurl", apple_names, linux_names, libcurl_open_flags(), load_error, sizeof load_error);
}

#define RESOLVE(field, symbol) CCURL_RESOLVE(library, curl.field, symbol, "libcurl", load_error)

static void load(void) {
    void *library = open_library();
    if (!library) return;
    loaded_library = library;
    RESOLVE(global_init, "curl_global_init");
    RESOLVE(version, "curl_version");
    RESOLVE(easy_init, "curl_easy_init");
    RESOLVE(easy_cleanup, "curl_easy_cleanup");
    RESOLVE(easy_reset, "curl_easy_reset");
    RESOLVE(easy_perform, "curl_easy_perform");
    RESOLVE(easy_strerror, "curl_easy_strerror");
    RESOLVE(easy_setopt, "curl_easy_setopt");
    RESOLVE(easy_getinfo, "curl_easy_getinfo");
    RESOLVE(slist_append, "curl_slist_append");
    RESOLVE(slist_free_all, "curl_slist_free_all");
    RESOLVE(easy_send, "curl_easy_send");
    RESOLVE(easy_recv, "curl_easy_recv");
    if (__atomic_load_n(&defer_requested, __ATOMIC_ACQUIRE)) defer_openssl_config(library);
    if (curl.global_init(3 /* CURL_GLOBAL_ALL */) != 0) {
        snprintf(load_error, sizeof load_error, "curl_global_init failed");
        return;
    }
    load_status = 0;
}

/* Loads libcurl; OpenSSL's configuration stays as the first load left it. */
static int loaded(void) {
    pthread_once(&load_once, load);
    return load_status;
}

int ccurl_load(void) {
    int status = loaded();
    if (status == 0 && tls_config_deferred) pthread_once(&tls_config_once, load_tls_config);
    return status;
}

int ccurl_load_plain(void) {
    __atomic_store_n(&defer_requested, 1, __ATOMIC_RELEASE);
    return loaded();
}

const char *ccurl_load_error(void) { return load_status == 0 ? NULL : load_error; }

const char *ccurl_version(void) { return loaded() == 0 ? curl.version() : NULL; }

void *ccurl_easy_init(void) { return loaded() == 0 ? curl.easy_init() : NULL; }
void ccurl_easy_cleanup(void *handle) { if (handle) curl.easy_cleanup(handle); }
void ccurl_easy_reset(void *handle) { if (handle) curl.easy_reset(handle); }
int ccurl_easy_perform(void *handle) { return curl.easy_perform(handle); }
const char *ccurl_easy_strerror(int code) {
    return loaded() == 0 ? curl.easy_strerror(code) : "libcurl not loaded";
}

int ccurl_setopt_long(void *handle, int option, long value) {
    return curl.easy_setopt(handle, option, value);
}
int ccurl_setopt_string(void *handle, int option, const char *value) {
    return curl.easy_setopt(handle, option, value);
}
int ccurl_setopt_pointer(void *handle, int option, void *value) {
    return curl.easy_setopt(handle, option, value);
}
int ccurl_setopt_offset(void *handle, int option, int64_t value) {
    return curl.easy_setopt(handle, option, (long long)value);
}
int ccurl_setopt_data_callback(void *handle, int option, ccurl_data_callback callback) {
    return curl.easy_setopt(handle, option, callback);
}
int ccurl_setopt_progress_callback(void *handle, ccurl_progress_callback callback) {
    return curl.easy_setopt(handle, CCURLOPT_XFERINFOFUNCTION, callback);
}
int ccurl_setopt_debug_callback(void *handle, ccurl_debug_callback callback) {
    return curl.easy_setopt(handle, CCURLOPT_DEBUGFUNCTION, callback);
}
int ccurl_setopt_seek_callback(void *handle, ccurl_seek_callback callback) {
    return curl.easy_setopt(handle, CCURLOPT_SEEKFUNCTION, callback);
}

int ccurl_getinfo_long(void *handle, int info, long *value) {
    return curl.easy_getinfo(handle, info, value);
}
int ccurl_getinfo_offset(void *handle, int info, int64_t *value) {
    long long wide = 0;
    int result = curl.easy_getinfo(handle, info, &wide);
    *value = (int64_t)wide;
    return result;
}

void *ccurl_slist_append(void *list, const char *string) {
    return loaded() == 0 ? curl.slist_append(list, string) : NULL;
}
void ccurl_slist_free_all(void *list) { if (list) curl.slist_free_all(list); }

// MARK: - the keeper

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#define CCURLOPT_OPENSOCKETFUNCTION  20163
#define CCURLOPT_OPENSOCKETDATA      10164
#define CCURLOPT_CLOSESOCKETFUNCTION 20208
#define CCURLOPT_CLOSESOCKETDATA     10209
#define CCURLOPT_PREREQFUNCTION      20312
#define CCURLOPT_PREREQDATA          10313
#define CCURLINFO_ACTIVESOCKET       (0x500000 + 44)

int ccurl_setopt_socket_callbacks(void *handle, ccurl_opensocket_callback open, ccurl_prereq_callback ready, ccurl_closesocket_callback close, void *context) {
    int result = curl.easy_setopt(handle, CCURLOPT_OPENSOCKETFUNCTION, open);
    if (result == 0) result = curl.easy_setopt(handle, CCURLOPT_OPENSOCKETDATA, context);
    if (result == 0) result = curl.easy_setopt(handle, CCURLOPT_PREREQFUNCTION, ready);
    if (result == 0) result = curl.easy_setopt(handle, CCURLOPT_PREREQDATA, context);
    if (result == 0) result = curl.easy_setopt(handle, CCURLOPT_CLOSESOCKETFUNCTION, close);
    if (result == 0) result = curl.easy_setopt(handle, CCURLOPT_CLOSESOCKETDATA, context);
    return result;
}

/* Closes every descriptor a received message passed (SCM_RIGHTS): the mark's /dev/null is
   never used, only seen. Returns 1 when the message carried any (it was a mark). */
static int keeper_close_passed_descriptors(struct msghdr *message) {
    int marked = 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(message); header; header = CMSG_NXTHDR(message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
            size_t fds = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t n = 0; n < fds; n++) {
                int passed;
                memcpy(&passed, CMSG_DATA(header) + n * sizeof(int), sizeof(int));
                close(passed);
            }
            marked = 1;
        }
    }
    return marked;
}

/* recvmsg on a client's socket with room for the descriptors a clean mark passes: those are
   closed (*marked set when there were any), and *truncated says the kernel dropped some. */
static ssize_t keeper_receive(int client, void *buffer, size_t size, int flags, int *marked, int *truncated) {
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int) * 4)]; } control;
    struct iovec vector = {buffer, size};
    struct msghdr message = {0};
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.space;
    message.msg_controllen = sizeof control.space;
    ssize_t got = recvmsg(client, &message, flags);
    if (got < 0) return got;
    *marked = keeper_close_passed_descriptors(&message);
    *truncated = (message.msg_flags & MSG_CTRUNC) != 0;
    return got;
}

/* The mark is one byte sent with a file descriptor (SCM_RIGHTS): a stream socket never
   delivers such a byte merged with later bytes, and libcurl never sends one, so the keeper
   cannot mistake request bytes for it. */
int ccurl_keeper_mark_clean(int socket) {
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0) return -1;
    char byte = 'K';
    struct iovec vector = {&byte, 1};
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {0};
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.space;
    message.msg_controllen = sizeof control.space;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &null, sizeof(int));
    ssize_t sent;
    do { sent = sendmsg(socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT); } while (sent < 0 && errno == EINTR);
    close(null);
    return sent == 1 ? 0 : -1;
}

int ccurl_easy_send(void *handle, const void *buffer, size_t length, size_t *sent) {
    return curl.easy_send(handle, buffer, length, sent);
}
int ccurl_easy_recv(void *handle, void *buffer, size_t length, size_t *received) {
    return curl.easy_recv(handle, buffer, length, received);
}

int ccurl_active_socket(void *handle) {
    int socket = -1;  /* curl_socket_t is an int on POSIX systems */
    if (curl.easy_getinfo(handle, CCURLINFO_ACTIVESOCKET, &socket) != 0) return -1;
    return socket;
}

int ccurl_keeper_alive(void *handle) {
    int socket = ccurl_active_socket(handle);
    if (socket < 0) return 0;
    char byte;
    size_t received = 0;
    /* A TLS 1.3 server sends session tickets after the handshake: libcurl reads them and
       says AGAIN. Plain bytes, an end or an error mean the connection cannot serve. */
    int result = curl.easy_recv(handle, &byte, 1, &received);
    return result == CCURLE_AGAIN;
}

static int write_all(int socket, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t written = send(socket, bytes, length, MSG_NOSIGNAL);
        if (written < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd wait = {socket, POLLOUT, 0};
                poll(&wait, 1, 1000);
                continue;
            }
            return -1;
        }
        bytes += written;
        length -= (size_t)written;
    }
    return 0;
}

static int send_upstream(void *handle, int upstream, const char *bytes, size_t length) {
    while (length > 0) {
        size_t sent = 0;
        int result = curl.easy_send(handle, bytes, length, &sent);
        if (result == CCURLE_AGAIN) {
            struct pollfd wait = {upstream, POLLOUT, 0};
            if (poll(&wait, 1, 60000) <= 0) return -1;
            continue;
        }
        if (result != 0) return -1;
        bytes += sent;
        length -= sent;
    }
    return 0;
}

/* Reads what the upstream has (TLS may hold decrypted bytes poll() cannot see, so it reads
   until libcurl says AGAIN) and writes it to the client. 1: more may come; 0: the upstream
   ended or failed. */
static int drain_upstream(int client, void *handle, char *buffer, size_t size, int clean, int64_t *traffic) {
    for (;;) {
        size_t received = 0;
        int result = curl.easy_recv(handle, buffer, size, &received);
        if (result == CCURLE_AGAIN) return 1;
        /* Bytes nobody asked for (after a clean end) spoil the connection. */
        if (result != 0 || received == 0 || clean) return 0;
        *traffic += (int64_t)received;
        if (write_all(client, buffer, received) != 0) return 0;
    }
}

static int keeper_relay(int client, void *handle, int64_t *traffic, int clean);

int ccurl_keeper_relay(int client, void *handle, int64_t *traffic) { return keeper_relay(client, handle, traffic, 1); }

/* A request already sent upstream by the caller: its reply is awaited, not unasked for. */
int ccurl_keeper_relay_sent(int client, void *handle, int64_t *traffic) { return keeper_relay(client, handle, traffic, 0); }

static int keeper_relay(int client, void *handle, int64_t *traffic, int clean) {
    int upstream = ccurl_active_socket(handle);
    if (upstream < 0) return 0;
    static const size_t size = 256 * 1024;
    char *buffer = malloc(size);
    if (!buffer) return 0;
    int outcome = 0;
    for (;;) {
        struct pollfd ready[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
        int count = poll(ready, 2, -1);
        if (count < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (ready[1].revents) {
            if (!drain_upstream(client, handle, buffer, size, clean, traffic)) { outcome = 0; break; }
        }
        if (ready[0].revents) {
            int marked = 0, truncated = 0;
            ssize_t got = keeper_receive(client, buffer, size, MSG_CMSG_CLOEXEC, &marked, &truncated);
            if (got < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                outcome = 0;
                break;
            }
            if (got == 0) { outcome = clean; break; }
            size_t payload = (size_t)got - (marked ? 1 : 0);
            if (payload > 0) {
                clean = 0;
                *traffic += (int64_t)payload;
                if (send_upstream(handle, upstream, buffer, payload) != 0) { outcome = 0; break; }
            }
            if (marked) clean = 1;
            if (truncated) { outcome = 0; break; }
        }
    }
    free(buffer);
    return outcome;
}

#include <sys/stat.h>
#include <sys/un.h>

static int unix_address(const char *path, struct sockaddr_un *address) {
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof address->sun_path) return -ENAMETOOLONG;
    strcpy(address->sun_path, path);
    return 0;
}

int ccurl_unix_connect(const char *path) {
    struct sockaddr_un address;
    int problem = unix_address(path, &address);
    if (problem) return problem;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int result;
    do { result = connect(fd, (struct sockaddr *)&address, sizeof address); } while (result < 0 && errno == EINTR);
    if (result < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

int ccurl_unix_listen(const char *path) {
    struct sockaddr_un address;
    int problem = unix_address(path, &address);
    if (problem) return problem;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    mode_t before = umask(0177);
    int result = bind(fd, (struct sockaddr *)&address, sizeof address);
    int error = errno;
    umask(before);
    if (result == 0 && chmod(path, 0600) != 0) { error = errno; result = -1; }
    if (result == 0 && listen(fd, 128) != 0) { error = errno; result = -1; }
    if (result < 0) {
        close(fd);
        return -error;
    }
    return fd;
}

long ccurl_peer_uid(int socket) {
#if defined(SO_PEERCRED) && !defined(__APPLE__)
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    return (long)credentials.uid;
#else
    uid_t uid;
    gid_t gid;
    if (getpeereid(socket, &uid, &gid) != 0) return -1;
    return (long)uid;
#endif
}

int ccurl_unix_accept(int listener) {
    int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

// MARK: - the keeper's HTTP/2 side (issue 44)

static pthread_once_t multi_once = PTHREAD_ONCE_INIT;
static int multi_status = 1;

static void load_multi(void) {
    if (ccurl_load() != 0 || !loaded_library) return;
    void *library = loaded_library;
#define MULTI_RESOLVE(field, symbol) do { *(void **)(&curl.field) = dlsym(library, symbol); if (!curl.field) return; } while (0)
    MULTI_RESOLVE(easy_pause, "curl_easy_pause");
    MULTI_RESOLVE(multi_init, "curl_multi_init");
    MULTI_RESOLVE(multi_cleanup, "curl_multi_cleanup");
    MULTI_RESOLVE(multi_setopt, "curl_multi_setopt");
    MULTI_RESOLVE(multi_add_handle, "curl_multi_add_handle");
    MULTI_RESOLVE(multi_remove_handle, "curl_multi_remove_handle");
    MULTI_RESOLVE(multi_perform, "curl_multi_perform");
    MULTI_RESOLVE(multi_poll, "curl_multi_poll");
    MULTI_RESOLVE(multi_wakeup, "curl_multi_wakeup");
    MULTI_RESOLVE(multi_info_read, "curl_multi_info_read");
#undef MULTI_RESOLVE
    multi_status = 0;
}

int ccurl_multi_load(void) {
    pthread_once(&multi_once, load_multi);
    return multi_status;
}

#define CCURLMOPT_PIPELINING 3
#define CCURLMOPT_MAX_HOST_CONNECTIONS 7
#define CCURLPIPE_MULTIPLEX 2

void *ccurl_multi_init_multiplexed(void) {
    if (ccurl_multi_load() != 0) return NULL;
    void *multi = curl.multi_init();
    if (!multi) return NULL;
    if (curl.multi_setopt(multi, CCURLMOPT_PIPELINING, (long)CCURLPIPE_MULTIPLEX) != 0) {
        curl.multi_cleanup(multi);
        return NULL;
    }
    return multi;
}
void ccurl_multi_cleanup(void *multi) { if (multi) curl.multi_cleanup(multi); }
int ccurl_multi_add(void *multi, void *handle) { return curl.multi_add_handle(multi, handle); }
int ccurl_multi_remove(void *multi, void *handle) { return curl.multi_remove_handle(multi, handle); }
int ccurl_multi_perform(void *multi, int *running) { return curl.multi_perform(multi, running); }
int ccurl_multi_wakeup(void *multi) { return curl.multi_wakeup(multi); }
int ccurl_easy_pause(void *handle, int bitmask) { return curl.easy_pause(handle, bitmask); }

/* struct curl_waitfd { curl_socket_t fd; short events; short revents; } matches struct
   pollfd on POSIX, field for field. */
int ccurl_multi_poll(void *multi, struct pollfd *extra, unsigned int count, int milliseconds) {
    int ready = 0;
    return curl.multi_poll(multi, extra, count, milliseconds, &ready);
}

/* struct CURLMsg { CURLMSG msg; CURL *easy_handle; union { void *whatever; CURLcode result; } data; } */
struct ccurl_message { int msg; void *easy; union { void *whatever; int result; } data; };

void *ccurl_multi_done(void *multi, int *result) {
    int left = 0;
    struct ccurl_message *message;
    while ((message = curl.multi_info_read(multi, &left))) {
        if (message->msg == 1 /* CURLMSG_DONE */) {
            *result = message->data.result;
            return message->easy;
        }
    }
    return NULL;
}

/* What ALPN chose, read from libcurl's own lines ("ALPN: server accepted h2" in 7.88 and
   8.x, "ALPN, server accepted to use h2" before): 2 for h2, 1 for http/1.1 or no ALPN at
   all, left 0 when nothing was said (the caller then cannot tell, and offers http/1.1 alone). */
static int alpn_watch(void *handle, int kind, char *data, size_t size, void *context) {
    (void)handle;
    if (kind != 0 /* CURLINFO_TEXT */ || !context) return 0;
    int *outcome = context;
    char line[160];
    size_t length = size < sizeof line - 1 ? size : sizeof line - 1;
    memcpy(line, data, length);
    line[length] = 0;
    while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r' || line[length - 1] == ' ')) line[--length] = 0;
    if (strncmp(line, "ALPN", 4) != 0) return 0;
    if (strstr(line, "accepted")) {
        if (length >= 3 && strcmp(line + length - 3, " h2") == 0) *outcome = 2;
        else if (length >= 9 && strcmp(line + length - 9, " http/1.1") == 0) *outcome = 1;
    } else if (strstr(line, "did not agree")) {
        *outcome = 1;
    }
    return 0;
}

int ccurl_setopt_alpn_watch(void *handle, int *outcome) {
    int result = curl.easy_setopt(handle, CCURLOPT_DEBUGFUNCTION, alpn_watch);
    if (result == 0) result = curl.easy_setopt(handle, CCURLOPT_DEBUGDATA, (void *)outcome);
    if (result == 0) result = curl.easy_setopt(handle, CCURLOPT_VERBOSE, 1L);
    return result;
}

/* recv on a client's socket that drops the clean-exchange mark (a byte carrying a file
   descriptor, ccurl_keeper_mark_clean) and closes what it carried. The bytes read, 0 at
   the end, -errno on failure. */
long ccurl_keeper_read(int client, void *buffer, size_t size) {
    for (;;) {
        int marked = 0, truncated = 0;
        ssize_t got = keeper_receive(client, buffer, size, MSG_CMSG_CLOEXEC | MSG_DONTWAIT, &marked, &truncated);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (got == 0) return 0;
        if (marked) got -= 1;
        if (got == 0) continue;
        return got;
    }
}
