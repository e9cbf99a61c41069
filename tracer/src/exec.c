/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exec.c — the exec family, interposed: a successful exec replaces the
 * process image and every ring with it, so the captures developer mode
 * writes at exit (RV_TRACE_FILE) are written before the exec instead, from
 * whichever thread calls it (the kernel ends the others; their rings are
 * captured first, as at exit).  A failed exec leaves the program running
 * and tracing on the spare rings the captures switched to; its captures at
 * exit then replace those written before the exec.
 *
 * execve, execv, execvp, execvpe, execl, execle, execlp, fexecve and
 * execveat are interposed (glibc's own exec functions call its internal
 * execve directly, so each needs its own); the real ones come from
 * rvt_next_fn() (as the lock interposers'), or in a static program from
 * glibc's internal names (weak here), or from the system call.  A vfork child (it shares the
 * parent's memory, and the parent's other threads hold its locks) writes
 * nothing: it is told apart by its pid.
 *
 * Invariants: nothing here runs in a trace point; the program's traced
 * functions called meanwhile (its own malloc) are not traced: rvt_own_begin.
 * This file is compiled without -finstrument-functions.
 */
#include "tracer-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

typedef int (*execve_fn)(const char *path, char *const argv[], char *const envp[]);
typedef int (*execveat_fn)(int fd, const char *path, char *const argv[], char *const envp[],
			   int flags);
typedef int (*fexecve_fn)(int fd, char *const argv[], char *const envp[]);

/* glibc's internal names, strong in a static libc.a (absent from libc.so,
 * so NULL in a dynamic program). */
extern int __execve(const char *path, char *const argv[], char *const envp[]) __attribute__((weak));
extern int __execvpe(const char *file, char *const argv[], char *const envp[])
	__attribute__((weak));

/* The process whose memory this is: a vfork child has another pid. */
static pid_t owner;

static void set_owner(void)
{
	owner = getpid();
}

__attribute__((constructor)) static void exec_init(void)
{
	set_owner();
	pthread_atfork(NULL, NULL, set_owner);
}

/* What exit would write, written now (from any thread, before the image and
 * its rings go). */
static void before_exec(void)
{
	if (getpid() != owner)
		return; /* a vfork child */
	int own = rvt_own_begin();
	rvt_devmode_before_exec();
	rvt_own_end(own);
}

static void *next(_Atomic(void *) *slot, const char *name, void *fallback)
{
	void *f = atomic_load_explicit(slot, memory_order_relaxed);
	if (!f) {
		f = rvt_next_fn(name, NULL);
		if (!f)
			f = fallback;
		atomic_store_explicit(slot, f, memory_order_relaxed);
	}
	return f;
}

static int real_execve(const char *path, char *const argv[], char *const envp[])
{
	static _Atomic(void *) slot;
	execve_fn f = (execve_fn)next(&slot, "execve", (void *)__execve);
	if (f)
		return f(path, argv, envp);
	return (int)syscall(SYS_execve, path, argv, envp);
}

static int real_execvpe(const char *file, char *const argv[], char *const envp[])
{
	static _Atomic(void *) slot;
	execve_fn f = (execve_fn)next(&slot, "execvpe", (void *)__execvpe);
	if (f)
		return f(file, argv, envp);
	errno = ENOSYS;
	return -1;
}

RVT_API int execve(const char *path, char *const argv[], char *const envp[])
{
	before_exec();
	return real_execve(path, argv, envp);
}

RVT_API int execv(const char *path, char *const argv[])
{
	before_exec();
	return real_execve(path, argv, environ);
}

RVT_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	before_exec();
	return real_execvpe(file, argv, envp);
}

RVT_API int execvp(const char *file, char *const argv[])
{
	before_exec();
	return real_execvpe(file, argv, environ);
}

RVT_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	static _Atomic(void *) slot;
	before_exec();
	fexecve_fn f = (fexecve_fn)next(&slot, "fexecve", NULL);
	if (f)
		return f(fd, argv, envp);
	return (int)syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
}

RVT_API int execveat(int fd, const char *path, char *const argv[], char *const envp[], int flags)
{
	static _Atomic(void *) slot;
	before_exec();
	execveat_fn f = (execveat_fn)next(&slot, "execveat", NULL);
	if (f)
		return f(fd, path, argv, envp, flags);
	return (int)syscall(SYS_execveat, fd, path, argv, envp, flags);
}

/* Frees what collect_args() allocated, keeping errno. */
static void free_args(char **argv)
{
	int e = errno, own = rvt_own_begin();
	free(argv);
	rvt_own_end(own);
	errno = e;
}

/* The arguments of an execl-style call, arg0 first, NULL-terminated, in a
 * new array (caller frees); *envp gets the pointer after the NULL when
 * `with_env`.  NULL with errno ENOMEM. */
static char **collect_args(const char *arg0, va_list ap, int with_env, char *const **envp)
{
	va_list cp;
	va_copy(cp, ap);
	size_t n = 1;
	if (arg0)
		while (va_arg(cp, const char *))
			n++;
	va_end(cp);
	int own = rvt_own_begin();
	char **argv = malloc((n + 1) * sizeof(*argv));
	rvt_own_end(own);
	if (!argv) {
		errno = ENOMEM;
		return NULL;
	}
	argv[0] = (char *)arg0;
	for (size_t i = 1; i < n; i++)
		argv[i] = va_arg(ap, char *);
	if (arg0)
		(void)va_arg(ap, char *); /* the NULL */
	argv[n] = NULL;
	if (with_env)
		*envp = va_arg(ap, char *const *);
	return argv;
}

/* An execl-style call: its arguments as an array, then execv (`how` 'v'),
 * execvp ('p') or execve with the environment after the NULL ('e'). */
static int exec_list(char how, const char *path, const char *arg0, va_list ap)
{
	char *const *envp = NULL;
	char **argv = collect_args(arg0, ap, how == 'e', &envp);
	if (!argv)
		return -1;
	int rc = how == 'v'   ? execv(path, argv)
		 : how == 'p' ? execvp(path, argv)
			      : execve(path, argv, envp);
	free_args(argv);
	return rc;
}

RVT_API int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	va_start(ap, arg0);
	int rc = exec_list('v', path, arg0, ap);
	va_end(ap);
	return rc;
}

RVT_API int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	va_start(ap, arg0);
	int rc = exec_list('p', file, arg0, ap);
	va_end(ap);
	return rc;
}

RVT_API int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	va_start(ap, arg0);
	int rc = exec_list('e', path, arg0, ap);
	va_end(ap);
	return rc;
}
