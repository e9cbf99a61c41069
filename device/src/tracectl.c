/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracectl.c — the control.sock messages that start, stop and release a
 * traced process's rings, and the thread lists it reports (tracectl.h).
 *
 * Invariants: a process's thread list only ever holds tids that are its
 * own threads (checked under /proc/PID/task when reported), so a peer
 * cannot make the daemon plan or send for another process's thread.
 */
#include "tracectl.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"

void rvd_tracectl_send(struct rvd_process *p, pid_t tid, bool start)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__StartTracing st = REARVIEW__START_TRACING__INIT;
	Rearview__StopTracing sp = REARVIEW__STOP_TRACING__INIT;

	if (start) {
		st.tid = tid;
		m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_START;
		m.start = &st;
	} else {
		sp.tid = tid;
		sp.release_buffer = true;
		m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_STOP;
		m.stop = &sp;
	}
	rvd_info("pid %d: %s tracing tid %d", (int)p->pid, start ? "start" : "stop", (int)tid);
	if (p->conn)
		rvd_conn_send(p->conn, &m.base);
}

void rvd_tracectl_release_all(struct rvd_process *p)
{
	Rearview__ControlMessage m = REARVIEW__CONTROL_MESSAGE__INIT;
	Rearview__StopTracing sp = REARVIEW__STOP_TRACING__INIT;

	sp.all_threads = true;
	sp.release_buffer = true;
	m.msg_case = REARVIEW__CONTROL_MESSAGE__MSG_STOP;
	m.stop = &sp;
	rvd_info("pid %d: stop tracing and release every buffer", (int)p->pid);
	p->traced_tid = 0;
	if (p->conn)
		rvd_conn_send(p->conn, &m.base);
}

bool rvd_tracectl_holds_rings(const struct rvd_process *p)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tracing || p->threads[i].buffer_bytes)
			return true;
	return false;
}

/* Whether tid is a thread of process pid. */
static bool tid_of(pid_t pid, pid_t tid)
{
	char path[64];

	if (tid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(path, F_OK) == 0;
}

int rvd_tracectl_set_threads(struct rvd_process *p, Rearview__ThreadInfo **ti, size_t n)
{
	struct rvd_thread *t;
	int rc;

	if (n > 4096)
		return -E2BIG;
	t = calloc(n ? n : 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!tid_of(p->pid, ti[i]->tid)) {
			free(t);
			return -EPERM;
		}
		t[i].tid = ti[i]->tid;
		t[i].is_ui = ti[i]->is_ui;
		t[i].tracing = ti[i]->tracing;
		t[i].buffer_bytes = ti[i]->buffer_bytes;
		snprintf(t[i].name, sizeof(t[i].name), "%s", ti[i]->name ? ti[i]->name : "");
	}
	rc = rvd_process_set_threads(p, t, n);
	free(t);
	assert(rc != 0 || p->nthreads == n);
	return rc;
}
