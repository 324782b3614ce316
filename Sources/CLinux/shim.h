// Linux interfaces that Swift's Glibc module does not import: signalfd(2) for the input loop's signals and
// eventfd(2) for waking executor threads, prctl(2) to name threads. Header-only; the daemon's Services and Actions layers import it.
#ifndef TOUCHD_CLINUX_SHIM_H
#define TOUCHD_CLINUX_SHIM_H

#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>

/// Names the calling thread (at most 15 bytes show), as `top -H` and `/proc/PID/task/TID/comm` show it.
/// prctl(2) is variadic, which Swift cannot call directly.
static inline int touchd_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, name, 0, 0, 0);
}

#endif
