#define _GNU_SOURCE
#include "CProcess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static int configure(posix_spawnattr_t *attributes, posix_spawn_file_actions_t *actions, const char *directory,
                     enum touchd_spawn_output output) {
    sigset_t none;
    sigset_t all;
    sigemptyset(&none);
    sigfillset(&all);
    // Threads of touchd block SIGHUP, SIGINT and SIGTERM and SIGPIPE is ignored: a child must start with neither.
    int error = posix_spawnattr_setflags(
        attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (error == 0) error = posix_spawnattr_setsigmask(attributes, &none);
    if (error == 0) error = posix_spawnattr_setsigdefault(attributes, &all);
    if (error == 0) error = posix_spawn_file_actions_addopen(actions, 0, "/dev/null", O_RDONLY, 0);
    if (output == TOUCHD_SPAWN_OUTPUT_DISCARD) {
        if (error == 0) error = posix_spawn_file_actions_addopen(actions, 1, "/dev/null", O_WRONLY, 0);
        if (error == 0) error = posix_spawn_file_actions_adddup2(actions, 1, 2);
    } else {
        if (error == 0) error = posix_spawn_file_actions_adddup2(actions, 2, 1);
    }
    if (error == 0 && directory != NULL) error = posix_spawn_file_actions_addchdir_np(actions, directory);
    if (error == 0) error = posix_spawn_file_actions_addclosefrom_np(actions, 3);
    return error;
}

int touchd_spawn(const char *path, char *const argv[], char *const envp[], const char *directory,
                 enum touchd_spawn_output output, pid_t *pid) {
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_t actions;
    int error = posix_spawnattr_init(&attributes);
    if (error != 0) return error;
    error = posix_spawn_file_actions_init(&actions);
    if (error != 0) {
        posix_spawnattr_destroy(&attributes);
        return error;
    }
    error = configure(&attributes, &actions, directory, output);
    // glibc runs the child with CLONE_VFORK and reports a failed chdir or exec as posix_spawn's result.
    if (error == 0) error = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return error;
}

int touchd_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}
