/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rearview/trace.h — librvtrace, the in-process method tracer.
 *
 * Build a program with -finstrument-functions (gcc) or
 * -finstrument-functions-after-inlining (clang) and link librvtrace: every
 * instrumented function's entry and exit on a traced thread goes into that
 * thread's ring buffer (tracer/FORMAT.md §1).  Tracing a thread costs a few
 * stores per trace point; an untraced thread pays one load and a branch.
 *
 * Threads: the main thread is registered when the library loads; every
 * thread created with pthread_create() afterwards registers itself as it
 * starts, before its start routine runs (librvtrace interposes
 * pthread_create and calls the real one through dlsym(RTLD_NEXT)); others
 * when they call rvt_thread_register() or rvt_start(0).  A thread that
 * existed before the library loaded and never called in is unknown
 * (-ESRCH).  A fully static program (`-static`) links with
 * -Wl,-u,__pthread_create,-u,__pthread_setname_np so the C library's own
 * functions can be found (see the developer-mode paragraph below).  Any
 * thread may be started, stopped and captured by tid from any thread.
 *
 * No signal: stopping and capturing never interrupt the traced thread.  The
 * control side publishes the change, runs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) and waits only while the
 * thread is inside a trace point (trace-inline.h, DESIGN), so a thread
 * blocked in any system call is stopped or captured at once and its call
 * returns exactly as it would untraced.  rvt_init() registers the process
 * for that barrier; a kernel without it (before Linux 4.14) makes rvt_init()
 * fail with -ENOSYS.  A trace point of a signal handler that interrupted a
 * trace point of the same thread is dropped.
 *
 * Environment (read once, when the library loads; README "Tracing your own
 * program" has the details).  A value it cannot honour is said in one line
 * on stderr ("rearview: ...") and the default kept:
 *   RV_TRACE=1            trace the main thread from process start
 *   RV_TRACE=all          trace every thread, also those created later
 *   RV_TRACE=a,b          trace the threads named a or b (comm), matched when
 *                         a thread starts and when pthread_setname_np()
 *                         names it (itself, or another thread naming one
 *                         created by pthread_create())
 *   RV_TRACE_FORK=1       a forked child keeps tracing (default: it does not
 *                         trace and writes no capture)
 *   RV_TRACE_FILE=pattern one capture per traced thread, written when the
 *                         thread ends and at exit() or before an exec (any
 *                         thread's) for the others, and on each
 *                         rvt_capture_default() call; %p pid, %t tid,
 *                         %e executable name, %% percent sign
 *   RV_TRACE_BUFFER=n     ring size in bytes per thread (suffix k, m or g)
 *   RV_TRACE_MAX_BUFFERS  at most this many ring buffers per process (2, or
 *                         32 with RV_TRACE=all or a name list)
 *   RV_SOCKET=path        the daemon's control socket: the process joins it
 *                         at load (see rvt_control_start()); `off`: never
 *   RV_TRACE_MUTE=spec    the tracer's own budget (rvt_set_mute()): `on` (the
 *                         default on x86-64: 1 %), `off`, or PERCENT[%], the
 *                         share of each traced thread's CPU time its trace
 *                         points may take (read when tracing first starts)
 *
 * Threads: with RV_TRACE=all or a name list, librvtrace interposes
 * pthread_create() (to start new threads and capture them as they end) and
 * pthread_setname_np(); they behave as libc's otherwise.  A fully static
 * program (-static) links with -Wl,-u,__pthread_create,-u,__pthread_setname_np
 * so that libc's own functions are there to call.
 *
 * Errors: every fallible function returns 0 (or a count / descriptor) or a
 * negative errno.  Every function is thread-safe except where noted.  None of
 * them may be called from a signal handler.
 */
#ifndef REARVIEW_TRACE_H
#define REARVIEW_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RVT_BUILDING_LIBRARY)
#define RVT_API __attribute__((visibility("default")))
#else
#define RVT_API
#endif

/* Capture file format version written by this library (FORMAT.md). */
#define RVT_FORMAT_VERSION 2u
/* Default ring size per thread, and default buffer limit per process. */
#define RVT_DEFAULT_BUFFER_BYTES (32u << 20)
#define RVT_DEFAULT_MAX_BUFFERS	 2u
/* Smallest and largest ring accepted (bytes; FORMAT.md: ≤ 2^32 slots). */
#define RVT_MIN_BUFFER_BYTES 128u
#define RVT_MAX_BUFFER_BYTES (8ull << 32)

/*
 * Initialises the library (clock, membarrier registration, fork handler).  Called
 * automatically when the library loads; calling it again is a no-op.
 * Returns 0 or a negative errno (-ENOSYS when the kernel has no
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED).
 */
RVT_API int rvt_init(void);

/*
 * Registers the calling thread so it can be controlled by tid.  Idempotent.
 * Returns the thread's tid or a negative errno.
 */
RVT_API int rvt_thread_register(void);

/*
 * Sets the ring size (bytes, rounded down to 8; RVT_MIN_BUFFER_BYTES ..
 * RVT_MAX_BUFFER_BYTES) for buffers allocated from now on, and the
 * per-process buffer limit (≥ 1).  Pass 0 to keep a value.  Returns 0 or
 * -EINVAL.  A thread that exits while traced keeps its ring for a later
 * capture by tid, until a live thread needs a buffer at the limit.
 */
RVT_API int rvt_set_config(size_t buffer_bytes, unsigned max_buffers);

/*
 * Starts tracing thread `tid` (0: the calling thread; any thread of the
 * process is registered if needed).  A thread that had a buffer continues in it; otherwise a new
 * buffer is mapped.  Returns 0, -ESRCH (tid not registered or exited), -ENOBUFS (the buffer limit
 * is reached) or -ENOMEM.  Starting a traced thread is a no-op.
 */
RVT_API int rvt_start(pid_t tid);

/*
 * Stops tracing thread `tid` (0: the calling thread).  Returns once no
 * trace point of the thread can write its buffer any more, with the end
 * position recorded: at once unless the thread is inside a trace point,
 * whose end it waits for (nanoseconds; it never interrupts the thread).  If
 * `release` is non-zero the buffer is unmapped (its contents lost).  Returns
 * 0, -ESRCH or -ETIMEDOUT (a trace point of the thread did not end within 2 s:
 * the thread is stopped by a debugger, or a signal handler left a trace point
 * by longjmp; nothing changed).
 */
RVT_API int rvt_stop(pid_t tid, int release);

/*
 * The tracer's own budget (x86-64 hand-written hooks only; on by default
 * there).  While tracing is on, a library thread looks at every traced
 * thread now and then (on x86-64 glibc a thread made with clone() alone,
 * which glibc does not count: a single-threaded program stays one to
 * malloc and stdio, whose locks a second pthread would switch on): when
 * its trace points took more than PERCENT of the CPU time it ran since the
 * last look (the measured cost of one trace point times the slots it
 * wrote), the functions that gave most of its events for the least self
 * time are muted until the share is a quarter of the
 * budget — never one with a tenth or more of the thread's self time, unless
 * its own trace points alone cost more than the whole budget.  The
 * thread looks 1 ms after tracing starts, every 16 ms while a thread is
 * over the budget and up to every 128 ms while they run under it; a traced
 * thread that writes faster than the budget allows wakes it sooner (one
 * futex wake from inside a trace point, at most every 2 ms), so a new phase
 * of the program is caught within a few thousand events.  Code is changed
 * through /proc/self/mem (with mprotect where that is refused).  A muted
 * function's trace points become no-ops (rvcc's inline mode and call mode:
 * one byte of each changes, with no signal or trap; a key from
 * rvt_key_new() or a native function a runtime traces by address is muted
 * by a flag the runtime reads, trace-runtime.h), its entries and exits stay
 * paired in the ring, its time folds into its callers' self time, and every
 * later capture carries a MUTED record (FORMAT.md).  A muted function stays
 * muted for the life of the process; a capture that must count every call
 * sets "off".  A spec takes effect when a thread next starts tracing.
 * `spec`: "on" (1 %), "off", or "PERCENT" / "PERCENT%" (0 < PERCENT <=
 * 100).  Returns 0, -EINVAL (spec not understood) or -ENOTSUP (on, where
 * muting is not available).  Any thread.
 */
RVT_API int rvt_set_mute(const char *spec);

/* Returns 1 if thread `tid` (0: the caller) is being traced, 0 if not. */
RVT_API int rvt_is_tracing(pid_t tid);

/* Marks thread `tid` (0: the caller) as the UI thread. Returns 0 or -ESRCH. */
RVT_API int rvt_set_ui_thread(pid_t tid);

/*
 * Freezes the buffer of thread `tid` (0: the caller) and writes it as a
 * capture file (FORMAT.md §2).  A traced thread keeps tracing into a spare
 * buffer it switches to at the freeze, so no call is lost between two
 * captures; it never waits for the write.  The spare may exceed
 * RV_TRACE_MAX_BUFFERS by one while the frozen buffer is being written (it
 * is unmapped right after).  When no spare can be mapped the thread stops at
 * the freeze and resumes in a new buffer once the capture is built, and that
 * buffer begins with a LOSS record (FORMAT.md §1) giving the span lost.
 *
 * rvt_capture_to_path(): a new or regular file `path` replaced atomically
 *   (mode 0644: an unpredictable temporary name in the same directory,
 *   fsync, rename, fsync of the directory); a FIFO or character device is
 *   written through (never replaced); /dev/stdout, /dev/stderr and
 *   /dev/fd/N are written to that descriptor; a symlink is followed to its
 *   target.  Anything else is refused: -EISDIR (a directory) or -EINVAL.
 *   Returns 0 or a negative errno.
 * rvt_capture_to_memfd(): returns a new sealed memfd (caller closes) holding
 *   the capture, or a negative errno.  *size (optional) gets its size.
 * rvt_capture_default(): every thread holding a buffer, each to the
 *   RV_TRACE_FILE pattern expanded for it (failures are said on stderr).
 *   Returns 0, or -ENOENT when RV_TRACE_FILE is unset.
 * Errors: -ESRCH (unknown tid), -ENODATA (the thread has no buffer),
 * -ETIMEDOUT (see rvt_stop), -ENOMEM, I/O errors.
 */
RVT_API int rvt_capture_to_path(pid_t tid, const char *path);
RVT_API int rvt_capture_to_memfd(pid_t tid, uint64_t *size);
RVT_API int rvt_capture_default(void);

/*
 * Manual trace points for runtimes that trace their own functions (an
 * interpreter's bytecode functions): `key` is any stable, non-NULL pointer
 * identifying the function (encoded like a function address).  Pair every
 * rvt_enter() with one rvt_exit() on the same thread.  Async-signal-safe;
 * no effect on an untraced thread.  A manual frame is never closed by
 * librvtrace's handling of longjmp and C++ exceptions: the runtime that
 * entered it unwinds it (rvt_exit_n() when its own error handling drops
 * frames), so a frame is never closed twice.
 */
RVT_API void rvt_enter(const void *key);
RVT_API void rvt_exit(void);

/*
 * Names a manual key when a capture is written: fill `buf` (capacity `len`)
 * with a NUL-terminated name and return 0, or return a negative value if the
 * key is unknown.  Called on the capturing thread, never in a trace point.
 */
typedef int (*rvt_resolve_fn)(const void *key, char *buf, size_t len, void *arg);

/* Installs (or with NULL removes) the resolver. `arg` is borrowed. */
RVT_API void rvt_set_resolver(rvt_resolve_fn fn, void *arg);

/*
 * Runtime integrations (tracer/src/runtime.c; the pattern of rvlua,
 * tracer/runtimes/lua/): a script VM calls rvt_enter() when one of its
 * frames starts (a bytecode function or a native function it calls) and
 * rvt_exit() when it ends, from its own call and return paths.  Frames that
 * end without returning — unwound by an error, or suspended by a coroutine
 * yield — end with rvt_exit_n(number unwound); a resumed coroutine enters
 * its suspended frames again, outermost first.  The VM's own C is left
 * uninstrumented.  rearview/trace-runtime.h has the inline "is this thread
 * traced" test that keeps the untraced cost to one load and a branch.
 *
 * Keys: a function object's address is not a key when the VM may free it
 * and reuse the address for another function before a capture names it.
 * rvt_key_new() returns a key that is never reused, named `name` forever;
 * install rvt_key_resolve() (or call it from your own resolver) so captures
 * name those keys.
 */

/* Records `n` exits on the calling thread (n = 0: nothing).  Async-signal-safe. */
RVT_API void rvt_exit_n(unsigned n);

/*
 * Returns a new key for rvt_enter(), never returned before in this process,
 * that rvt_key_resolve() names `name` (copied; truncated to 511 bytes).  Keys
 * are never freed: call it once per function, not per call (a few dozen
 * bytes each).  Returns NULL when out of memory.  Thread-safe; not for
 * signal handlers.
 */
RVT_API const void *rvt_key_new(const char *name);

/*
 * Says that this process's runtime asks rvt_addr_muted() (trace-runtime.h)
 * before it traces a frame keyed by a native function's address (rvlua's C
 * functions), and records neither the entry nor the exit of a frame started
 * while it answers yes.  From then on the tracer's budget (rvt_set_mute())
 * may mute such addresses too.  Call it once, before tracing starts, from
 * the runtime's initialisation.  Any thread.
 */
RVT_API void rvt_runtime_checks_addresses(void);

/*
 * An rvt_resolve_fn for keys from rvt_key_new(): copies the key's name into
 * `buf` (capacity `len`, NUL-terminated, truncated to fit) and returns 0, or
 * returns -ENOENT for any other value.  `arg` is ignored.  Thread-safe.
 */
RVT_API int rvt_key_resolve(const void *key, char *buf, size_t len, void *arg);

/*
 * Starts the control thread, which connects to the daemon's control socket
 * `socket_path` (NULL: $RV_SOCKET, else /run/rearview/control.sock), registers
 * the process and follows its commands, reconnecting with backoff.  Returns 0,
 * -EALREADY if running, or a negative errno.
 *
 * librvtrace calls it itself at load when there is a daemon to join: RV_SOCKET
 * is set (and not `off`), or /run/rearview/control.sock exists.  A program's
 * own call then returns 0 for the same socket and moves the connection to
 * another one; -EALREADY is only for a second call of the program's own.
 */
RVT_API int rvt_control_start(const char *socket_path);

/* Stops the control thread and closes its socket. Safe when not running. */
RVT_API void rvt_control_stop(void);

#ifdef __cplusplus
}
#endif
#endif
