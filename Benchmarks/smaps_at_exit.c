// Preloaded by Benchmarks/floor.py (LD_PRELOAD=smaps-at-exit.so SMAPS_OUT=FILE COMMAND...):
// copies /proc/self/smaps to FILE as the process exits, after its request is done, so the
// resident pages of each mapping can be read without pausing the program or touching it.
// Both ways out: exit() runs the destructor; douctl leaves by _exit (issue 44: past the
// libraries' exit handlers), which this replaces.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static void dump(void) {
    static int done;
    const char *out = getenv("SMAPS_OUT");
    if (!out || done) return;
    done = 1;
    int in = open("/proc/self/smaps", O_RDONLY), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buffer[65536];
    ssize_t n;
    while (in >= 0 && fd >= 0 && (n = read(in, buffer, sizeof buffer)) > 0) {
        if (write(fd, buffer, (size_t)n) != n) break;
    }
    if (in >= 0) close(in);
    if (fd >= 0) close(fd);
}

__attribute__((destructor)) static void dump_smaps(void) { dump(); }

void _exit(int status) {
    dump();
    void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
    if (real) real(status);
    abort();
}
