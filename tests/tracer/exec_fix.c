/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exec_fix.c — an instrumented program that replaces itself by exec, for
 * test_frames: run with RV_TRACE=all and RV_TRACE_FILE, the main thread
 * calls ex_main_work; then either a second thread, once the main thread is
 * inside ex_wait (blocked in pthread_join), calls ex_thread_work and execs
 * argv[2] (argv[1] "thread"), or the main thread execs it itself (argv[1]
 * "main").
 * What developer mode writes at exit it must write before the exec.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NI __attribute__((noinline))

static volatile unsigned sink;
static char *prog;
static atomic_int waiting; /* the main thread is inside ex_wait */

static NI void ex_main_work(void)
{
	sink++;
}

static NI void ex_thread_work(void)
{
	sink++;
}

/* The second thread execs with execv, the main thread with execl (each
 * of the family is interposed on its own). */
static NI void ex_exec(int from_main)
{
	char *argv[] = {prog, NULL};
	if (from_main)
		execl(prog, prog, (char *)NULL);
	else
		execv(prog, argv);
	perror("exec_fix: exec");
}

static void *thread_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&waiting))
		usleep(1000);
	ex_thread_work();
	ex_exec(0);
	return NULL;
}

static NI void ex_wait(pthread_t th)
{
	atomic_store(&waiting, 1);
	pthread_join(th, NULL); /* never returns: the exec ends this thread */
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: exec_fix thread|main PROGRAM\n");
		return 2;
	}
	prog = argv[2];
	ex_main_work();
	if (strcmp(argv[1], "main") == 0) {
		ex_exec(1);
		return 1;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, thread_main, NULL) != 0)
		return 1;
	ex_wait(th);
	return 1;
}
