// The floor under touchd's filter mode in its latency check (touchd-e2e --filter --floor-filter PATH): the least a
// filter can do. It grabs the panel, makes a uinput twin of it with libevdev (name, ids, properties, axes, as touchd's
// twin has), and copies every event it reads to the twin, a whole read in one write(2). Whatever the application's
// latency through it costs is what any filter process costs in the test VM; what touchd takes beyond it is its own.
//
// With BUSY-SOCKET (the latency check's rounds with the busy socket target), it also does what touchd's one action
// does there, in the order touchd does it: after each write that began a contact, it sends the target a touchDown line
// (floor-panel.h) on a stream connection made at start. So the target starts its work after the forwarder's write, as
// it does after touchd's, and nothing of that comes before the write.
//
// usage: floor-filter PANEL-NAME [BUSY-SOCKET]   (built by tools/perf/floors; ends when its parent does)
#include <fcntl.h>
#include <libevdev/libevdev-uinput.h>
#include <libevdev/libevdev.h>
#include <linux/input.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "floor-panel.h"

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: floor-filter PANEL-NAME [BUSY-SOCKET]\n");
        return 2;
    }
    // Killed with its parent, so that a driver that dies never leaves the panel grabbed.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char node[300];
    int fd = open_panel(argv[1], node, sizeof node);
    if (fd < 0) {
        fprintf(stderr, "floor-filter: no input device named '%s'\n", argv[1]);
        return 1;
    }
    struct libevdev *panel;
    struct libevdev_uinput *twin;
    if (libevdev_new_from_fd(fd, &panel) != 0
        || libevdev_uinput_create_from_device(panel, LIBEVDEV_UINPUT_OPEN_MANAGED, &twin) != 0) {
        fprintf(stderr, "floor-filter: cannot make the twin\n");
        return 1;
    }
    if (ioctl(fd, EVIOCGRAB, 1) != 0) {
        perror("floor-filter: EVIOCGRAB");
        return 1;
    }
    int out = libevdev_uinput_get_fd(twin);
    int target = argc == 3 ? connect_busy_target("floor-filter", argv[2]) : -1;
    if (argc == 3 && target < 0) return 1;
    struct pollfd waiting = {.fd = fd, .events = POLLIN};
    for (;;) {
        if (poll(&waiting, 1, -1) < 0) continue;
        struct input_event events[64];
        ssize_t got = read(fd, events, sizeof events);
        if (got == 0) return 0;
        if (got <= 0) continue;
        if (write(out, events, (size_t)got) < 0) perror("floor-filter: write");
        if (target < 0) continue;
        for (size_t i = 0; i < (size_t)got / sizeof events[0]; i++) {
            if (events[i].type == EV_ABS && events[i].code == ABS_MT_TRACKING_ID && events[i].value >= 0) {
                send_busy_line("floor-filter", target);
                break;
            }
        }
    }
}
