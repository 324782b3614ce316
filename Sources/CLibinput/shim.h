// The C surface touchd uses: libinput (contacts), libudev (seat and device discovery) and
// libevdev (device facts, and uinput devices for tests without a touchscreen).
// Only Sources/TouchDaemon/Input imports this module.
#ifndef TOUCHD_CLIBINPUT_SHIM_H
#define TOUCHD_CLIBINPUT_SHIM_H

// open(2) flags and close(2): libinput's open_restricted/close_restricted callbacks need them.
#include <fcntl.h>
#include <unistd.h>

#include <libinput.h>
#include <libudev.h>
// pkg-config adds -I/usr/include/libevdev-1.0 for these two.
#include <libevdev/libevdev.h>
#include <libevdev/libevdev-uinput.h>

#include <errno.h>
#include <linux/input.h>
#include <stdlib.h>
#include <sys/ioctl.h>

/// How many contacts are down on the evdev device `fd` right now, as the kernel holds its state (not as a reader
/// last saw it): the slots whose ABS_MT_TRACKING_ID is not -1 (EVIOCGMTSLOTS), or 1 when the device has no slots and
/// BTN_TOUCH is down (EVIOCGKEY). `slots` is the device's slot count (0 for single-touch devices). -1 with errno when
/// the state cannot be read. Filter mode grabs a panel only when this is 0: a contact the compositor saw go down would
/// otherwise never end for it.
static inline int touchd_evdev_contacts_down(int fd, int slots) {
    if (slots > 0) {
        if (slots > 1024) slots = 1024;
        size_t size = sizeof(__u32) + (size_t)slots * sizeof(__s32);
        __s32 *request = calloc(1, size);
        if (request == NULL) return -1;
        request[0] = ABS_MT_TRACKING_ID;
        if (ioctl(fd, EVIOCGMTSLOTS(size), request) < 0) {
            int saved = errno;
            free(request);
            errno = saved;
            return -1;
        }
        int down = 0;
        for (int i = 0; i < slots; i++) {
            if (request[1 + i] != -1) down++;
        }
        free(request);
        return down;
    }
    unsigned char keys[KEY_MAX / 8 + 1] = {0};
    if (ioctl(fd, EVIOCGKEY(sizeof keys), keys) < 0) return -1;
    return (keys[BTN_TOUCH / 8] >> (BTN_TOUCH % 8)) & 1;
}

/// The values of one multitouch axis `code` (ABS_MT_TRACKING_ID, ABS_MT_POSITION_X, ...) in slots 0..<count of the evdev
/// device `fd` as the kernel holds them now (EVIOCGMTSLOTS), into `values`: 0, or -1 with errno. `count` is at most 64
/// (filter mode's edge panels, EdgePanel.swift: their resync after SYN_DROPPED).
static inline int touchd_evdev_mt_slots(int fd, unsigned code, int *values, int count) {
    if (count < 0 || count > 64) {
        errno = EINVAL;
        return -1;
    }
    __s32 request[1 + 64] = {0};
    request[0] = (__s32)code;
    size_t size = sizeof(__u32) + (size_t)count * sizeof(__s32);
    if (ioctl(fd, EVIOCGMTSLOTS(size), request) < 0) return -1;
    for (int i = 0; i < count; i++) values[i] = request[1 + i];
    return 0;
}

/// The current value of the absolute axis `code` of the evdev device `fd` as the kernel holds it (EVIOCGABS), into
/// `value`: 0, or -1 with errno. For ABS_MT_SLOT, the slot the kernel's next multitouch events are for unless they
/// name another (filter mode's resync after SYN_DROPPED, EdgePanel.swift).
static inline int touchd_evdev_abs_value(int fd, unsigned code, int *value) {
    struct input_absinfo info;
    if (ioctl(fd, EVIOCGABS(code), &info) < 0) return -1;
    *value = info.value;
    return 0;
}

/// Releases this open file's grab of its evdev device (EVIOCGRAB 0): 0, or -1 with errno. Filter mode's edge panels
/// (EdgePanel.swift) read a duplicate of the grabbed descriptor, which libevdev no longer counts as grabbed once its
/// descriptor was changed to it, so libevdev_grab cannot release it.
static inline int touchd_evdev_ungrab(int fd) {
    return ioctl(fd, EVIOCGRAB, (void *)0);
}

#endif
