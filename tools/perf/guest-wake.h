// Helpers shared by the guest experiments vcpu-wake.c and page-wake.c: the monotonic clock in nanoseconds, pinning the
// calling process to one vCPU, and a comparison for qsort of long longs. Header-only; each program is one `cc` call.
#ifndef TOUCHD_GUEST_WAKE_H
#define TOUCHD_GUEST_WAKE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

#endif
