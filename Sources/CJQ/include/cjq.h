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

/// Receives each result's output (a string's bytes, or compact JSON; then "\n"); returns 0
/// to stop.
typedef int (*cjq_emit)(void *context, const char *bytes, size_t count);

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
int cjq_filter_feed(cjq_filter *filter, const char *bytes, size_t count, int last, cjq_emit emit, void *context,
                    char *error, size_t error_size);

/// From now on the filter runs on a thread of its own, beside the command, as jq beside
/// douctl in a pipe: `cjq_filter_feed` queues the bytes (waiting while 64 KiB wait) and
/// returns the thread's status so far; the thread writes the results to `fd` itself, in
/// 4 KiB blocks (each line when `line_buffered`), as jq's stdio does. 0, or 1 when no
/// thread could be started (the filter then stays in the caller's thread).
int cjq_filter_start_thread(cjq_filter *filter, int fd, int line_buffered);
/// Threaded: no more input; waits for the thread to filter what is queued (and, when
/// `complete`, to end the text stream: an unfinished value is an input error) and to
/// write its output. Its status, with one line in `error`. CJQ_OK when not threaded.
int cjq_filter_end(cjq_filter *filter, int complete, char *error, size_t error_size);
/// The errno of a failed write to the thread's `fd` (CJQ_STOPPED), else 0.
int cjq_filter_write_errno(cjq_filter *filter);
void cjq_filter_free(cjq_filter *filter);

#endif
