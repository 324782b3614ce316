// vcpu-wake: in the test guest (QEMU TCG, two vCPUs), how long a thread woken onto the other, idle vCPU takes to run,
// depending on what the waking thread does right after the wake-up. Not a floor: it measures the emulator, not a
// reader (tools/perf/README.md, "Wake-ups across vCPUs").
//
// Two processes, each pinned to a vCPU: the sleeper blocks in read(2) on a pipe; the waker writes a byte to the pipe
// and then, for each mode in turn, either sleeps at once (waiting for the sleeper's answer) or first keeps its vCPU
// busy for about a millisecond. The sleeper stamps CLOCK_MONOTONIC when read(2) returns and sends the stamp back. For
// each mode it prints the quartiles of (stamp - time of the write) over TRIALS trials, and how long the waker was busy:
// read that rather than assume the millisecond, as the arithmetic's calibration comes out short in the guest (270–440
// µs in the runs of docs/performance.md; timing it a second time, after its translation, did not change that).
//
//   cc -O2 -o vcpu-wake tools/perf/vcpu-wake.c
//   scripts/vm/run -- /path/to/vcpu-wake [TRIALS]
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest-wake.h"

enum { maxTrials = 1000, codePages = 512 };

static volatile unsigned long sink;
typedef unsigned long (*step_fn)(unsigned long);
static step_fn steps[codePages];

// Arithmetic in one tight loop: no system call, no clock read, no memory beyond a register.
static void compute(long iterations) {
    unsigned long x = 1;
    for (long k = 0; k < iterations; k++) x = x * 6364136223846793005UL + 1;
    sink = x;
}

// Calls through a table of tiny functions, one per page: code spread over many pages, as a program's is.
static void spread_code(long calls) {
    unsigned long x = 0;
    for (long k = 0; k < calls; k++) x = steps[k % codePages](x);
    sink = x;
}

static void make_steps(void) {
    unsigned char *code = mmap(NULL, codePages * 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        perror("vcpu-wake: mmap");
        exit(1);
    }
    for (int i = 0; i < codePages; i++) {
        unsigned char *page = code + i * 4096;
        // lea rax, [rdi + 1]; ret
        memcpy(page, "\x48\x8d\x47\x01\xc3", 5);
        steps[i] = (step_fn)page;
    }
}

int main(int argc, char **argv) {
    int trials = argc > 1 ? atoi(argv[1]) : 150;
    if (trials < 10 || trials > maxTrials) trials = 150;
    int to[2], back[2];
    if (pipe(to) != 0 || pipe(back) != 0) {
        perror("vcpu-wake: pipe");
        return 1;
    }
    pid_t sleeper = fork();
    if (sleeper < 0) {
        perror("vcpu-wake: fork");
        return 1;
    }
    if (sleeper == 0) {
        // Only the ends it uses: read(2) then sees the end of the waker's writes.
        close(to[1]);
        close(back[0]);
        pin("vcpu-wake", 1);
        char byte;
        while (read(to[0], &byte, 1) == 1) {
            long long stamp = now_ns();
            if (write(back[1], &stamp, sizeof stamp) != sizeof stamp) _exit(1);
        }
        _exit(0);
    }
    close(to[0]);
    close(back[1]);
    pin("vcpu-wake", 0);
    make_steps();
    // How many iterations of `compute` take about a millisecond here.
    long long start = now_ns();
    compute(200000);
    long long took = now_ns() - start;
    long perMillisecond = took > 0 ? (long)(200000.0 * 1e6 / (double)took) : 200000;
    const char *modes[] = {"sleeps at once", "computes", "reads the clock", "makes system calls", "runs spread code"};
    printf("vcpu-wake: %d trials per mode; the waker then:\n", trials);
    for (int mode = 0; mode < 5; mode++) {
        static long long wake[maxTrials], busy[maxTrials];
        for (int i = 0; i < trials; i++) {
            usleep(5000);  // both asleep before each trial
            long long wrote = now_ns();
            if (write(to[1], "x", 1) != 1) return 1;
            switch (mode) {
            case 1: compute(perMillisecond); break;
            case 2: while (now_ns() < wrote + 1000000) {} break;
            case 3: while (now_ns() < wrote + 1000000) getppid(); break;
            case 4: spread_code(perMillisecond / 8); break;
            default: break;
            }
            busy[i] = (now_ns() - wrote) / 1000;
            long long stamp;
            if (read(back[0], &stamp, sizeof stamp) != sizeof stamp) return 1;
            wake[i] = (stamp - wrote) / 1000;
        }
        qsort(wake, trials, sizeof wake[0], compare);
        qsort(busy, trials, sizeof busy[0], compare);
        printf("  %-19s the sleeper ran after p10 %4lld  p25 %4lld  p50 %4lld  p75 %4lld  p90 %4lld us; "
               "the waker was busy %lld us (median)\n",
               modes[mode], wake[trials / 10], wake[trials / 4], wake[trials / 2], wake[3 * trials / 4],
               wake[9 * trials / 10], busy[trials / 2]);
        fflush(stdout);
    }
    close(to[1]);
    waitpid(sleeper, NULL, 0);
    return 0;
}
