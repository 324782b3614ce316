// call-wake: in the test guest (QEMU TCG), what a thread pays for the calls it makes after it wakes up, counted by
// call and not by page: the same work inline, as calls to K functions of one page, as K calls to one function (K
// return addresses), and as calls to K functions on the next page. Not a floor: it measures the emulator, not a reader
// (tools/perf/README.md, "The first run after a sleep"; page-wake.c counts pages).
//
// The code is made at run time in a buffer of four pages, so that where each call and each function lies is known: the
// caller's K calls (or K increments, inline) in the first page, then `mov rax, rdi; ret`. The sleeper blocks in
// read(2) on a pipe; a third process runs on its vCPU 3 ms before each wake-up, so that the wake-up switches the address
// space back (QEMU then empties its soft TLB and its jump cache). Each wake-up runs the caller twice in a row, stamped
// with rdtsc (no system call); it prints the median and p90 of the first run ("cold") and the median of the second
// ("warm"), in microseconds, rdtsc calibrated against CLOCK_MONOTONIC.
//
//   cc -O2 -o call-wake tools/perf/call-wake.c
//   scripts/vm/run -- /path/to/call-wake
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "guest-wake.h"

enum { trials = 60, pageSize = 4096, functionStride = 16 };
enum Mode { inlineWork, functionsOnePage, oneFunction, functionsNextPage, modes };
static const char *const modeNames[modes] = {"inline          ", "K functions     ", "one function    ",
                                              "K on next page  "};

typedef unsigned long (*step_fn)(unsigned long);
static unsigned char *text;

// `call target` (e8 rel32) at *at, which moves on past it.
static void emitCall(unsigned char **at, const unsigned char *target) {
    int rel = (int)(target - (*at + 5));
    (*at)[0] = 0xe8;
    memcpy(*at + 1, &rel, 4);
    *at += 5;
}

// The caller for `mode` with K steps, at the start of the buffer; each function is `inc rdi; ret`.
static step_fn build(enum Mode mode, int k) {
    memset(text, 0xcc, 4 * pageSize);
    unsigned char *functions = text + (mode == functionsNextPage ? pageSize : 2048);
    for (int i = 0; i < k; i++) {
        unsigned char *f = functions + i * functionStride;
        f[0] = 0x48, f[1] = 0xff, f[2] = 0xc7, f[3] = 0xc3;
    }
    unsigned char *at = text;
    for (int i = 0; i < k; i++) {
        if (mode == inlineWork) {
            at[0] = 0x48, at[1] = 0xff, at[2] = 0xc7;
            at += 3;
        } else {
            emitCall(&at, functions + (mode == oneFunction ? 0 : i * functionStride));
        }
    }
    at[0] = 0x48, at[1] = 0x89, at[2] = 0xf8, at[3] = 0xc3;  // mov rax, rdi; ret
    return (step_fn)text;
}

int main(void) {
    text = mmap(NULL, 4 * pageSize, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                -1, 0);
    wake_check(text != MAP_FAILED, "call-wake", "mmap");

    double nsPerTick = ns_per_tick();
    const int counts[] = {16, 64};
    for (int mode = 0; mode < modes; mode++) {
        for (int c = 0; c < 2; c++) {
            int k = counts[c];
            long long cold[trials], warm[trials];
            wake_twice("call-wake", build((enum Mode)mode, k), 1, trials, nsPerTick, cold, warm);
            printf("call-wake: switched %s K %3d: cold p50 %6.1f us p90 %6.1f, warm p50 %6.1f us\n", modeNames[mode], k,
                   cold[trials / 2] / 1000.0, cold[trials * 9 / 10] / 1000.0, warm[trials / 2] / 1000.0);
            fflush(stdout);
        }
    }
    return 0;
}
