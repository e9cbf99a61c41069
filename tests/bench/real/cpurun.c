/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpurun.c — runs a command and appends what it cost to a file: `make
 * bench-real` measures CPU time (user + system of the command and its
 * children, from wait4's rusage, microseconds), which a loaded machine
 * disturbs far less than wall time.
 *
 *   cpurun FILE COMMAND [ARG...]
 *
 * Appends one line "WALL_S CPU_S" to FILE, exits with the command's status
 * (128 + signal when it was killed; 127 when it cannot be run).  stdin,
 * stdout and stderr are the command's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timespec t)
{
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fputs("usage: cpurun FILE COMMAND [ARG...]\n", stderr);
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid < 0) {
		perror("cpurun: fork");
		return 127;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "cpurun: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("cpurun: wait4");
			return 127;
		}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	FILE *f = fopen(argv[1], "a");
	if (!f || fprintf(f, "%.6f %.6f\n", seconds(t1) - seconds(t0), cpu) < 0 || fclose(f) != 0) {
		perror("cpurun: results file");
		return 127;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
