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

#endif
