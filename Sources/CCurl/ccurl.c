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

static void *open_library(void) {
    const char *override = getenv("DOUCTL_LIBCURL");
    if (override && *override) {
        return dlopen(override, RTLD_NOW | RTLD_LOCAL);
    }
#if defined(__APPLE__)
    const char *candidates[] = {"libcurl.4.dylib", "/usr/lib/libcurl.4.dylib", NULL};
#else
    const char *candidates[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so", NULL};
#endif
    for (int i = 0; candidates[i]; i++) {
        void *library = dlopen(candidates[i], open_flags);
        if (library) return library;
    }
    return NULL;
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
        const char *reason = dlerror();
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
