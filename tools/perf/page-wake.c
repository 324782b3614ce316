// page-wake: in the test guest (QEMU TCG), what a thread pays for the first run of code and the first touch of data
// after it wakes up, by how many distinct pages they span. Not a floor: it measures the emulator, not a reader
// (tools/perf/README.md, "The first run after a sleep").
//
// A sleeper blocks in read(2) on a pipe; on each wake-up it touches K pages (data: one byte read per page; code: one
// call into a two-instruction function per page) twice in a row, and stamps each pass with rdtsc (no system call,
// which a clock read in this guest is). The first pass is "cold", the second "warm". Each K runs twice: once with the
// sleeper's vCPU left idle between wake-ups ("same-mm": the idle task keeps the sleeper's address space), once with a
// third process run on that vCPU 3 ms before each wake-up ("switched": the sleeper's wake-up then switches the
// address space back, which empties QEMU's soft TLB and its jump cache). It prints the median and p90 of each pass in
// microseconds, rdtsc calibrated against CLOCK_MONOTONIC.
//
//   cc -O2 -o page-wake tools/perf/page-wake.c
//   scripts/vm/run -- /path/to/page-wake
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "guest-wake.h"

enum { maxPages = 256, trials = 60, pageSize = 4096 };

typedef unsigned long (*step_fn)(unsigned long);
static step_fn code[maxPages];
static volatile unsigned char *data;

// K pages: a byte of each data page (at a different offset in each, so no two share a cache set), or a call into each
// code page's function.
static unsigned long touch(int usesCode, int pages) {
    unsigned long x = 0;
    for (int i = 0; i < pages; i++) {
        if (usesCode) {
            x = code[i](x);
        } else {
            x += data[i * pageSize + (i * 64) % pageSize];
        }
    }
    return x;
}

static void check(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

int main(void) {
    unsigned char *text = mmap(NULL, maxPages * pageSize, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    check(text != MAP_FAILED, "page-wake: mmap");
    for (int i = 0; i < maxPages; i++) {
        // lea rax, [rdi + 1]; ret
        unsigned char *f = text + i * pageSize + (i * 64) % pageSize;
        f[0] = 0x48, f[1] = 0x8d, f[2] = 0x47, f[3] = 0x01, f[4] = 0xc3;
        code[i] = (step_fn)f;
    }
    data = mmap(NULL, maxPages * pageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    check(data != MAP_FAILED, "page-wake: mmap");

    long long n0 = now_ns();
    unsigned long long r0 = __rdtsc();
    while (now_ns() - n0 < 200000000LL) {
    }
    double nsPerTick = (double)(now_ns() - n0) / (double)(__rdtsc() - r0);

    const int counts[] = {0, 16, 64, 256};
    for (int usesCode = 0; usesCode < 2; usesCode++) {
        for (int c = 0; c < 4; c++) {
            for (int switched = 0; switched < 2; switched++) {
                int pages = counts[c];
                int toSleeper[2], back[2], toOther[2];
                check(pipe(toSleeper) == 0 && pipe(back) == 0 && pipe(toOther) == 0, "page-wake: pipe");
                // The other process: on the sleeper's vCPU, woken before the sleeper when `switched`.
                pid_t other = fork();
                check(other >= 0, "page-wake: fork");
                if (other == 0) {
                    pin("page-wake", 1);
                    static volatile unsigned char own[64 * pageSize];
                    char byte;
                    while (read(toOther[0], &byte, 1) == 1) {
                        for (int i = 0; i < 64; i++) own[i * pageSize]++;
                    }
                    _exit(0);
                }
                pid_t sleeper = fork();
                check(sleeper >= 0, "page-wake: fork");
                if (sleeper == 0) {
                    pin("page-wake", 1);
                    touch(usesCode, pages);
                    char byte;
                    for (int t = 0; t < trials; t++) {
                        if (read(toSleeper[0], &byte, 1) != 1) _exit(1);
                        unsigned long long a = __rdtsc();
                        touch(usesCode, pages);
                        unsigned long long b = __rdtsc();
                        touch(usesCode, pages);
                        unsigned long long e = __rdtsc();
                        unsigned long long passes[2] = {b - a, e - b};
                        if (write(back[1], passes, sizeof passes) != sizeof passes) _exit(1);
                    }
                    _exit(0);
                }
                pin("page-wake", 0);
                long long cold[trials], warm[trials];
                for (int t = 0; t < trials; t++) {
                    usleep(20000);
                    if (switched) {
                        check(write(toOther[1], "x", 1) == 1, "page-wake: write");
                        usleep(3000);
                    }
                    check(write(toSleeper[1], "x", 1) == 1, "page-wake: write");
                    unsigned long long passes[2];
                    check(read(back[0], passes, sizeof passes) == sizeof passes, "page-wake: read");
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
                printf("page-wake: %s %s pages %3d: cold p50 %6.1f us p90 %6.1f, warm p50 %6.1f us\n",
                       switched ? "switched" : "same-mm ", usesCode ? "code" : "data", pages,
                       cold[trials / 2] / 1000.0, cold[trials * 9 / 10] / 1000.0, warm[trials / 2] / 1000.0);
                fflush(stdout);
            }
        }
    }
    return 0;
}
