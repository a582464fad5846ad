#include "cjq.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// jq's value type, as jv.h declares it (16 bytes, passed by value; the same in 1.6 and 1.7).
typedef struct {
    unsigned char kind_flags;
    unsigned char pad_;
    unsigned short offset;
    int size;
    union {
        void *ptr;
        double number;
    } u;
} jv;

enum { JV_KIND_INVALID = 0, JV_KIND_STRING = 5 };

typedef struct jq_state jq_state;
typedef struct jv_parser jv_parser;

static struct {
    jq_state *(*jq_init)(void);
    void (*jq_set_error_cb)(jq_state *, void (*)(void *, jv), void *);
    int (*jq_compile_args)(jq_state *, const char *, jv);
    void (*jq_start)(jq_state *, jv, int);
    jv (*jq_next)(jq_state *);
    void (*jq_teardown)(jq_state **);
    jv (*jv_copy)(jv);
    void (*jv_free)(jv);
    int (*jv_get_kind)(jv);
    jv (*jv_invalid_get_msg)(jv);
    int (*jv_invalid_has_msg)(jv);
    const char *(*jv_string_value)(jv);
    int (*jv_string_length_bytes)(jv);
    jv (*jv_string_sized)(const char *, int);
    jv (*jv_object)(void);
    jv (*jv_object_set)(jv, jv, jv);
    jv (*jv_parse_sized)(const char *, int);
    jv (*jv_dump_string)(jv, int);
    jv_parser *(*jv_parser_new)(int);
    void (*jv_parser_set_buf)(jv_parser *, const char *, int, int);
    jv (*jv_parser_next)(jv_parser *);
    void (*jv_parser_free)(jv_parser *);
} jq;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_status = 1;
static char load_error[512] = "libjq was not loaded";

static void *open_library(void) {
    const char *override = getenv("DOUCTL_LIBJQ");
    if (override && *override) return dlopen(override, RTLD_NOW | RTLD_LOCAL);
#if defined(__APPLE__)
    const char *candidates[] = {"libjq.1.dylib", "/usr/local/lib/libjq.1.dylib", "/opt/homebrew/lib/libjq.1.dylib", NULL};
#else
    const char *candidates[] = {"libjq.so.1", "libjq.so", NULL};
#endif
    for (int i = 0; candidates[i]; i++) {
        void *library = dlopen(candidates[i], RTLD_LAZY | RTLD_LOCAL);
        if (library) return library;
    }
    return NULL;
}

#define RESOLVE(name)                                                                  \
    do {                                                                               \
        *(void **)(&jq.name) = dlsym(library, #name);                                  \
        if (!jq.name) {                                                                \
            snprintf(load_error, sizeof load_error, "libjq lacks %s", #name);          \
            return;                                                                    \
        }                                                                              \
    } while (0)

static void load(void) {
    void *library = open_library();
    if (!library) {
        const char *reason = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load libjq (%s)", reason ? reason : "not found");
        return;
    }
    RESOLVE(jq_init);
    RESOLVE(jq_set_error_cb);
    RESOLVE(jq_compile_args);
    RESOLVE(jq_start);
    RESOLVE(jq_next);
    RESOLVE(jq_teardown);
    RESOLVE(jv_copy);
    RESOLVE(jv_free);
    RESOLVE(jv_get_kind);
    RESOLVE(jv_invalid_get_msg);
    RESOLVE(jv_invalid_has_msg);
    RESOLVE(jv_string_value);
    RESOLVE(jv_string_length_bytes);
    RESOLVE(jv_string_sized);
    RESOLVE(jv_object);
    RESOLVE(jv_object_set);
    RESOLVE(jv_parse_sized);
    RESOLVE(jv_dump_string);
    RESOLVE(jv_parser_new);
    RESOLVE(jv_parser_set_buf);
    RESOLVE(jv_parser_next);
    RESOLVE(jv_parser_free);
    load_status = 0;
}

int cjq_load(void) {
    pthread_once(&load_once, load);
    return load_status;
}

const char *cjq_load_error(void) { return load_status == 0 ? NULL : load_error; }

struct cjq_filter {
    jq_state *state;
    jv_parser *parser;
    /// The first compile message, for the one error line.
    char message[512];
};

/// The first line of `text`, without jq's "jq: error: " prefix, into `out`.
static void first_line(const char *text, size_t length, char *out, size_t size) {
    static const char prefix[] = "jq: error: ";
    if (length >= sizeof prefix - 1 && memcmp(text, prefix, sizeof prefix - 1) == 0) {
        text += sizeof prefix - 1;
        length -= sizeof prefix - 1;
    }
    size_t end = 0;
    while (end < length && text[end] != '\n' && text[end] != '\r') end++;
    if (end >= size) end = size - 1;
    memcpy(out, text, end);
    out[end] = 0;
}

/// A message jv (consumed) as one line: a string as it is, anything else as compact JSON.
static void message_line(jv message, char *out, size_t size) {
    if (jq.jv_get_kind(message) != JV_KIND_STRING) message = jq.jv_dump_string(message, 0);
    const char *text = jq.jv_string_value(message);
    first_line(text, strlen(text), out, size);
    jq.jv_free(message);
}

static void compile_error(void *context, jv message) {
    struct cjq_filter *filter = context;
    if (filter->message[0] == 0 && jq.jv_get_kind(message) == JV_KIND_STRING) {
        const char *text = jq.jv_string_value(message);
        first_line(text, strlen(text), filter->message, sizeof filter->message);
        jq.jv_free(message);
        return;
    }
    jq.jv_free(message);
}

cjq_filter *cjq_filter_new(const char *program, int count, const char *const *names, const char *const *values,
                           const int *json, char *error, size_t error_size) {
    if (cjq_load() != 0) {
        snprintf(error, error_size, "%s", load_error);
        return NULL;
    }
    struct cjq_filter *filter = calloc(1, sizeof *filter);
    if (!filter) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    filter->state = jq.jq_init();
    if (!filter->state) {
        free(filter);
        snprintf(error, error_size, "jq_init failed");
        return NULL;
    }
    jq.jq_set_error_cb(filter->state, compile_error, filter);
    jv arguments = jq.jv_object();
    for (int i = 0; i < count; i++) {
        jv value;
        if (json[i]) {
            value = jq.jv_parse_sized(values[i], (int)strlen(values[i]));
            if (jq.jv_get_kind(value) == JV_KIND_INVALID) {
                char reason[256] = "not JSON";
                if (jq.jv_invalid_has_msg(jq.jv_copy(value))) message_line(jq.jv_invalid_get_msg(value), reason, sizeof reason);
                else jq.jv_free(value);
                snprintf(error, error_size, "invalid JSON for --argjson %s: %s", names[i], reason);
                jq.jv_free(arguments);
                cjq_filter_free(filter);
                return NULL;
            }
        } else {
            value = jq.jv_string_sized(values[i], (int)strlen(values[i]));
        }
        arguments = jq.jv_object_set(arguments, jq.jv_string_sized(names[i], (int)strlen(names[i])), value);
    }
    if (!jq.jq_compile_args(filter->state, program, arguments)) {
        snprintf(error, error_size, "%s", filter->message[0] ? filter->message : "the program does not compile");
        cjq_filter_free(filter);
        return NULL;
    }
    filter->parser = jq.jv_parser_new(0);
    if (!filter->parser) {
        snprintf(error, error_size, "jv_parser_new failed");
        cjq_filter_free(filter);
        return NULL;
    }
    return filter;
}

/// Runs the program on one input (consumed), emitting each result.
static int run(struct cjq_filter *filter, jv input, cjq_emit emit, void *context, char *error, size_t error_size) {
    jq.jq_start(filter->state, input, 0);
    for (;;) {
        jv result = jq.jq_next(filter->state);
        if (jq.jv_get_kind(result) == JV_KIND_INVALID) {
            if (!jq.jv_invalid_has_msg(jq.jv_copy(result))) {
                jq.jv_free(result);
                return CJQ_OK;
            }
            message_line(jq.jv_invalid_get_msg(result), error, error_size);
            return CJQ_RUNTIME_ERROR;
        }
        // As `jq -r` prints: a string's bytes unquoted, anything else as `jq -c` does.
        if (jq.jv_get_kind(result) != JV_KIND_STRING) result = jq.jv_dump_string(result, 0);
        const char *text = jq.jv_string_value(result);
        int length = jq.jv_string_length_bytes(jq.jv_copy(result));
        int going = emit(context, text, (size_t)length) && emit(context, "\n", 1);
        jq.jv_free(result);
        if (!going) return CJQ_STOPPED;
    }
}

/// Drains the parser of every value the bytes given so far complete.
static int drain(struct cjq_filter *filter, cjq_emit emit, void *context, char *error, size_t error_size) {
    for (;;) {
        jv value = jq.jv_parser_next(filter->parser);
        if (jq.jv_get_kind(value) == JV_KIND_INVALID) {
            if (!jq.jv_invalid_has_msg(jq.jv_copy(value))) {
                jq.jv_free(value);
                return CJQ_OK;
            }
            message_line(jq.jv_invalid_get_msg(value), error, error_size);
            return CJQ_INPUT_ERROR;
        }
        int status = run(filter, value, emit, context, error, error_size);
        if (status != CJQ_OK) return status;
    }
}

int cjq_filter_feed(cjq_filter *filter, const char *bytes, size_t count, int last, cjq_emit emit, void *context,
                    char *error, size_t error_size) {
    // The parser takes an int length: larger writes go in pieces.
    const size_t piece = (size_t)1 << 30;
    while (count > 0) {
        size_t size = count < piece ? count : piece;
        jq.jv_parser_set_buf(filter->parser, bytes, (int)size, 1);
        int status = drain(filter, emit, context, error, error_size);
        if (status != CJQ_OK) return status;
        bytes += size;
        count -= size;
    }
    if (!last) return CJQ_OK;
    jq.jv_parser_set_buf(filter->parser, "", 0, 0);
    return drain(filter, emit, context, error, error_size);
}

void cjq_filter_free(cjq_filter *filter) {
    if (!filter) return;
    if (filter->parser) jq.jv_parser_free(filter->parser);
    if (filter->state) jq.jq_teardown(&filter->state);
    free(filter);
}
