// Helpers shared by the guest experiments vcpu-wake.c, page-wake.c and call-wake.c: the monotonic clock in nanoseconds,
// pinning the calling process to one vCPU, a comparison for qsort of long longs, and (page-wake.c, call-wake.c) the
// time-stamp counter's rate and a sleeper that runs a body twice on each wake-up. Header-only; each program is one `cc`
// call.
#ifndef TOUCHD_GUEST_WAKE_H
#define TOUCHD_GUEST_WAKE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

// Pins the calling process to `cpu`; `program` names it in the error (the guest needs two vCPUs).
static void pin(const char *program, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "%s: ", program);
        perror("sched_setaffinity (two vCPUs needed)");
        exit(1);
    }
}

static int compare(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

// Nanoseconds per time-stamp counter tick, against CLOCK_MONOTONIC over 200 ms.
static inline double ns_per_tick(void) {
    long long n0 = now_ns();
    unsigned long long r0 = __rdtsc();
    while (now_ns() - n0 < 200000000LL) {
    }
    return (double)(now_ns() - n0) / (double)(__rdtsc() - r0);
}

// Exits with `program: what: ` and errno's text unless `ok`.
static inline void wake_check(int ok, const char *program, const char *what) {
    if (!ok) {
        fprintf(stderr, "%s: ", program);
        perror(what);
        exit(1);
    }
}

// A sleeper on vCPU 1 blocks in read(2) on a pipe; on each of `trials` wake-ups it runs `body` twice in a row and
// stamps each run with rdtsc (no system call). With `switched`, a third process runs on that vCPU 3 ms before each
// wake-up, so that the wake-up switches the address space back (QEMU then empties its soft TLB and its jump cache);
// without, the vCPU stays idle between wake-ups and the idle task keeps the sleeper's address space. The driver (this
// process, on vCPU 0) wakes it every 20 ms. `cold` and `warm` get each wake-up's first and second run, sorted, in ns.
static inline void wake_twice(const char *program, unsigned long (*body)(unsigned long), int switched, int trials,
                              double nsPerTick, long long *cold, long long *warm) {
    int toSleeper[2], back[2], toOther[2];
    wake_check(pipe(toSleeper) == 0 && pipe(back) == 0 && pipe(toOther) == 0, program, "pipe");
    pid_t other = fork();
    wake_check(other >= 0, program, "fork");
    if (other == 0) {
        pin(program, 1);
        static volatile unsigned char own[64 * 4096];
        char byte;
        while (read(toOther[0], &byte, 1) == 1) {
            for (int i = 0; i < 64; i++) own[i * 4096]++;
        }
        _exit(0);
    }
    pid_t sleeper = fork();
    wake_check(sleeper >= 0, program, "fork");
    if (sleeper == 0) {
        pin(program, 1);
        body(0);
        char byte;
        for (int t = 0; t < trials; t++) {
            if (read(toSleeper[0], &byte, 1) != 1) _exit(1);
            unsigned long long a = __rdtsc();
            body(a);
            unsigned long long b = __rdtsc();
            body(b);
            unsigned long long e = __rdtsc();
            unsigned long long passes[2] = {b - a, e - b};
            if (write(back[1], passes, sizeof passes) != sizeof passes) _exit(1);
        }
        _exit(0);
    }
    pin(program, 0);
    for (int t = 0; t < trials; t++) {
        usleep(20000);
        if (switched) {
            wake_check(write(toOther[1], "x", 1) == 1, program, "write");
            usleep(3000);
        }
        wake_check(write(toSleeper[1], "x", 1) == 1, program, "write");
        unsigned long long passes[2];
        wake_check(read(back[0], passes, sizeof passes) == sizeof passes, program, "read");
        cold[t] = (long long)(passes[0] * nsPerTick);
        warm[t] = (long long)(passes[1] * nsPerTick);
    }
    waitpid(sleeper, NULL, 0);
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
    int fds[] = {toSleeper[0], toSleeper[1], back[0], back[1], toOther[0], toOther[1]};
    for (int i = 0; i < 6; i++) close(fds[i]);
    qsort(cold, trials, sizeof cold[0], compare);
    qsort(warm, trials, sizeof warm[0], compare);
}

#endif
