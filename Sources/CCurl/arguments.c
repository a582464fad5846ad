// The process's arguments for the Swift standard library (CommandLine.argc, .unsafeArgv,
// .arguments), taken from the C library at start.
//
// The standard library asks the runtime for them through these two functions. The runtime's
// own versions (CommandLine.cpp in libswiftCore) find argv on Linux with a static constructor
// that reads /proc/self/maps line by line to locate the stack and then walks back from
// `environ`: in every run, whether or not anything asks, ~0.1 M instructions and ~50 us in
// the kernel composing the maps text (issue 44, the small GET's start). glibc hands
// argc/argv/envp to each constructor of the executable, so this one keeps them instead.
//
// In the release build (the Swift runtime linked in statically, Package.swift) these
// definitions come before libswiftCore.a is searched, so the archive's CommandLine.cpp.o,
// and with it that constructor, is not linked at all. Where the runtime is a shared
// library (debug builds, tests), its own copy keeps running and these give the same answer.
#include <stdlib.h>

#if defined(__linux__) && defined(__GLIBC__)

static char **captured_argv;
static int captured_argc;
static char **override_argv;
static int override_argc;

__attribute__((constructor)) static void ccurl_capture_arguments(int argc, char **argv, char **envp) {
    (void)envp;
    captured_argc = argc;
    captured_argv = argv;
}

char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen);
void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc);

char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen) {
    if (override_argv != NULL) {
        *outArgLen = override_argc;
        return override_argv;
    }
    if (captured_argv != NULL) {
        *outArgLen = captured_argc;
        return captured_argv;
    }
    static char *empty[] = {NULL};
    *outArgLen = 0;
    return empty;
}

void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
    override_argv = argv;
    override_argc = argc;
}

#endif
