/* SPDX-License-Identifier: Apache-2.0 */
/*
 * activate.h — the listening sockets systemd hands rearviewd under socket
 * activation (rearviewd.socket and its siblings: sd_listen_fds(3)), matched
 * to the daemon's sockets by their FileDescriptorName=.  Loop thread, once,
 * at start-up.
 */
#ifndef RVD_ACTIVATE_H
#define RVD_ACTIVATE_H

#include <stddef.h>

/* For each of the n names (e.g. "control", "events", "admin"), fds[i]
 * becomes the passed socket of that FileDescriptorName, made non-blocking
 * and close-on-exec, or -1 when none was passed (the daemon then creates
 * that socket itself).  The LISTEN_* variables are unset, so no child
 * inherits them.  A passed descriptor that is not a listening AF_UNIX
 * stream socket, or whose name is none of `names`, is logged and closed.
 * Returns the number of sockets taken (0: not socket-activated) or a
 * negative errno (LISTEN_FDS malformed; nothing is taken then). */
int rvd_activation_take(const char *const *names, size_t n, int *fds);

#endif
