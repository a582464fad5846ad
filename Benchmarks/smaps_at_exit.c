// Preloaded by Benchmarks/floor.py (LD_PRELOAD=smaps-at-exit.so SMAPS_OUT=FILE COMMAND...):
// copies /proc/self/smaps to FILE as the process exits, after its request is done, so the
// resident pages of each mapping can be read without pausing the program or touching it.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((destructor)) static void dump_smaps(void) {
    const char *out = getenv("SMAPS_OUT");
    if (!out) return;
    int in = open("/proc/self/smaps", O_RDONLY), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buffer[65536];
    ssize_t n;
    while (in >= 0 && fd >= 0 && (n = read(in, buffer, sizeof buffer)) > 0) {
        if (write(fd, buffer, (size_t)n) != n) break;
    }
    if (in >= 0) close(in);
    if (fd >= 0) close(fd);
}
