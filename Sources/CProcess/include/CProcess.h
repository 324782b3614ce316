// Starting and watching command targets' children: posix_spawn(3) with the GNU extensions Swift's Glibc module leaves
// out (a new session, closefrom, chdir) and pidfd_open(2), which has no wrapper on Debian 12's headers that Swift
// imports. Only Sources/TouchDaemon/Actions/CommandProcess.swift uses it.
#ifndef TOUCHD_CPROCESS_H
#define TOUCHD_CPROCESS_H

#include <sys/types.h>

/// Where the child's standard output and standard error go (standard input is always /dev/null).
enum touchd_spawn_output {
    /// touchd's own standard error, for both.
    TOUCHD_SPAWN_OUTPUT_STDERR = 0,
    /// /dev/null, for both.
    TOUCHD_SPAWN_OUTPUT_DISCARD = 1,
};

/// Starts `path` with `argv` and `envp` (NULL-terminated) in a new session (so a new process group led by the
/// child), with stdin from /dev/null, stdout and stderr as `output` says, no other descriptor, an empty signal mask
/// and every signal's disposition at its default, in `directory` when not NULL. Returns 0 and stores the child's pid
/// in `pid`, or an errno value: the program missing or not executable and a missing directory are reported here.
int touchd_spawn(const char *path, char *const argv[], char *const envp[], const char *directory,
                 enum touchd_spawn_output output, pid_t *pid);

/// pidfd_open(2): a close-on-exec descriptor that becomes readable when process `pid` exits, or -1 with errno set.
int touchd_pidfd_open(pid_t pid);

#endif
