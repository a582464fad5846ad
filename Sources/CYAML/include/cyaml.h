// cyaml: YAML for `profile add --openapi`, from the system's libyaml (libyaml-0.so.2),
// loaded at run time with dlopen as CJQ loads libjq and CCurl libcurl: no headers or -dev
// package to build, and a douctl that never reads YAML never loads it. Swift sees the
// parser's events (scalars with their style, tags and anchors; starts and ends of
// sequences and mappings; aliases), each with its line, and builds the value itself.
#ifndef CYAML_H
#define CYAML_H

#include <stddef.h>

/// 0 when libyaml is loaded; else `cyaml_load_error()` says why. `DOUCTL_LIBYAML` may name
/// the library's absolute path.
int cyaml_load(void);
const char *cyaml_load_error(void);

#define CYAML_SCALAR 1
#define CYAML_SEQUENCE_START 2
#define CYAML_SEQUENCE_END 3
#define CYAML_MAPPING_START 4
#define CYAML_MAPPING_END 5
#define CYAML_ALIAS 6
#define CYAML_DOCUMENT_START 7

/// One event. `anchor` is the alias's name for CYAML_ALIAS; `plain` is 1 for a plain
/// (unquoted) scalar, whose text may be a null, a boolean or a number. `line` is 1-based.
/// Returns 0 to stop the parse.
typedef int (*cyaml_event_fn)(void *context, int kind, const char *anchor, const char *tag, const char *value,
                              size_t length, int plain, size_t line);

#define CYAML_OK 0
#define CYAML_SYNTAX_ERROR 1
#define CYAML_STOPPED 2
#define CYAML_NOT_LOADED 3
/// Parses `count` bytes; each event goes to `emit`. On CYAML_SYNTAX_ERROR, `error` holds
/// libyaml's problem and `*line` its 1-based line.
int cyaml_parse(const char *bytes, size_t count, cyaml_event_fn emit, void *context, char *error, size_t error_size,
                size_t *line);

#endif
