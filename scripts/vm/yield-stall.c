// What touchd's yield on send (Sources/TouchDaemon/POSIX/SendYield.swift) can cost touchd itself: a sender writes one
// byte to a Unix socket, as touchd's input thread sends a message, and a reader thread that it wakes spins for a while
// on each byte, as a target that works hard right after each message would. Prints how long the sender took from
// before its send until it was back and running its next statement: with `yield` 1 the send is made under SCHED_IDLE
// and the sender's policy restored right after, as touchd does; with 0 it stays under SCHED_OTHER. With `pin` 1 both
// threads may run on CPU 0 only (no idle CPU to take the sender). Run in the test guest by scripts/vm/yield-stall
// (docs/performance.md, "Nineteenth pass").
//
//   yield-stall SPIN_US YIELD PIN
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int ends[2];
static long spin;

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

static void *reader(void *unused) {
    (void)unused;
    char byte;
    while (read(ends[1], &byte, 1) == 1) {
        long long end = now() + spin;
        while (now() < end) {
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: yield-stall SPIN_US YIELD PIN\n");
        return 2;
    }
    spin = atol(argv[1]);
    int yield = atoi(argv[2]), pin = atoi(argv[3]);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) return 1;
    if (pin) {
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        CPU_SET(0, &cpus);
        if (sched_setaffinity(0, sizeof cpus, &cpus) != 0) return 1;
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, reader, NULL) != 0) return 1;
    struct sched_param parameters = {0};
    long long worst = 0, total = 0;
    const int sends = 20;
    for (int i = 0; i < sends; i++) {
        usleep((useconds_t)(spin + 30000));  // the reader asleep again, as between two touches
        if (yield && sched_setscheduler(0, SCHED_IDLE, &parameters) != 0) return 1;
        long long before = now();
        if (write(ends[0], "x", 1) != 1) return 1;
        if (yield && sched_setscheduler(0, SCHED_OTHER, &parameters) != 0) return 1;
        long long back = now() - before;
        total += back;
        if (back > worst) worst = back;
    }
    printf("reader spins %ld us, send under SCHED_IDLE %s, %s: the sender back after %lld us (mean of %d), worst %lld us\n",
           spin, yield ? "yes" : "no", pin ? "both on CPU 0" : "any CPU", total / sends, sends, worst);
    return 0;
}
