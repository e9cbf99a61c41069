/* SPDX-License-Identifier: Apache-2.0 */
/*
 * activate.c — socket activation (activate.h): the descriptors systemd
 * passed from SD_LISTEN_FDS_START on, with LISTEN_PID naming us and
 * LISTEN_FDNAMES naming each (libsystemd's sd_listen_fds_with_names).
 *
 * Invariants: every passed descriptor is either returned in fds[] (one per
 * name at most: a second socket of the same name is closed) or closed, so
 * none leaks into the daemon's children; a returned descriptor is a
 * listening AF_UNIX stream socket, non-blocking.
 */
#include "activate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"

int rvd_activation_take(const char *const *names, size_t n, int *fds)
{
	char **passed = NULL;
	int count, taken = 0;

	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	count = sd_listen_fds_with_names(1, &passed);
	if (count < 0) {
		rvd_err("socket activation: %s", strerror(-count));
		return count;
	}
	for (int k = 0; k < count; k++) {
		int fd = SD_LISTEN_FDS_START + k, flags;
		const char *name = passed && passed[k] ? passed[k] : "unknown";
		size_t i;

		for (i = 0; i < n && strcmp(names[i], name); i++)
			;
		if (i == n || fds[i] >= 0) {
			rvd_warn("socket activation: fd %d named \"%s\" is %s: closed", fd, name,
				 i == n ? "none of ours" : "a second one of that name");
			close(fd);
			continue;
		}
		flags = fcntl(fd, F_GETFL);
		if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0 || flags < 0 ||
		    fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
		    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
			rvd_warn("socket activation: fd %d (\"%s\") is not a listening "
				 "AF_UNIX stream socket: closed",
				 fd, name);
			close(fd);
			continue;
		}
		fds[i] = fd;
		taken++;
	}
	for (int k = 0; passed && k < count; k++)
		free(passed[k]);
	free(passed);
	return taken;
}
