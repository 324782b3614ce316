// Linux interfaces that Swift's Glibc module does not import: signalfd(2) for the input loop's signals, epoll(7) for its
// wait, eventfd(2) for waking executor threads, prctl(2) to name threads, getrusage(2) per thread, tgkill(2) and
// sigaction(2) for SignalChannel's forwarding handler, sched_setscheduler(2) for the input thread's yield to the target
// it wakes (SendYield.swift), fcntl(2)'s pipe capacity for `touchd speech-module`, sched_setaffinity(2) for
// touchd-e2e's stall watch. Header-only; the daemon's Daemon, Actions, Input and Engine layers, the command line and
// touchd-e2e import it.
#ifndef TOUCHD_CLINUX_SHIM_H
#define TOUCHD_CLINUX_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/// A new epoll instance, closed on exec; -1 with errno on failure.
static inline int touchd_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

/// Adds `fd` to the epoll instance for reading, as descriptor number `index` (0–63) of `touchd_epoll_wait`'s mask.
static inline int touchd_epoll_add(int epoll, int fd, unsigned index) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = EPOLLIN;
    event.data.u64 = index;
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

/// Removes `fd` from the epoll instance: 0, or -1 with errno.
static inline int touchd_epoll_remove(int epoll, int fd) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, &event);
}

/// Waits up to `timeout` milliseconds (-1: no limit) as epoll_wait(2) does, and sets bit `index` of `ready` for each
/// descriptor that is ready (readable, or in error or hung up, as poll(2)'s revents would say). Returns epoll_wait's
/// result: how many are ready, 0 on a timeout, -1 with errno. The events stay in C: struct epoll_event is packed.
static inline int touchd_epoll_wait(int epoll, unsigned long long *ready, int timeout) {
    struct epoll_event events[16];
    int count = epoll_wait(epoll, events, 16, timeout);
    unsigned long long mask = 0;
    for (int i = 0; i < count; i++) {
        if (events[i].data.u64 < 64) mask |= 1ull << events[i].data.u64;
    }
    *ready = mask;
    return count;
}

/// Sets the calling thread's scheduling policy to SCHED_IDLE (`idle` nonzero) or back to SCHED_OTHER, keeping its nice
/// value: 0, or -1 with errno (sched_setscheduler(2); SCHED_IDLE needs _GNU_SOURCE, hence the number).
static inline int touchd_set_idle_policy(int idle) {
    struct sched_param param;
    memset(&param, 0, sizeof param);
    return sched_setscheduler(0, idle ? 5 /* SCHED_IDLE */ : 0 /* SCHED_OTHER */, &param);
}

/// The calling thread's scheduling policy (sched_getscheduler(2)): 0 is SCHED_OTHER; -1 with errno.
static inline int touchd_scheduling_policy(void) {
    return sched_getscheduler(0);
}

struct touchd_idle_probe {
    int lowered;
    int restored;
};

static inline void *touchd_idle_probe_run(void *argument) {
    struct touchd_idle_probe *probe = (struct touchd_idle_probe *)argument;
    probe->lowered = touchd_set_idle_policy(1) == 0 ? 0 : errno;
    if (probe->lowered == 0) probe->restored = touchd_set_idle_policy(0) == 0 ? 0 : errno;
    return NULL;
}

/// Whether a thread of this process can go to SCHED_IDLE and come back to SCHED_OTHER, tried on a thread of its own
/// (one that could go but not come back just ends). 0 when both worked; else the errno of the step that failed, in
/// `*step`: 1 going to SCHED_IDLE, 2 coming back, 0 creating the thread.
static inline int touchd_probe_idle_policy(int *step) {
    struct touchd_idle_probe probe = {0, 0};
    pthread_t thread;
    int error = pthread_create(&thread, NULL, touchd_idle_probe_run, &probe);
    if (error != 0) {
        *step = 0;
        return error;
    }
    pthread_join(thread, NULL);
    if (probe.lowered != 0) {
        *step = 1;
        return probe.lowered;
    }
    *step = 2;
    return probe.restored;
}

/// How many CPUs the calling thread may run on (sched_getaffinity(2), counted here: CPU_COUNT needs _GNU_SOURCE); 0 when
/// the call fails.
static inline int touchd_allowed_cpu_count(void) {
    unsigned long mask[64];
    memset(mask, 0, sizeof mask);
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
    if (bytes <= 0) return 0;
    int count = 0;
    for (long i = 0; i < bytes / (long)sizeof mask[0] && i < 64; i++) count += __builtin_popcountl(mask[i]);
    return count;
}

/// Pins the calling thread to CPU `cpu` (0–4095) with sched_setaffinity(2); 0, or -1 with errno. touchd-e2e's stall
/// watch runs one watcher on each vCPU.
static inline int touchd_pin_to_cpu(int cpu) {
    unsigned long mask[64];
    memset(mask, 0, sizeof mask);
    if (cpu < 0 || cpu >= (int)(8 * sizeof mask)) {
        errno = EINVAL;
        return -1;
    }
    mask[cpu / (8 * sizeof mask[0])] = 1UL << (cpu % (8 * sizeof mask[0]));
    return (int)syscall(SYS_sched_setaffinity, 0, sizeof mask, mask);
}

/// Names the calling thread (at most 15 bytes show), as `top -H` and `/proc/PID/task/TID/comm` show it.
/// prctl(2) is variadic, which Swift cannot call directly.
static inline int touchd_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, name, 0, 0, 0);
}

/// The calling thread's kernel id (gettid(2)).
static inline int touchd_gettid(void) {
    return (int)syscall(SYS_gettid);
}

/// The calling thread's resource usage (getrusage(2) with RUSAGE_THREAD, which needs _GNU_SOURCE).
static inline int touchd_thread_rusage(struct rusage *usage) {
    return getrusage(1 /* RUSAGE_THREAD */, usage);
}

/// Sends `signal` to thread `tid` of process `tgid` (tgkill(2)). Async-signal-safe.
static inline int touchd_tgkill(int tgid, int tid, int signal) {
    return (int)syscall(SYS_tgkill, tgid, tid, signal);
}

/// Installs `handler` for `signal` with every signal blocked while it runs and SA_RESTART, so an interrupted
/// system call in the thread that took the signal is restarted.
static inline int touchd_install_handler(int signal, void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigfillset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    return sigaction(signal, &action, NULL);
}

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/uinput.h>
#include <stddef.h>

#if defined(__x86_64__)
#define TOUCHD_AUDIT_ARCH_NATIVE AUDIT_ARCH_X86_64
#define TOUCHD_AUDIT_ARCH_COMPAT AUDIT_ARCH_I386
#define TOUCHD_NR_IOCTL_X32 (0x40000000u | 514u)
#elif defined(__aarch64__)
#define TOUCHD_AUDIT_ARCH_NATIVE AUDIT_ARCH_AARCH64
#define TOUCHD_AUDIT_ARCH_COMPAT AUDIT_ARCH_ARM
#define TOUCHD_NR_IOCTL_X32 __NR_ioctl
#else
#error "touchd's seccomp filter knows x86_64 and aarch64 only"
#endif
/// ioctl's number in the 32-bit ABI both architectures run (i386 and arm).
#define TOUCHD_NR_IOCTL_COMPAT 54u

/// Makes `ioctl(fd, UI_DEV_CREATE)` fail with EPERM for the calling thread and every thread and process it starts from
/// now on, in every system-call ABI the kernel runs (native, 32-bit compat, x32): nothing under it can create an
/// input device through uinput, whatever its groups and device permissions allow. Every other call is untouched.
/// A seccomp filter cannot be removed, and it survives execve. Tries without no_new_privs first (root may); sets it
/// when the kernel asks for it (EACCES), as under the shipped unit, which sets it anyway. prctl(2), not seccomp(2):
/// the unit's SystemCallFilter=@system-service allows the first only. 0, or -1 with errno.
static inline int touchd_forbid_uinput_create(void) {
    struct sock_filter filter[] = {
        /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TOUCHD_AUDIT_ARCH_NATIVE, 1, 0),
        /* 2 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TOUCHD_AUDIT_ARCH_COMPAT, 3, 8),
        /* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 3, 0),
        /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TOUCHD_NR_IOCTL_X32, 2, 5),
        /* 6 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TOUCHD_NR_IOCTL_COMPAT, 0, 3),
        // The request's low 32 bits (little-endian): the kernel takes the request as an unsigned int.
        /* 8 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
        /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, UI_DEV_CREATE, 0, 1),
        /* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        /* 11 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) == 0) return 0;
    if (errno != EACCES) return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0);
}

/// What `ioctl(fd, UI_DEV_CREATE)` answers on the calling thread: 0, or the errno (EPERM under the filter above).
static inline int touchd_try_uinput_create(int fd) {
    return ioctl(fd, UI_DEV_CREATE) == 0 ? 0 : errno;
}

/// fcntl(2)'s F_SETPIPE_SZ (Linux 2.6.35), which needs _GNU_SOURCE in glibc's headers: sets the pipe's capacity in
/// bytes (`touchd speech-module`). The new capacity, or -1 with errno.
static inline int touchd_set_pipe_size(int fd, int bytes) {
    return fcntl(fd, 1031 /* F_SETPIPE_SZ */, bytes);
}

#endif
