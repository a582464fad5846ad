#include "cyaml.h"
#include "ccurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// libyaml's types, as yaml.h declares them (libyaml 0.1.x and 0.2.x share this ABI on
// LP64). The parser itself is opaque here: storage larger than its 480 bytes on x86_64
// and aarch64, zeroed by yaml_parser_initialize; only its error fields, at the start, are
// read.
typedef struct {
    size_t index;
    size_t line;
    size_t column;
} yaml_mark_t;

typedef struct {
    int error;
    const char *problem;
    size_t problem_offset;
    int problem_value;
    yaml_mark_t problem_mark;
    const char *context;
    yaml_mark_t context_mark;
} parser_head;

typedef union {
    struct { void *version; void *start; void *end; int implicit; } document_start;
    struct { unsigned char *anchor; } alias;
    struct {
        unsigned char *anchor;
        unsigned char *tag;
        unsigned char *value;
        size_t length;
        int plain_implicit;
        int quoted_implicit;
        int style;
    } scalar;
    struct { unsigned char *anchor; unsigned char *tag; int implicit; int style; } collection_start;
} event_data;

typedef struct {
    int type;
    event_data data;
    yaml_mark_t start_mark;
    yaml_mark_t end_mark;
} yaml_event_t;

enum {
    YAML_STREAM_END_EVENT = 2,
    YAML_DOCUMENT_START_EVENT = 3,
    YAML_ALIAS_EVENT = 5,
    YAML_SCALAR_EVENT = 6,
    YAML_SEQUENCE_START_EVENT = 7,
    YAML_SEQUENCE_END_EVENT = 8,
    YAML_MAPPING_START_EVENT = 9,
    YAML_MAPPING_END_EVENT = 10,
};
enum { YAML_PLAIN_SCALAR_STYLE = 1 };

enum { PARSER_STORAGE = 2048 };

static struct {
    int (*parser_initialize)(void *);
    void (*parser_delete)(void *);
    void (*parser_set_input_string)(void *, const unsigned char *, size_t);
    int (*parser_parse)(void *, yaml_event_t *);
    void (*event_delete)(yaml_event_t *);
} yaml;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_status = 1;
static char load_error[512] = "libyaml was not loaded";

/* From the system's library directories only, never beside the executable or the working
   directory (issue 39; ccurl_trusted_dlopen in CCurl says where it looks). */
static void *open_library(void) {
    static const char *const apple_names[] = {"libyaml-0.2.dylib", "/usr/local/lib/libyaml-0.2.dylib", "/opt/homebrew/lib/libyaml-0.2.dylib", NULL};
    static const char *const linux_names[] = {"libyaml-0.so.2", "libyaml.so", NULL};
    return ccurl_open_system_library("DOUCTL_LIBYAML", "libyaml", apple_names, linux_names, RTLD_LAZY | RTLD_LOCAL, load_error, sizeof load_error);
}

#define RESOLVE(field, symbol) CCURL_RESOLVE(library, yaml.field, symbol, "libyaml", load_error)

static void load(void) {
    void *library = open_library();
    if (!library) return;
    RESOLVE(parser_initialize, "yaml_parser_initialize");
    RESOLVE(parser_delete, "yaml_parser_delete");
    RESOLVE(parser_set_input_string, "yaml_parser_set_input_string");
    RESOLVE(parser_parse, "yaml_parser_parse");
    RESOLVE(event_delete, "yaml_event_delete");
    load_status = 0;
}

int cyaml_load(void) {
    pthread_once(&load_once, load);
    return load_status;
}

const char *cyaml_load_error(void) { return load_status == 0 ? NULL : load_error; }

static const char *text(const unsigned char *value) { return (const char *)value; }

int cyaml_parse(const char *bytes, size_t count, cyaml_event_fn emit, void *context, char *error, size_t error_size,
                size_t *line) {
    if (cyaml_load() != 0) {
        snprintf(error, error_size, "%s", load_error);
        return CYAML_NOT_LOADED;
    }
    void *parser = calloc(1, PARSER_STORAGE);
    if (!parser || !yaml.parser_initialize(parser)) {
        free(parser);
        snprintf(error, error_size, "out of memory");
        return CYAML_SYNTAX_ERROR;
    }
    yaml.parser_set_input_string(parser, (const unsigned char *)bytes, count);
    int status = CYAML_OK;
    for (;;) {
        yaml_event_t event;
        memset(&event, 0, sizeof event);
        if (!yaml.parser_parse(parser, &event)) {
            const parser_head *head = parser;
            const char *problem = head->problem ? head->problem : "not valid YAML";
            if (head->context) {
                snprintf(error, error_size, "%s %s", head->context, problem);
            } else {
                snprintf(error, error_size, "%s", problem);
            }
            *line = head->problem_mark.line + 1;
            status = CYAML_SYNTAX_ERROR;
            break;
        }
        int keep = 1;
        size_t at = event.start_mark.line + 1;
        switch (event.type) {
        case YAML_DOCUMENT_START_EVENT:
            keep = emit(context, CYAML_DOCUMENT_START, NULL, NULL, NULL, 0, 0, at);
            break;
        case YAML_SCALAR_EVENT:
            keep = emit(context, CYAML_SCALAR, text(event.data.scalar.anchor), text(event.data.scalar.tag),
                        text(event.data.scalar.value), event.data.scalar.length,
                        event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE, at);
            break;
        case YAML_ALIAS_EVENT:
            keep = emit(context, CYAML_ALIAS, text(event.data.alias.anchor), NULL, NULL, 0, 0, at);
            break;
        case YAML_SEQUENCE_START_EVENT:
            keep = emit(context, CYAML_SEQUENCE_START, text(event.data.collection_start.anchor),
                        text(event.data.collection_start.tag), NULL, 0, 0, at);
            break;
        case YAML_SEQUENCE_END_EVENT:
            keep = emit(context, CYAML_SEQUENCE_END, NULL, NULL, NULL, 0, 0, at);
            break;
        case YAML_MAPPING_START_EVENT:
            keep = emit(context, CYAML_MAPPING_START, text(event.data.collection_start.anchor),
                        text(event.data.collection_start.tag), NULL, 0, 0, at);
            break;
        case YAML_MAPPING_END_EVENT:
            keep = emit(context, CYAML_MAPPING_END, NULL, NULL, NULL, 0, 0, at);
            break;
        default:
            break;
        }
        int type = event.type;
        yaml.event_delete(&event);
        if (!keep) {
            status = CYAML_STOPPED;
            break;
        }
        if (type == YAML_STREAM_END_EVENT) break;
    }
    yaml.parser_delete(parser);
    free(parser);
    return status;
}
