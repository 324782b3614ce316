// A second floor under touchd's filter mode (touchd-e2e --filter --floor-filter-libinput PATH): the bare forwarder
// reading the panel through libinput, as touchd does, instead of with read(2). It grabs the panel, makes a uinput twin
// of it with libevdev, and at each libinput touch frame writes the frame's changes to the twin in one write(2): slot,
// tracking id, position in the panel's own units (libinput's transformed position scaled back onto the axis), then
// BTN_TOUCH and SYN_REPORT. Nothing else: no mapping, no decisions. Beside floor-filter.c it says what reading through
// libinput costs any forwarder in the test VM; what touchd takes beyond it is touchd's own work. With BUSY-SOCKET (the
// check's busy rounds) it sends that socket a touchDown line after each write of a frame that began a contact,
// as floor-filter.c does.
//
// usage: floor-filter-libinput PANEL-NAME [BUSY-SOCKET]   (built by tools/perf/floors; ends when its parent does)
#include <errno.h>
#include <fcntl.h>
#include <libevdev/libevdev-uinput.h>
#include <libevdev/libevdev.h>
#include <libinput.h>
#include <linux/input.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "floor-panel.h"

static int open_grabbed(const char *path, int flags, void *data) {
    (void)data;
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0) return -errno;
    if (ioctl(fd, EVIOCGRAB, 1) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

static void close_grabbed(int fd, void *data) {
    (void)data;
    close(fd);
}

static const struct libinput_interface interface = {.open_restricted = open_grabbed, .close_restricted = close_grabbed};

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: floor-filter-libinput PANEL-NAME [BUSY-SOCKET]\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char node[300];
    int probe = open_panel(argv[1], node, sizeof node);
    if (probe < 0) {
        fprintf(stderr, "floor-filter-libinput: no input device named '%s'\n", argv[1]);
        return 1;
    }
    // The twin is made from the panel's capabilities, read on a descriptor of its own, closed before libinput grabs.
    struct libevdev *panel;
    struct libevdev_uinput *twin;
    if (libevdev_new_from_fd(probe, &panel) != 0
        || libevdev_uinput_create_from_device(panel, LIBEVDEV_UINPUT_OPEN_MANAGED, &twin) != 0) {
        fprintf(stderr, "floor-filter-libinput: cannot make the twin\n");
        return 1;
    }
    close(probe);
    const struct input_absinfo *x = libevdev_get_abs_info(panel, ABS_MT_POSITION_X);
    const struct input_absinfo *y = libevdev_get_abs_info(panel, ABS_MT_POSITION_Y);
    if (!x || !y) {
        fprintf(stderr, "floor-filter-libinput: the panel has no multitouch position axes\n");
        return 1;
    }
    struct libinput *li = libinput_path_create_context(&interface, NULL);
    if (!li || !libinput_path_add_device(li, node)) {
        fprintf(stderr, "floor-filter-libinput: libinput cannot open %s\n", node);
        return 1;
    }
    int out = libevdev_uinput_get_fd(twin);
    int target = argc == 3 ? connect_busy_target("floor-filter-libinput", argv[2]) : -1;
    if (argc == 3 && target < 0) return 1;
    struct input_event frame[128];
    size_t count = 0;
    int down = 0;
    int began = 0;
#define APPEND(t, c, v)                                                                                                \
    do {                                                                                                               \
        if (count < sizeof frame / sizeof frame[0])                                                                    \
            frame[count++] = (struct input_event){.type = (t), .code = (c), .value = (v)};                             \
    } while (0)
    struct pollfd waiting = {.fd = libinput_get_fd(li), .events = POLLIN};
    for (;;) {
        if (poll(&waiting, 1, -1) < 0) continue;
        libinput_dispatch(li);
        struct libinput_event *event;
        while ((event = libinput_get_event(li))) {
            enum libinput_event_type type = libinput_event_get_type(event);
            struct libinput_event_touch *touch = libinput_event_get_touch_event(event);
            if (touch) {
                int slot = libinput_event_touch_get_slot(touch);
                switch (type) {
                case LIBINPUT_EVENT_TOUCH_DOWN:
                case LIBINPUT_EVENT_TOUCH_MOTION: {
                    APPEND(EV_ABS, ABS_MT_SLOT, slot < 0 ? 0 : slot);
                    if (type == LIBINPUT_EVENT_TOUCH_DOWN) {
                        APPEND(EV_ABS, ABS_MT_TRACKING_ID, libinput_event_touch_get_seat_slot(touch) + 1);
                        down++;
                        began = 1;
                    }
                    double vx = libinput_event_touch_get_x_transformed(touch, (uint32_t)(x->maximum - x->minimum + 1));
                    double vy = libinput_event_touch_get_y_transformed(touch, (uint32_t)(y->maximum - y->minimum + 1));
                    APPEND(EV_ABS, ABS_MT_POSITION_X, x->minimum + (int)vx);
                    APPEND(EV_ABS, ABS_MT_POSITION_Y, y->minimum + (int)vy);
                    break;
                }
                case LIBINPUT_EVENT_TOUCH_UP:
                case LIBINPUT_EVENT_TOUCH_CANCEL:
                    APPEND(EV_ABS, ABS_MT_SLOT, slot < 0 ? 0 : slot);
                    APPEND(EV_ABS, ABS_MT_TRACKING_ID, -1);
                    if (down > 0) down--;
                    break;
                case LIBINPUT_EVENT_TOUCH_FRAME:
                    if (count > 0) {
                        APPEND(EV_KEY, BTN_TOUCH, down > 0);
                        APPEND(EV_SYN, SYN_REPORT, 0);
                        if (write(out, frame, count * sizeof frame[0]) < 0) perror("floor-filter-libinput: write");
                        if (began && target >= 0) send_busy_line("floor-filter-libinput", target);
                        count = 0;
                        began = 0;
                    }
                    break;
                default:
                    break;
                }
            }
            libinput_event_destroy(event);
        }
    }
}
