// The floor under touchd and `libinput debug-events` in the latency comparison (touchd-e2e --compare-libinput
// --floor-reader PATH): a reader that does nothing but wait for the panel, read its events and write one line per
// touch-down and lift, in the format the comparison reads from debug-events. Whatever it costs is what any reader's
// wake-up and the hops around it cost in the test VM; what touchd or libinput take beyond it is their own work.
//
// usage: floor-reader PANEL-NAME [BEFORE AFTER]   (built by tools/perf/floors)
//
// BEFORE and AFTER (default 0) add that many clock_gettime(CLOCK_MONOTONIC) calls per frame before its line is written
// and after: what a clock read costs the reader's latency and CPU in the guest, whose clock source (HPET) leaves the
// vDSO to a real system call.
#include <fcntl.h>
#include <linux/input.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "floor-panel.h"

static void read_clock(int times) {
    struct timespec now;
    for (int i = 0; i < times; i++) clock_gettime(CLOCK_MONOTONIC, &now);
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: floor-reader PANEL-NAME [BEFORE AFTER]\n");
        return 2;
    }
    int before = argc == 4 ? atoi(argv[2]) : 0, after = argc == 4 ? atoi(argv[3]) : 0;
    char node[300];
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        fd = open_panel(argv[1], node, sizeof node);
        if (fd < 0) usleep(100000);
    }
    if (fd < 0) {
        fprintf(stderr, "floor-reader: no input device named '%s'\n", argv[1]);
        return 1;
    }
    // Line-buffered like `stdbuf -oL libinput debug-events`: each line is one write(2) on the pipe.
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("-%s DEVICE_ADDED %s\n", node + strlen("/dev/input/"), argv[1]);
    int down = 0, up = 0;
    struct pollfd waiting = {.fd = fd, .events = POLLIN};
    for (;;) {
        if (poll(&waiting, 1, -1) < 0) continue;
        struct input_event events[64];
        ssize_t got = read(fd, events, sizeof events);
        if (got <= 0) {
            if (got == 0) return 0;
            continue;
        }
        for (size_t i = 0; i < (size_t)got / sizeof events[0]; i++) {
            const struct input_event *event = &events[i];
            if (event->type == EV_KEY && event->code == BTN_TOUCH) {
                if (event->value) down = 1; else up = 1;
            } else if (event->type == EV_SYN && event->code == SYN_REPORT) {
                read_clock(before);
                if (down) printf(" %s TOUCH_DOWN\n", node + strlen("/dev/input/"));
                if (up) printf(" %s TOUCH_UP\n", node + strlen("/dev/input/"));
                read_clock(after);
                down = up = 0;
            } else if (event->type == EV_SYN && event->code == SYN_DROPPED) {
                down = up = 0;
            }
        }
    }
}
