// cjq: jq's own engine for `--jq`, from the system's libjq (libjq.so.1), loaded at run time
// with dlopen as CCurl loads libcurl: no headers or -dev package to build, and a douctl
// that never filters never loads it. The entry points declared in cjq.c are jq's core API,
// the same in jq 1.6 and 1.7 (jq_init, jq_compile_args, jq_start, jq_next, jv_parser_*,
// jv_dump_string, ...). All jv handling stays in C: Swift sees a filter, bytes in, bytes out.
#ifndef CJQ_H
#define CJQ_H

#include <stddef.h>

/// 0 when libjq is loaded; else `cjq_load_error()` says why. `DOUCTL_LIBJQ` may name the
/// library's path.
int cjq_load(void);
const char *cjq_load_error(void);

/// A compiled program with its input parser.
typedef struct cjq_filter cjq_filter;

/// Receives each result: a string's bytes (`is_string`), or compact JSON; no newline.
/// Returns 0 to stop.
typedef int (*cjq_emit)(void *context, const char *bytes, size_t count, int is_string);
/// Asked while the caller waits for the filter's thread: nonzero ends the wait (the run was
/// stopped: --max-time, Ctrl-C, SIGTERM).
typedef int (*cjq_stop)(void *context);

/// Compiles `program` with `count` named variables: `values[i]` is a string, or JSON text
/// when `json[i]` is set. NULL on failure, with one line in `error`.
cjq_filter *cjq_filter_new(const char *program, int count, const char *const *names, const char *const *values,
                           const int *json, char *error, size_t error_size);

/// Feeds the next bytes of the JSON text stream (`last`: no more will come); every value
/// completed is run through the program and each result emitted.
/// Returns 0, or CJQ_RUNTIME_ERROR, CJQ_INPUT_ERROR (with one line in `error`), CJQ_STOPPED.
#define CJQ_OK 0
#define CJQ_RUNTIME_ERROR 1
#define CJQ_INPUT_ERROR 2
#define CJQ_STOPPED 3
/// The wait for the filter's thread was ended by `stop` (see `cjq_filter_start_thread`).
#define CJQ_CANCELLED 4
/// The same, while the thread was inside `emit`, which may still finish writing.
#define CJQ_CANCELLED_BUSY 5
int cjq_filter_feed(cjq_filter *filter, const char *bytes, size_t count, int last, cjq_emit emit, void *context,
                    char *error, size_t error_size);

/// From now on the filter runs on a thread of its own, beside the command, as jq beside
/// douctl in a pipe: `cjq_filter_feed` queues the bytes (waiting while 64 KiB wait) and
/// returns the thread's status so far; the thread hands each result to `emit` (nothing is
/// buffered here). Every wait for the thread asks `stop` every 50 ms: once it has said so
/// for a quarter of a second (time for the thread to finish what is queued), the wait ends
/// with CJQ_CANCELLED (or CJQ_CANCELLED_BUSY) and the thread is abandoned: libjq
/// cannot be interrupted, so it runs on detached, never enters `emit` again, and frees the
/// filter itself; the caller must not use or free the filter after that. 0, or 1 when no
/// thread could be started (the filter then stays in the caller's thread).
int cjq_filter_start_thread(cjq_filter *filter, cjq_emit emit, cjq_stop stop, void *context);
/// Threaded: no more input; waits for the thread to filter what is queued (and, when
/// `complete`, to end the text stream: an unfinished value is an input error). Its status,
/// with one line in `error`. CJQ_OK when not threaded.
int cjq_filter_end(cjq_filter *filter, int complete, char *error, size_t error_size);
void cjq_filter_free(cjq_filter *filter);

#endif
