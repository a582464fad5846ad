// peak-rss OUT COMMAND [ARG...]: runs COMMAND, then writes "WALL_NANOSECONDS PEAK_RSS_KIB
// CPU_MICROSECONDS" (user + system, which the machine's load moves less than wall time) to
// OUT and exits with COMMAND's status.
//
// Why not measure from Python: a child's ru_maxrss starts at its parent's RSS when it is
// forked (the copied page tables count), so every command Python starts reports at least
// Python's own ~10-15 MiB. Started from this small launcher the floor is ~1 MiB, and the
// figure is the command's own peak. Built by Benchmarks/run.py with the toolchain's clang.
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: peak-rss OUT COMMAND [ARG...]\n");
        return 2;
    }
    struct timespec started, ended;
    clock_gettime(CLOCK_MONOTONIC, &started);
    pid_t pid = fork();
    if (pid < 0) return 127;
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) return 127;
    clock_gettime(CLOCK_MONOTONIC, &ended);
    FILE *out = fopen(argv[1], "w");
    if (!out) return 127;
    long long wall = (long long)(ended.tv_sec - started.tv_sec) * 1000000000LL + (ended.tv_nsec - started.tv_nsec);
    long long cpu = (long long)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000LL + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
    fprintf(out, "%lld %ld %lld\n", wall, usage.ru_maxrss, cpu);
    fclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
