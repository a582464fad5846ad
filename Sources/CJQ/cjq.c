#include "cjq.h"
#include "ccurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

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


/* From the system's library directories only, never beside the executable or the working
   directory (issue 39; ccurl_trusted_dlopen in CCurl says where it looks). */
static void *open_library(void) {
    static const char *const apple_names[] = {"libjq.1.dylib", "/usr/local/lib/libjq.1.dylib", "/opt/homebrew/lib/libjq.1.dylib", NULL};
    static const char *const linux_names[] = {"libjq.so.1", "libjq.so", NULL};
    return ccurl_open_system_library("DOUCTL_LIBJQ", "libjq", apple_names, linux_names, RTLD_LAZY | RTLD_LOCAL, load_error, sizeof load_error);
}

#define RESOLVE(name) CCURL_RESOLVE(library, jq.name, #name, "libjq", load_error)

static void load(void) {
    void *library = open_library();
    if (!library) return;
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

/// What the filter's own thread takes at a time, and what may wait for it: 64 KiB, what a
/// pipe to jq holds, so a producer faster than jq waits as a writer into a full pipe does,
/// and one whose reader went away (`| head`) stops as early.
enum { CHUNK = 16 * 1024, QUEUE = 64 * 1024 };

struct cjq_filter {
    jq_state *state;
    jv_parser *parser;
    /// The first compile message, for the one error line.
    char message[512];

    // Threaded mode (cjq_filter_start_thread): the bytes fed wait in a ring for the filter's
    // thread, which parses, runs the program and hands each result to `emit`. The results
    // are not buffered here: the caller's one output buffer takes them.
    int threaded;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    char *queue;
    size_t head, count;
    /// No more input; `complete`: it ended whole (else the command failed part-way).
    int input_done, complete;
    /// The thread's outcome so far (CJQ_OK until it stops), with its one-line message.
    int status;
    char failure[512];
    cjq_emit emit;
    cjq_stop stop;
    void *context;
    /// Held by the thread while `emit` runs; the caller takes it to abandon the thread, so
    /// that once abandoned, `emit` (and the caller's output) is never entered again.
    pthread_mutex_t emitting;
    /// The caller stopped waiting (`stop`): the thread runs on only until its program next
    /// yields (libjq cannot be interrupted), emits nothing more, and frees the filter.
    int abandoned;
    /// The thread has ended (under `lock`).
    int thread_done;
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

/// Where a loop over jq's values ends: -1 while `value` is valid (the loop goes on);
/// CJQ_OK for an invalid value without a message (the end of the values, `value` freed);
/// else `failure`, with the message (consumed) in `error`.
static int end_of_values(jv value, int failure, char *error, size_t error_size) {
    if (jq.jv_get_kind(value) != JV_KIND_INVALID) return -1;
    if (!jq.jv_invalid_has_msg(jq.jv_copy(value))) {
        jq.jv_free(value);
        return CJQ_OK;
    }
    message_line(jq.jv_invalid_get_msg(value), error, error_size);
    return failure;
}

/// Runs the program on one input (consumed), emitting each result.
static int run(struct cjq_filter *filter, jv input, cjq_emit emit, void *context, char *error, size_t error_size) {
    jq.jq_start(filter->state, input, 0);
    for (;;) {
        jv result = jq.jq_next(filter->state);
        int ended = end_of_values(result, CJQ_RUNTIME_ERROR, error, error_size);
        if (ended >= 0) return ended;
        // As `jq -r` prints: a string's bytes unquoted, anything else as `jq -c` does (the
        // caller adds the newline).
        int is_string = jq.jv_get_kind(result) == JV_KIND_STRING;
        if (!is_string) result = jq.jv_dump_string(result, 0);
        const char *text = jq.jv_string_value(result);
        int length = jq.jv_string_length_bytes(jq.jv_copy(result));
        int going = emit(context, text, (size_t)length, is_string);
        jq.jv_free(result);
        if (!going) return CJQ_STOPPED;
    }
}

/// Drains the parser of every value the bytes given so far complete.
static int drain(struct cjq_filter *filter, cjq_emit emit, void *context, char *error, size_t error_size) {
    for (;;) {
        jv value = jq.jv_parser_next(filter->parser);
        int ended = end_of_values(value, CJQ_INPUT_ERROR, error, error_size);
        if (ended >= 0) return ended;
        int status = run(filter, value, emit, context, error, error_size);
        if (status != CJQ_OK) return status;
    }
}

// MARK: - threaded mode

static void release(struct cjq_filter *filter);

/// The thread's emit: the caller's, unless the caller has abandoned the thread.
static int emit_from_thread(void *context, const char *bytes, size_t count, int is_string) {
    struct cjq_filter *filter = context;
    pthread_mutex_lock(&filter->emitting);
    int going = !__atomic_load_n(&filter->abandoned, __ATOMIC_ACQUIRE) && filter->emit(filter->context, bytes, count, is_string);
    pthread_mutex_unlock(&filter->emitting);
    return going;
}

static void *filter_thread(void *argument) {
    struct cjq_filter *filter = argument;
    char *chunk = malloc(CHUNK);
    char failure[512] = "";
    int status = chunk ? CJQ_OK : CJQ_STOPPED;
    while (status == CJQ_OK) {
        pthread_mutex_lock(&filter->lock);
        while (filter->count == 0 && !filter->input_done) pthread_cond_wait(&filter->changed, &filter->lock);
        size_t n = filter->count < CHUNK ? filter->count : CHUNK;
        for (size_t i = 0; i < n;) {
            size_t run_length = QUEUE - filter->head < n - i ? QUEUE - filter->head : n - i;
            memcpy(chunk + i, filter->queue + filter->head, run_length);
            filter->head = (filter->head + run_length) % QUEUE;
            i += run_length;
        }
        filter->count -= n;
        int ending = n == 0, complete = filter->complete && !filter->abandoned;
        pthread_cond_broadcast(&filter->changed);
        pthread_mutex_unlock(&filter->lock);
        if (ending) {
            if (complete) {
                jq.jv_parser_set_buf(filter->parser, "", 0, 0);
                status = drain(filter, emit_from_thread, filter, failure, sizeof failure);
            }
            break;
        }
        jq.jv_parser_set_buf(filter->parser, chunk, (int)n, 1);
        status = drain(filter, emit_from_thread, filter, failure, sizeof failure);
    }
    free(chunk);
    pthread_mutex_lock(&filter->lock);
    int abandoned = filter->abandoned;
    filter->status = status;
    filter->thread_done = 1;
    memcpy(filter->failure, failure, sizeof failure);
    if (status != CJQ_OK) filter->input_done = 1;  // refuse more input
    pthread_cond_broadcast(&filter->changed);
    pthread_mutex_unlock(&filter->lock);
    // Abandoned: nobody waits for this thread (it is detached) and the filter is its own.
    if (abandoned) release(filter);
    return NULL;
}

int cjq_filter_start_thread(cjq_filter *filter, cjq_emit emit, cjq_stop stop, void *context) {
    if (filter->threaded) return 0;
    filter->queue = malloc(QUEUE);
    if (!filter->queue) goto fail;
    if (pthread_mutex_init(&filter->lock, NULL) != 0) goto fail;
    if (pthread_mutex_init(&filter->emitting, NULL) != 0) {
        pthread_mutex_destroy(&filter->lock);
        goto fail;
    }
    if (pthread_cond_init(&filter->changed, NULL) != 0) {
        pthread_mutex_destroy(&filter->emitting);
        pthread_mutex_destroy(&filter->lock);
        goto fail;
    }
    filter->emit = emit;
    filter->stop = stop;
    filter->context = context;
    filter->status = CJQ_OK;
    if (pthread_create(&filter->thread, NULL, filter_thread, filter) != 0) {
        pthread_cond_destroy(&filter->changed);
        pthread_mutex_destroy(&filter->emitting);
        pthread_mutex_destroy(&filter->lock);
        goto fail;
    }
    filter->threaded = 1;
    return 0;
fail:
    free(filter->queue);
    filter->queue = NULL;
    return 1;
}

/// How long a wait for the thread goes before asking `stop` again.
static void wait_a_little(struct cjq_filter *filter) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 50 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&filter->changed, &filter->lock, &until);
}

/// Whether the caller should stop waiting: `stop` has said so for GRACE_MS (so a program that
/// keeps up still prints what was queued before a Ctrl-C, whole lines; one that runs on is
/// left within a second). `since` is 0 until `stop` first says so.
enum { GRACE_MS = 250 };

static int gave_up(struct cjq_filter *filter, long long *since) {
    if (!filter->stop(filter->context)) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    if (*since == 0) *since = ms;
    return ms - *since >= GRACE_MS;
}

/// The caller stops waiting for the thread (called with `lock` held, released on return).
/// The thread is detached and owns the filter from now on: it ends when its program next
/// yields a result, or when the program ends, and frees the filter; the caller never
/// touches it again. Once `emitting` was ours, the thread is between two results and will
/// never enter `emit` again: CJQ_CANCELLED. When it stays inside `emit` (blocked writing to a
/// reader that stopped reading), CJQ_CANCELLED_BUSY: the caller's output is in its hands.
static int abandon(struct cjq_filter *filter) {
    __atomic_store_n(&filter->abandoned, 1, __ATOMIC_RELEASE);
    filter->input_done = 1;
    pthread_cond_broadcast(&filter->changed);
    // `lock` stays held, so the thread cannot end (and free the filter) meanwhile.
    int status = CJQ_CANCELLED_BUSY;
    for (int tries = 0; tries < 20; tries++) {
        if (pthread_mutex_trylock(&filter->emitting) == 0) {
            pthread_mutex_unlock(&filter->emitting);
            status = CJQ_CANCELLED;
            break;
        }
        usleep(10 * 1000);
    }
    pthread_t thread = filter->thread;
    filter->threaded = 0;
    pthread_mutex_unlock(&filter->lock);
    pthread_detach(thread);
    return status;
}

/// Threaded: queue the bytes (waiting while the ring is full); the thread's status so far.
static int queue_bytes(struct cjq_filter *filter, const char *bytes, size_t count, char *error, size_t error_size) {
    long long since = 0;
    pthread_mutex_lock(&filter->lock);
    while (count > 0 && filter->status == CJQ_OK && !filter->input_done) {
        while (filter->count == QUEUE && filter->status == CJQ_OK && !filter->input_done) {
            if (gave_up(filter, &since)) return abandon(filter);
            wait_a_little(filter);
        }
        if (filter->status != CJQ_OK || filter->input_done) break;
        size_t tail = (filter->head + filter->count) % QUEUE;
        size_t room = QUEUE - filter->count;
        size_t contiguous = QUEUE - tail < room ? QUEUE - tail : room;
        size_t n = count < contiguous ? count : contiguous;
        memcpy(filter->queue + tail, bytes, n);
        filter->count += n;
        bytes += n;
        count -= n;
        pthread_cond_broadcast(&filter->changed);
    }
    int status = filter->status;
    if (status != CJQ_OK) snprintf(error, error_size, "%s", filter->failure);
    pthread_mutex_unlock(&filter->lock);
    return status;
}

int cjq_filter_end(cjq_filter *filter, int complete, char *error, size_t error_size) {
    if (!filter->threaded) return CJQ_OK;
    pthread_mutex_lock(&filter->lock);
    if (!filter->input_done) {
        filter->input_done = 1;
        filter->complete = complete;
    }
    pthread_cond_broadcast(&filter->changed);
    // The thread ends when its program does; the wait ends when the run is stopped too.
    long long since = 0;
    while (!filter->thread_done) {
        if (gave_up(filter, &since)) return abandon(filter);
        wait_a_little(filter);
    }
    pthread_mutex_unlock(&filter->lock);
    pthread_join(filter->thread, NULL);
    filter->threaded = 0;
    if (filter->status != CJQ_OK) snprintf(error, error_size, "%s", filter->failure);
    return filter->status;
}

int cjq_filter_feed(cjq_filter *filter, const char *bytes, size_t count, int last, cjq_emit emit, void *context,
                    char *error, size_t error_size) {
    if (filter->threaded) {
        int status = queue_bytes(filter, bytes, count, error, error_size);
        if (status != CJQ_OK || !last) return status;
        return cjq_filter_end(filter, 1, error, error_size);
    }
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

/// Frees what the filter holds (its thread, if any, has ended or is this one).
static void release(struct cjq_filter *filter) {
    if (filter->queue) {
        pthread_cond_destroy(&filter->changed);
        pthread_mutex_destroy(&filter->emitting);
        pthread_mutex_destroy(&filter->lock);
    }
    free(filter->queue);
    if (filter->parser) jq.jv_parser_free(filter->parser);
    if (filter->state) jq.jq_teardown(&filter->state);
    free(filter);
}

void cjq_filter_free(cjq_filter *filter) {
    if (!filter) return;
    if (filter->threaded) {
        // The run ends: what is queued is not wanted. Waits for the thread (`stop` says when
        // not to: then the abandoned thread frees the filter itself).
        char ignored[8];
        int status = cjq_filter_end(filter, 0, ignored, sizeof ignored);
        if (status == CJQ_CANCELLED || status == CJQ_CANCELLED_BUSY) return;
    }
    release(filter);
}
