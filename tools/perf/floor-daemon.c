// The floor under touchd itself in the latency comparison (touchd-e2e --compare-libinput --floor-daemon PATH): what
// any daemon of touchd's shape costs in the test VM, with none of touchd's own work. It reads the panel through
// libinput, as `libinput debug-events` does, and writes each touch-down's and lift's message to the socket target,
// as touchd does, and nothing else: no configuration beyond the target's path, no scene, no engine, no bookkeeping.
// So what it takes above `debug-events` is the socket target's transport (a stream socket rather than a pipe); what
// touchd takes above it is touchd's own work.
//
// usage: floor-daemon run --config PATH [...]   (the arguments touchd-e2e gives touchd; built by tools/perf/floors)
//
// It runs until SIGTERM ends it.
//
// It serves only the comparison's configuration (TestConfig.valid): it takes the first `socket = "..."` line as the
// target, the output as 1000 px square, and control "a" left of x = 450, "b" right of it. It tells NOTIFY_SOCKET
// READY=1 and "1 touchscreen" when the panel is added, as touchd does.
#include <errno.h>
#include <fcntl.h>
#include <libinput.h>
#include <libudev.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int open_restricted(const char *path, int flags, void *data) {
    (void)data;
    int fd = open(path, flags | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

static void close_restricted(int fd, void *data) {
    (void)data;
    close(fd);
}

static const struct libinput_interface interface = {open_restricted, close_restricted};

static int unix_socket(const char *path, int type, int connected) {
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (fd < 0 || strlen(path) >= sizeof address.sun_path) return -1;
    strcpy(address.sun_path, path);
    if (connected && connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void notify_ready(void) {
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path) return;
    int fd = unix_socket(path, SOCK_DGRAM, 1);
    if (fd < 0) return;
    const char *ready = "READY=1\nSTATUS=1 touchscreen (floor daemon)";
    send(fd, ready, strlen(ready), MSG_NOSIGNAL);
    close(fd);
}

// The target's path: the first `socket = "..."` line of the configuration.
static int read_target(const char *config, char *target, size_t size) {
    FILE *file = fopen(config, "r");
    if (!file) return -1;
    char line[1024];
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, file)) {
        const char *at = strstr(line, "socket = \"");
        if (at != line) continue;
        at += strlen("socket = \"");
        size_t length = strcspn(at, "\"");
        if (length == 0 || length >= size) break;
        memcpy(target, at, length);
        target[length] = 0;
        found = 0;
    }
    fclose(file);
    return found;
}

int main(int argc, char **argv) {
    const char *config = NULL;
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--config") == 0) config = argv[i + 1];
    }
    char target[108];
    if (!config || read_target(config, target, sizeof target) != 0) {
        fprintf(stderr, "floor-daemon: usage: floor-daemon run --config PATH (with a socket target)\n");
        return 2;
    }
    int out = unix_socket(target, SOCK_STREAM, 1);
    if (out < 0) {
        fprintf(stderr, "floor-daemon: cannot connect to %s: %s\n", target, strerror(errno));
        return 1;
    }
    struct udev *udev = udev_new();
    struct libinput *input = udev ? libinput_udev_create_context(&interface, NULL, udev) : NULL;
    if (!input || libinput_udev_assign_seat(input, "seat0") != 0) {
        fprintf(stderr, "floor-daemon: cannot start libinput on seat0\n");
        return 1;
    }
    // One contact at a time, as the comparison taps: the control its touch-down landed on.
    const char *control = "a";
    struct pollfd wait = {libinput_get_fd(input), POLLIN, 0};
    // The devices present at the start are queued by libinput_udev_assign_seat already: take them before waiting.
    for (;; wait.revents = 0, poll(&wait, 1, -1)) {
        libinput_dispatch(input);
        struct libinput_event *event;
        while ((event = libinput_get_event(input))) {
            enum libinput_event_type type = libinput_event_get_type(event);
            if (type == LIBINPUT_EVENT_DEVICE_ADDED) {
                struct libinput_device *device = libinput_event_get_device(event);
                if (libinput_device_has_capability(device, LIBINPUT_DEVICE_CAP_TOUCH)) notify_ready();
            } else if (type == LIBINPUT_EVENT_TOUCH_DOWN || type == LIBINPUT_EVENT_TOUCH_UP) {
                struct libinput_event_touch *touch = libinput_event_get_touch_event(event);
                int down = type == LIBINPUT_EVENT_TOUCH_DOWN;
                double x = 0, y = 0;
                if (down) {
                    x = libinput_event_touch_get_x_transformed(touch, 1000);
                    y = libinput_event_touch_get_y_transformed(touch, 1000);
                    control = x < 450 ? "a" : "b";
                }
                char message[512];
                int length = snprintf(message, sizeof message,
                    "{\"action\":\"%s\",\"control\":\"%s\",\"event\":\"%s\",\"target\":\"e2e\",\"time_us\":%llu,"
                    "\"contact\":0,\"x\":%.1f,\"y\":%.1f,\"device\":\"%s\",\"generation\":1}\n",
                    control, control, down ? "touchDown" : "touchUpInside",
                    (unsigned long long)libinput_event_touch_get_time_usec(touch), x, y,
                    libinput_device_get_sysname(libinput_event_get_device(event)));
                if (length > 0 && (size_t)length < sizeof message) {
                    send(out, message, (size_t)length, MSG_DONTWAIT | MSG_NOSIGNAL);
                }
            }
            libinput_event_destroy(event);
        }
    }
}
