// The panel the floor programs work on (tools/perf/floors): the input device of that name, opened non-blocking, with
// its node's path in `node`; -1 when there is none.
#ifndef FLOOR_PANEL_H
#define FLOOR_PANEL_H
#include <dirent.h>
#include <fcntl.h>
#include <linux/input.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

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
