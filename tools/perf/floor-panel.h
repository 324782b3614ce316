// The panel the floor programs work on (tools/perf/floors): the input device of that name, opened non-blocking, with
// its node's path in `node`; -1 when there is none. And the busy target the forwarders write to in the filter check's
// busy rounds (floor-filter.c, floor-filter-libinput.c).
#ifndef FLOOR_PANEL_H
#define FLOOR_PANEL_H
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/input.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

// A touchDown line for control `m` of the check's busy configuration (touchd's own message carries more fields, which
// the target does not look at: it works the same after any line it reads).
static const char busy_line[] = "{\"action\":\"m\",\"event\":\"touchDown\",\"target\":\"busy\"}\n";

// A stream connection to the busy target at `path`; -1 (with a message naming `program`) when there is none.
static inline int connect_busy_target(const char *program, const char *path) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path) {
        fprintf(stderr, "%s: socket path too long: %s\n", program, path);
        return -1;
    }
    strcpy(address.sun_path, path);
    int target = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (target < 0 || connect(target, (struct sockaddr *)&address, sizeof address) != 0) {
        fprintf(stderr, "%s: cannot connect to the busy target %s: %s\n", program, path, strerror(errno));
        if (target >= 0) close(target);
        return -1;
    }
    return target;
}

// Sends the busy line after a write that began a contact (a failure is said, not fatal).
static inline void send_busy_line(const char *program, int target) {
    if (send(target, busy_line, sizeof busy_line - 1, MSG_NOSIGNAL) < 0) {
        fprintf(stderr, "%s: send to the busy target: %s\n", program, strerror(errno));
    }
}

static int open_panel(const char *wanted, char *node, size_t size) {
    DIR *directory = opendir("/dev/input");
    if (!directory) return -1;
    int found = -1;
    struct dirent *entry;
    while (found < 0 && (entry = readdir(directory))) {
        if (strncmp(entry->d_name, "event", 5) != 0) continue;
        snprintf(node, size, "/dev/input/%s", entry->d_name);
        int fd = open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        char name[256] = {0};
        if (ioctl(fd, EVIOCGNAME(sizeof name - 1), name) >= 0 && strcmp(name, wanted) == 0) {
            found = fd;
        } else {
            close(fd);
        }
    }
    closedir(directory);
    return found;
}

#endif
