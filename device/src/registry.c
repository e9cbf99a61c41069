/* SPDX-License-Identifier: Apache-2.0 */
/*
 * registry.c — process registry and the "N most recently foreground apps"
 * tracing plan.  Invariant: traced_tid of a process is exactly what the
 * daemon last asked it to trace, or what it took over at registration;
 * rvd_registry_plan() and rvd_registry_adopt() are the only writers.
 */
#include "registry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "offcpu.h"

void rvd_registry_init(struct rvd_registry *reg)
{
	memset(reg, 0, sizeof(*reg));
}

static void process_free(struct rvd_process *p)
{
	rvd_offcpu_close(p->offcpu);
	free(p->threads);
	free(p);
}

void rvd_registry_release(struct rvd_registry *reg)
{
	struct rvd_process *p = reg->head;

	while (p) {
		struct rvd_process *next = p->next;

		process_free(p);
		p = next;
	}
	rvd_registry_init(reg);
}

struct rvd_process *rvd_registry_find(const struct rvd_registry *reg, pid_t pid)
{
	for (struct rvd_process *p = reg->head; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

struct rvd_process *rvd_registry_add(struct rvd_registry *reg, pid_t pid, int *err)
{
	struct rvd_process *p;

	if (rvd_registry_find(reg, pid)) {
		*err = -EEXIST;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	p->pid = pid;
	p->next = reg->head;
	reg->head = p;
	reg->nprocs++;
	return p;
}

static void mru_drop(struct rvd_registry *reg, pid_t pid)
{
	unsigned i, j = 0;

	for (i = 0; i < RVD_MRU_MAX && reg->mru[i]; i++)
		if (reg->mru[i] != pid)
			reg->mru[j++] = reg->mru[i];
	for (; j < RVD_MRU_MAX; j++)
		reg->mru[j] = 0;
}

void rvd_registry_remove(struct rvd_registry *reg, struct rvd_process *p)
{
	struct rvd_process **pp;

	for (pp = &reg->head; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			reg->nprocs--;
			break;
		}
	}
	mru_drop(reg, p->pid);
	process_free(p);
}

int rvd_process_set_threads(struct rvd_process *p, const struct rvd_thread *threads, size_t n)
{
	struct rvd_thread *copy = NULL;

	if (n) {
		copy = calloc(n, sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, threads, n * sizeof(*copy));
	}
	free(p->threads);
	p->threads = copy;
	p->nthreads = n;
	for (size_t i = 0; i < n; i++)
		if (copy[i].is_ui)
			p->ui_tid = copy[i].tid;
	return 0;
}

uint64_t rvd_process_buffer_bytes(const struct rvd_process *p)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < p->nthreads; i++)
		sum += p->threads[i].buffer_bytes;
	return sum;
}

void rvd_registry_foreground(struct rvd_registry *reg, pid_t pid, pid_t ui_tid)
{
	struct rvd_process *p = rvd_registry_find(reg, pid);

	if (pid <= 0)
		return;
	mru_drop(reg, pid);
	memmove(&reg->mru[1], &reg->mru[0], (RVD_MRU_MAX - 1) * sizeof(reg->mru[0]));
	reg->mru[0] = pid;
	if (p && ui_tid > 0)
		p->ui_tid = ui_tid;
}

static bool wanted(const struct rvd_registry *reg, const struct rvd_process *p, unsigned n)
{
	unsigned seen = 0;

	for (unsigned i = 0; i < RVD_MRU_MAX && reg->mru[i] && seen < n; i++) {
		if (!rvd_registry_find(reg, reg->mru[i]))
			continue;
		if (reg->mru[i] == p->pid)
			return true;
		seen++;
	}
	return false;
}

bool rvd_registry_adopt(struct rvd_registry *reg, struct rvd_process *p, pid_t tid, unsigned n)
{
	unsigned seen = 0, end = 0;

	if (tid <= 0 || p->traced_tid)
		return false;
	for (; end < RVD_MRU_MAX && reg->mru[end]; end++) {
		if (reg->mru[end] == p->pid)
			return false; /* already planned: the plan decides */
		if (rvd_registry_find(reg, reg->mru[end]))
			seen++;
	}
	/* A process tracing another thread than its UI thread is re-planned. */
	if (seen >= n || end >= RVD_MRU_MAX || (p->ui_tid && p->ui_tid != tid))
		return false;
	reg->mru[end] = p->pid;
	p->ui_tid = tid;
	p->traced_tid = tid;
	return true;
}

unsigned rvd_registry_plan(struct rvd_registry *reg, unsigned n, rvd_trace_cb cb, void *data)
{
	unsigned changes = 0;

	/* Stops first, so the number of live buffers never exceeds n. */
	for (struct rvd_process *p = reg->head; p; p = p->next) {
		pid_t want = wanted(reg, p, n) ? (p->ui_tid ? p->ui_tid : p->pid) : 0;

		if (p->traced_tid && p->traced_tid != want) {
			cb(p, p->traced_tid, false, data);
			p->traced_tid = 0;
			changes++;
		}
	}
	for (struct rvd_process *p = reg->head; p; p = p->next) {
		pid_t want = wanted(reg, p, n) ? (p->ui_tid ? p->ui_tid : p->pid) : 0;

		if (want && p->traced_tid != want) {
			cb(p, want, true, data);
			p->traced_tid = want;
			changes++;
		}
	}
	return changes;
}
