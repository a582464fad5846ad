#include "ccurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

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
} curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_status = 1;
static char load_error[512] = "libcurl was not loaded";

/* The system's libcurl is opened RTLD_LAZY, as the dynamic loader treats a program's own
   libraries: the functions of its dependencies are bound when first called, not all
   ~10,000 at load, and a small request costs 2.7 M instructions (~0.4 ms) less
   (Benchmarks/floor.py). Libraries built with BIND_NOW (libcurl, libssl, libcrypto here)
   are bound at load either way, and a library that cannot be found still fails here. A
   library named by DOUCTL_LIBCURL is bound whole at load (RTLD_NOW), so one that lacks a
   function fails here with the loader's reason, not in the middle of a request. */
static const int open_flags = RTLD_LAZY | RTLD_LOCAL;

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

static void *open_in(const char *directory, size_t length, const char *name, int flags) {
    char path[4096];
    if (length == 0 || directory[0] != '/' || length + strlen(name) + 2 > sizeof path) return NULL;
    memcpy(path, directory, length);
    path[length] = '/';
    strcpy(path + length + 1, name);
    return dlopen(path, flags);
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
        void *library = open_from_conf("/etc/ld.so.conf", names[n], flags, 0);
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

static char open_reason[400] = "not found";

static void *open_library(void) {
    const char *override = getenv("DOUCTL_LIBCURL");
#if defined(__APPLE__)
    if (override && *override) {
        return dlopen(override, RTLD_NOW | RTLD_LOCAL);
    }
    const char *candidates[] = {"libcurl.4.dylib", "/usr/lib/libcurl.4.dylib", NULL};
    for (int i = 0; candidates[i]; i++) {
        void *library = dlopen(candidates[i], open_flags);
        if (library) return library;
    }
    return NULL;
#else
    static const char *const candidates[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so", NULL};
    return ccurl_trusted_dlopen(override, "DOUCTL_LIBCURL", candidates, open_flags, open_reason, sizeof open_reason);
#endif
}

#define RESOLVE(field, symbol)                                                       \
    do {                                                                             \
        *(void **)(&curl.field) = dlsym(library, symbol);                            \
        if (!curl.field) {                                                           \
            snprintf(load_error, sizeof load_error, "libcurl lacks %s", symbol);     \
            return;                                                                  \
        }                                                                            \
    } while (0)

static void load(void) {
    void *library = open_library();
    if (!library) {
#if defined(__APPLE__)
        const char *reason = dlerror();
#else
        const char *reason = open_reason;
#endif
        snprintf(load_error, sizeof load_error, "cannot load libcurl (%s)",
                 reason ? reason : "not found");
        return;
    }
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
    if (curl.global_init(3 /* CURL_GLOBAL_ALL */) != 0) {
        snprintf(load_error, sizeof load_error, "curl_global_init failed");
        return;
    }
    load_status = 0;
}

int ccurl_load(void) {
    pthread_once(&load_once, load);
    return load_status;
}

const char *ccurl_load_error(void) { return load_status == 0 ? NULL : load_error; }

const char *ccurl_version(void) { return ccurl_load() == 0 ? curl.version() : NULL; }

void *ccurl_easy_init(void) { return ccurl_load() == 0 ? curl.easy_init() : NULL; }
void ccurl_easy_cleanup(void *handle) { if (handle) curl.easy_cleanup(handle); }
void ccurl_easy_reset(void *handle) { if (handle) curl.easy_reset(handle); }
int ccurl_easy_perform(void *handle) { return curl.easy_perform(handle); }
const char *ccurl_easy_strerror(int code) {
    return ccurl_load() == 0 ? curl.easy_strerror(code) : "libcurl not loaded";
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
    return ccurl_load() == 0 ? curl.slist_append(list, string) : NULL;
}
void ccurl_slist_free_all(void *list) { if (list) curl.slist_free_all(list); }
