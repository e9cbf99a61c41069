/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracectl.h — what rearviewd tells a traced process over control.sock
 * about its tracing (StartTracing, StopTracing), and the thread lists a
 * process reports (Register, ThreadList).  Loop thread only.
 */
#ifndef RVD_TRACECTL_H
#define RVD_TRACECTL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "registry.h"
#include "rearview/control.pb-c.h"

/* Sends `p` a StartTracing (start) or StopTracing with release for `tid`;
 * nothing when p has no connection.  The registry's plan callback. */
void rvd_tracectl_send(struct rvd_process *p, pid_t tid, bool start);

/* Tells `p` to stop every thread and unmap every ring it holds, and forgets
 * its traced thread. */
void rvd_tracectl_release_all(struct rvd_process *p);

/* Whether `p` last reported a thread tracing or holding a ring. */
bool rvd_tracectl_holds_rings(const struct rvd_process *p);

/* Replaces p's thread list with the n reported ones.  Every tid must be a
 * thread of p->pid (/proc), else -EPERM; more than 4096 is -E2BIG; -ENOMEM. */
int rvd_tracectl_set_threads(struct rvd_process *p, Rearview__ThreadInfo **ti, size_t n);

#endif
