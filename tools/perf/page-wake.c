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

// What each wake-up runs (wake_twice's body): K pages, a byte of each data page (at a different offset in each, so no
// two share a cache set), or a call into each code page's function.
static int usesCode, pages;
static unsigned long touch(unsigned long x) {
    for (int i = 0; i < pages; i++) {
        if (usesCode) {
            x = code[i](x);
        } else {
            x += data[i * pageSize + (i * 64) % pageSize];
        }
    }
    return x;
}

int main(void) {
    unsigned char *text = mmap(NULL, maxPages * pageSize, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    wake_check(text != MAP_FAILED, "page-wake", "mmap");
    for (int i = 0; i < maxPages; i++) {
        // lea rax, [rdi + 1]; ret
        unsigned char *f = text + i * pageSize + (i * 64) % pageSize;
        f[0] = 0x48, f[1] = 0x8d, f[2] = 0x47, f[3] = 0x01, f[4] = 0xc3;
        code[i] = (step_fn)f;
    }
    data = mmap(NULL, maxPages * pageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    wake_check(data != MAP_FAILED, "page-wake", "mmap");

    double nsPerTick = ns_per_tick();
    const int counts[] = {0, 16, 64, 256};
    for (usesCode = 0; usesCode < 2; usesCode++) {
        for (int c = 0; c < 4; c++) {
            for (int switched = 0; switched < 2; switched++) {
                pages = counts[c];
                long long cold[trials], warm[trials];
                wake_twice("page-wake", touch, switched, trials, nsPerTick, cold, warm);
                printf("page-wake: %s %s pages %3d: cold p50 %6.1f us p90 %6.1f, warm p50 %6.1f us\n",
                       switched ? "switched" : "same-mm ", usesCode ? "code" : "data", pages,
                       cold[trials / 2] / 1000.0, cold[trials * 9 / 10] / 1000.0, warm[trials / 2] / 1000.0);
                fflush(stdout);
            }
        }
    }
    return 0;
}
