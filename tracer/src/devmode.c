/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devmode.c — developer mode: tracing a program with no daemon, driven by
 * the environment (trace.h lists the variables).  It parses the settings,
 * says on stderr (one line, prefix "rearview: ") what it cannot honour,
 * starts the threads the settings name as they appear (pthread_create() and
 * pthread_setname_np() are interposed for that), expands output names
 * (%p pid, %t tid, %e executable, %% percent), writes each traced thread's
 * capture when the thread ends and every remaining one at exit(), and
 * decides how an output path is written (rvt_output_write()).
 *
 * Invariants:
 * - The settings (dm) are written once, in rvt_devmode_env() under the
 *   library's init once, before any thread can read them; afterwards only
 *   dm.active changes (cleared in a fork child that is not traced).
 * - An output path is never replaced unless it is a regular file or does
 *   not exist; a FIFO or character device is written through; a symlink is
 *   resolved; anything else is refused.
 * - The table of started threads (known) holds nknown ≤ capknown entries,
 *   one per live thread started through the trampoline in names mode.
 * - Nothing here runs inside a trace point or a signal handler; this file is
 *   compiled without -finstrument-functions.
 */
#include "tracer-int.h"
#include "rearview/common.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DM_MAX_NAMES 16
/* The ring limit when every thread (or a list) is traced and
 * RV_TRACE_MAX_BUFFERS is unset. */
#define DM_MANY_BUFFERS 32u

enum dm_mode { DM_OFF, DM_MAIN, DM_ALL, DM_NAMES };

static struct {
	enum dm_mode mode;
	char names[DM_MAX_NAMES][16];
	unsigned nnames;
	int fork;     /* RV_TRACE_FORK=1: a fork child keeps tracing */
	char *output; /* RV_TRACE_FILE as a pattern, NULL when unset */
	int active;   /* this process writes captures */
} dm;

static atomic_int said_no_buffer;
static atomic_int matched_any;

void rvt_say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n] = '\n';
	/* One write: lines from several threads do not interleave. */
	ssize_t w = write(STDERR_FILENO, line, (size_t)n + 1);
	(void)w; /* nowhere left to report a failed report */
}

/* ---- settings ------------------------------------------------------------- */

static int parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	unsigned sh = 0;
	switch (*end) {
	case 'k':
	case 'K':
		sh = 10;
		end++;
		break;
	case 'm':
	case 'M':
		sh = 20;
		end++;
		break;
	case 'g':
	case 'G':
		sh = 30;
		end++;
		break;
	default:
		break;
	}
	if (*end || v > (RVT_MAX_BUFFER_BYTES >> sh))
		return -EINVAL;
	v <<= sh;
	if (v < RVT_MIN_BUFFER_BYTES || v > RVT_MAX_BUFFER_BYTES)
		return -ERANGE;
	*out = (size_t)v & ~(size_t)7;
	return 0;
}

static void parse_trace(const char *v)
{
	if (!v || !*v || strcmp(v, "0") == 0) {
		dm.mode = DM_OFF;
		return;
	}
	if (strcmp(v, "1") == 0) {
		dm.mode = DM_MAIN;
		return;
	}
	if (strcmp(v, "all") == 0) {
		dm.mode = DM_ALL;
		return;
	}
	static const char *const ambiguous[] = {"yes", "on", "true", "no", "off", "false"};
	for (size_t i = 0; i < sizeof(ambiguous) / sizeof(ambiguous[0]); i++)
		if (strcmp(v, ambiguous[i]) == 0)
			goto bad;
	const char *p = v;
	while (*p) {
		size_t n = strcspn(p, ",");
		/* /proc comm holds at most 15 bytes: a longer name never matches. */
		if (n == 0 || n > 15 || dm.nnames == DM_MAX_NAMES)
			goto bad;
		memcpy(dm.names[dm.nnames], p, n);
		dm.names[dm.nnames][n] = '\0';
		dm.nnames++;
		p += n;
		if (*p == ',' && *++p == '\0')
			goto bad;
	}
	dm.mode = DM_NAMES;
	return;
bad:
	rvt_say("rearview: RV_TRACE=%s not understood (use 1, all, or up to %d thread names "
		"of at most 15 bytes separated by commas); nothing is traced",
		v, DM_MAX_NAMES);
	dm.mode = DM_OFF;
	dm.nnames = 0;
}

/* Warns about % sequences the expansion does not know. */
static void check_pattern(const char *pat)
{
	for (const char *p = pat; *p; p++) {
		if (*p != '%')
			continue;
		p++;
		if (*p == 'p' || *p == 't' || *p == 'e' || *p == '%')
			continue;
		rvt_say("rearview: RV_TRACE_FILE=%s: unknown %%%c kept as is (known: %%p pid, %%t "
			"tid, %%e executable, %%%% a percent sign)",
			pat, *p ? *p : ' ');
		if (!*p)
			return;
	}
}

/* Says so at start if the output's directory cannot take a new file. */
static void check_output_dir(const char *pat)
{
	struct stat st;
	if (lstat(pat, &st) == 0 && !S_ISREG(st.st_mode))
		return; /* written through or refused when it is written */
	const char *slash = strrchr(pat, '/');
	char dir[PATH_MAX];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == pat)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - pat), pat);
	if (strchr(dir, '%'))
		return; /* depends on the expansion: checked at write time */
	if (access(dir, W_OK | X_OK) != 0)
		rvt_say("rearview: RV_TRACE_FILE=%s: cannot create files in %s (%s); no capture "
			"will be written there",
			pat, dir, strerror(errno));
}

static char *with_suffix(const char *pat, const char *suffix, const char *why)
{
	size_t n = strlen(pat) + strlen(suffix) + 1;
	char *s = malloc(n);
	if (!s)
		return NULL;
	snprintf(s, n, "%s%s", pat, suffix);
	rvt_say("rearview: RV_TRACE_FILE=%s has no %s; writing %s", pat, why, s);
	return s;
}

void rvt_devmode_env(size_t *buffer_bytes, unsigned *max_buffers)
{
	static int read_once;
	assert(!read_once);
	read_once = 1;
	const char *b = getenv("RV_TRACE_BUFFER");
	if (b && *b && parse_size(b, buffer_bytes) != 0)
		rvt_say("rearview: RV_TRACE_BUFFER=%s not understood (a byte count from %u to "
			"%llu, optional suffix k, m or g); using %zu bytes",
			b, RVT_MIN_BUFFER_BYTES, (unsigned long long)RVT_MAX_BUFFER_BYTES,
			*buffer_bytes);
	parse_trace(getenv("RV_TRACE"));
	const char *mb = getenv("RV_TRACE_MAX_BUFFERS");
	if (mb && *mb) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(mb, &end, 10);
		if (errno || *end || end == mb || v < 1 || v > 4096)
			rvt_say("rearview: RV_TRACE_MAX_BUFFERS=%s not understood (1 to 4096); "
				"using %u",
				mb, *max_buffers);
		else
			*max_buffers = (unsigned)v;
	} else if (dm.mode == DM_ALL || dm.mode == DM_NAMES) {
		*max_buffers = DM_MANY_BUFFERS;
	}
	const char *f = getenv("RV_TRACE_FORK");
	if (f && *f) {
		if (strcmp(f, "1") == 0)
			dm.fork = 1;
		else if (strcmp(f, "0") != 0)
			rvt_say("rearview: RV_TRACE_FORK=%s not understood (0 or 1); fork "
				"children are not traced",
				f);
	}
	const char *o = getenv("RV_TRACE_FILE");
	if (!o || !*o)
		return;
	check_pattern(o);
	int many = dm.mode == DM_ALL || dm.mode == DM_NAMES;
	char *pat = strdup(o);
	if (pat && many && !strstr(pat, "%t")) {
		char *n = with_suffix(pat, ".%t", "%t but several threads are traced");
		free(pat);
		pat = n;
	}
	if (pat && dm.fork && !strstr(pat, "%p")) {
		char *n = with_suffix(pat, ".%p", "%p but fork children are traced");
		free(pat);
		pat = n;
	}
	if (!pat) {
		rvt_say("rearview: RV_TRACE_FILE: out of memory; no capture will be written");
		return;
	}
	if (dm.mode == DM_OFF)
		rvt_say("rearview: RV_TRACE_FILE is set but RV_TRACE is not: nothing is traced "
			"unless the program starts tracing itself");
	check_output_dir(pat);
	dm.output = pat;
	dm.active = 1;
}

/* ---- output names --------------------------------------------------------- */

int rvt_output_name(const char *pat, pid_t pid, pid_t tid, char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[el > 0 ? el : 0] = '\0';
	const char *base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	size_t o = 0;
	for (const char *p = pat; *p; p++) {
		char num[24];
		const char *add = num;
		if (*p != '%' || !p[1]) {
			num[0] = *p;
			num[1] = '\0';
		} else {
			switch (*++p) {
			case 'p':
				snprintf(num, sizeof(num), "%d", (int)pid);
				break;
			case 't':
				snprintf(num, sizeof(num), "%d", (int)tid);
				break;
			case 'e':
				add = base;
				break;
			case '%':
				snprintf(num, sizeof(num), "%%");
				break;
			default:
				snprintf(num, sizeof(num), "%%%c", *p);
				break;
			}
		}
		size_t n = strlen(add);
		if (o + n >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, add, n);
		o += n;
	}
	if (o == 0)
		return -EINVAL;
	out[o] = '\0';
	return 0;
}

/* ---- writing a path ------------------------------------------------------- */

/* A regular file (new or existing): replaced atomically and durably by the
 * shared helper (a temporary beside it, fsync, rename, directory fsync). */
static int write_atomic(const char *path, const void *buf, size_t len)
{
	return rvc_write_file_atomic(path, buf, len, 0644);
}

/* Opens an existing FIFO or character device for writing, never creating
 * or truncating anything; a FIFO's open waits for its reader. */
static int write_through(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = fstat(fd, &st) != 0 ? -errno : 0;
	if (rc == 0 && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
		rc = -EINVAL; /* swapped since it was looked at: refuse */
	if (rc == 0)
		rc = rvc_write_all(fd, buf, len);
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: the descriptor. */
static int std_fd(const char *path)
{
	if (strcmp(path, "/dev/stdout") == 0)
		return STDOUT_FILENO;
	if (strcmp(path, "/dev/stderr") == 0)
		return STDERR_FILENO;
	const char *n = NULL;
	if (strncmp(path, "/dev/fd/", 8) == 0)
		n = path + 8;
	else if (strncmp(path, "/proc/self/fd/", 14) == 0)
		n = path + 14;
	if (!n || !*n)
		return -1;
	char *end;
	long v = strtol(n, &end, 10);
	return *end || v < 0 || v > INT_MAX ? -1 : (int)v;
}

int rvt_output_write(const char *path, const void *buf, size_t len)
{
	assert(path && *path);
	int fd = std_fd(path);
	if (fd >= 0)
		return rvc_write_all(fd, buf, len);
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? write_atomic(path, buf, len) : -errno;
	if (S_ISLNK(st.st_mode)) {
		char real[PATH_MAX];
		if (!realpath(path, real))
			return -errno; /* dangling or looping: refused */
		if (lstat(real, &st) != 0)
			return -errno;
		path = real;
		if (S_ISREG(st.st_mode))
			return write_atomic(real, buf, len);
		if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))
			return write_through(real, buf, len);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	if (S_ISREG(st.st_mode))
		return write_atomic(path, buf, len);
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))
		return write_through(path, buf, len);
	return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
}

/* ---- captures ------------------------------------------------------------- */

static void capture_one(pid_t tid)
{
	assert(dm.output);
	char path[PATH_MAX];
	int rc = rvt_output_name(dm.output, getpid(), tid, path, sizeof(path));
	if (rc == 0)
		rc = rvt_capture_to_path(tid, path);
	if (rc == 0 || rc == -ENODATA)
		return;
	const char *why = rc == -EINVAL ? "not a regular file, FIFO or character device; refused"
					: strerror(-rc);
	rvt_say("rearview: capture of thread %d not written to %s: %s", (int)tid,
		rc == -ENAMETOOLONG ? dm.output : path, why);
}

int rvt_devmode_capture_all(void)
{
	if (!dm.output)
		return -ENOENT;
	struct rvt_thread_info snap[256];
	size_t n = rvt_threads_snapshot(snap, sizeof(snap) / sizeof(snap[0]));
	for (size_t i = 0; i < n; i++)
		if (snap[i].buffer_bytes)
			capture_one(snap[i].tid);
	return 0;
}

void rvt_devmode_before_exec(void)
{
	if (dm.active)
		rvt_devmode_capture_all();
}

static void at_exit_capture(void)
{
	if (dm.active)
		rvt_devmode_capture_all();
	if (dm.mode == DM_NAMES && !atomic_load(&matched_any))
		rvt_say("rearview: RV_TRACE: no thread of pid %d had one of the names given; "
			"nothing was traced",
			(int)getpid());
}

/* ---- threads started through pthread_create() ---------------------------- */

/* Threads started through the trampoline, pthread_t → tid, so that a thread
 * named by another thread can be started by its tid.  A thread enters the
 * table before it reads its own name: a name set before that read is seen
 * by the thread, one set after it is found here. */
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static struct known {
	pthread_t th;
	pid_t tid;
} * known;

__attribute__((constructor)) static void known_lock_own(void)
{
	rvt_locks_own(&known_lock);
}
static size_t nknown, capknown;

static void known_add(void)
{
	pthread_mutex_lock(&known_lock);
	if (nknown == capknown) {
		size_t nc = capknown ? capknown * 2 : 16;
		struct known *n = realloc(known, nc * sizeof(*n));
		if (n) {
			known = n;
			capknown = nc;
		}
	}
	if (nknown < capknown) /* else out of memory: only self-naming matches */
		known[nknown++] = (struct known){pthread_self(), rvt_gettid()};
	assert(nknown <= capknown);
	pthread_mutex_unlock(&known_lock);
}

static void known_del(void)
{
	pthread_t self = pthread_self();
	pthread_mutex_lock(&known_lock);
	for (size_t i = 0; i < nknown; i++)
		if (pthread_equal(known[i].th, self)) {
			known[i] = known[--nknown];
			break;
		}
	pthread_mutex_unlock(&known_lock);
}

/* The tid of a live trampolined thread, or 0. */
static pid_t known_tid(pthread_t th)
{
	pid_t tid = 0;
	pthread_mutex_lock(&known_lock);
	for (size_t i = 0; i < nknown && !tid; i++)
		if (pthread_equal(known[i].th, th))
			tid = known[i].tid;
	pthread_mutex_unlock(&known_lock);
	return tid;
}

/* ---- which threads -------------------------------------------------------- */

static int name_wanted(const char *name)
{
	for (unsigned i = 0; i < dm.nnames; i++)
		if (strcmp(dm.names[i], name) == 0)
			return 1;
	return 0;
}

static void start_self(void)
{
	int rc = rvt_start(0);
	if (rc == 0) {
		atomic_store(&matched_any, 1);
		return;
	}
	if (rc == -ENOBUFS && atomic_exchange(&said_no_buffer, 1))
		return;
	rvt_say("rearview: thread %d not traced: %s%s", (int)rvt_gettid(), strerror(-rc),
		rc == -ENOBUFS ? " (raise RV_TRACE_MAX_BUFFERS; said once)" : "");
}

static void self_name(char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)rvt_gettid());
	buf[0] = '\0';
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The calling thread just appeared (or renamed itself). */
static void consider_self(int is_main)
{
	if (dm.mode == DM_ALL || (dm.mode == DM_MAIN && is_main)) {
		start_self();
	} else if (dm.mode == DM_NAMES) {
		char name[32];
		self_name(name, sizeof(name));
		if (name_wanted(name))
			start_self();
	}
}

/* The table's lock is held across fork() (taken before the core's registry
 * lock: prepare handlers run in reverse order of registration), so the
 * child gets it consistent and unlocks it. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&known_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&known_lock);
}

/* Runs after the core's child handler (registered earlier), which left the
 * child untraced with no rings.  A child that does not trace does not write
 * at exit either. */
static void atfork_child(void)
{
	nknown = 0; /* the other threads are gone */
	pthread_mutex_unlock(&known_lock);
	if (!dm.fork) {
		dm.active = 0;
		return;
	}
	consider_self(1);
}

void rvt_devmode_start(void)
{
	if (dm.mode == DM_OFF && !dm.output)
		return;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	consider_self(1);
	atexit(at_exit_capture);
}

/* ---- thread creation ------------------------------------------------------ */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*setname_fn)(pthread_t, const char *);

/* glibc's own names for the two functions: strong in a static libc.a (whose
 * pthread_create and pthread_setname_np are weak aliases of them), absent
 * from libc.so.  Weak here, so a dynamic program leaves them NULL and finds
 * libc's through rvt_next_fn(); a fully static one, where dlsym finds
 * nothing, links them with -Wl,-u,__pthread_create,-u,__pthread_setname_np
 * (trace.h). */
extern int __pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
	__attribute__((weak));
extern int __pthread_setname_np(pthread_t, const char *) __attribute__((weak));

static void *next_symbol(const char *name, void *static_fallback)
{
	void *f = rvt_next_fn(name, NULL);
	if (!f)
		f = static_fallback;
	if (!f)
		rvt_say("rearview: %s of the C library not found (a static program must link "
			"with -Wl,-u,__pthread_create,-u,__pthread_setname_np)",
			name);
	return f;
}

static create_fn real_create(void)
{
	static _Atomic(create_fn) fn;
	create_fn f = atomic_load(&fn);
	if (!f) {
		f = (create_fn)next_symbol("pthread_create", (void *)__pthread_create);
		atomic_store(&fn, f);
	}
	return f;
}

struct tramp {
	void *(*fn)(void *);
	void *arg;
};

static void thread_end(void *unused)
{
	(void)unused;
	known_del();
	if (!dm.active || !rvt_is_tracing(0))
		return;
	rvt_stop(0, 0);
	capture_one(rvt_gettid());
	rvt_stop(0, 1);
}

static void *trampoline(void *p)
{
	struct tramp t = *(struct tramp *)p;
	free(p);
	/* Every thread registers at birth, before its own code: it can then be
	 * started, stopped and captured by tid without a signal (trace.h). */
	rvt_thread_register();
	if (dm.mode == DM_NAMES)
		known_add();
	consider_self(0);
	void *ret;
	pthread_cleanup_push(thread_end, NULL);
	ret = t.fn(t.arg);
	pthread_cleanup_pop(1);
	return ret;
}

int rvt_pthread_create_untraced(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
				void *arg)
{
	create_fn f = real_create();
	return f ? f(th, attr, fn, arg) : ENOSYS;
}

RVT_API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			   void *arg)
{
	create_fn f = real_create();
	if (!f)
		return ENOSYS;
	/* The program's call, but the trampoline's memory is librvtrace's. */
	int own = rvt_own_begin();
	struct tramp *t = malloc(sizeof(*t));
	rvt_own_end(own);
	if (!t)
		return EAGAIN;
	t->fn = fn;
	t->arg = arg;
	int rc = f(th, attr, trampoline, t);
	if (rc)
		free(t);
	return rc;
}

RVT_API int pthread_setname_np(pthread_t th, const char *name)
{
	static _Atomic(setname_fn) fn;
	setname_fn f = atomic_load(&fn);
	if (!f) {
		f = (setname_fn)next_symbol("pthread_setname_np", (void *)__pthread_setname_np);
		atomic_store(&fn, f);
	}
	if (!f)
		return ENOSYS;
	int rc = f(th, name);
	if (rc != 0 || dm.mode != DM_NAMES || !name_wanted(name))
		return rc;
	if (pthread_equal(th, pthread_self())) {
		if (!rvt_is_tracing(0))
			start_self();
		return rc;
	}
	/* Named by another thread: started by tid if it came through
	 * pthread_create() (it may exit meanwhile: then nothing happens). */
	pid_t tid = known_tid(th);
	if (tid > 0 && rvt_start(tid) == 0)
		atomic_store(&matched_any, 1);
	return rc;
}
