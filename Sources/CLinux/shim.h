// Linux interfaces that Swift's Glibc module does not import: signalfd(2) for the input loop's signals and
// eventfd(2) for waking executor threads. Header-only; the daemon's Services and Actions layers import it.
#ifndef TOUCHD_CLINUX_SHIM_H
#define TOUCHD_CLINUX_SHIM_H

#include <sys/eventfd.h>
#include <sys/signalfd.h>

#endif
