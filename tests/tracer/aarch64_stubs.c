/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aarch64_stubs.c — stand-ins for the parts of librvtrace the aarch64 smoke
 * test does not cross-build (no arm64 libelf or protobuf-c here): the symbol
 * tables (every value gets an empty name, module unknown), the control
 * thread and muting (x86-64 only; no UNTRACED sections either).  The trace points, rings, protocol
 * and capture writer are the real sources.
 */
#include "tracer-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rvt_symtab_build(struct rvt_symtab *st, const uint64_t *values, size_t n, uint64_t method_base)
{
	memset(st, 0, sizeof(*st));
	st->symbols = calloc(n ? n : 1, sizeof(*st->symbols));
	if (!st->symbols)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		st->symbols[i].value = values[i];
		st->symbols[i].offset = values[i] + method_base;
		st->symbols[i].module = 0xffffffffu;
		st->symbols[i].name = "";
	}
	st->nsymbols = n;
	return 0;
}

void rvt_symtab_release(struct rvt_symtab *st)
{
	free(st->symbols);
	memset(st, 0, sizeof(*st));
}

int rvt_resolve_key(uint64_t addr, char *buf, size_t len)
{
	(void)addr;
	(void)buf;
	(void)len;
	return -1;
}

void rvt_set_resolver(rvt_resolve_fn fn, void *arg)
{
	(void)fn;
	(void)arg;
}

int rvt_control_start(const char *socket_path)
{
	(void)socket_path;
	return -ENOSYS;
}

void rvt_control_stop(void)
{
}

void rvt_mute_tracing_started(void)
{
}

void rvt_mute_module_added(void)
{
}

void rvt_runtime_atfork_child(void)
{
}

size_t rvt_mute_list(struct rvt_muted *out, size_t cap)
{
	(void)out;
	(void)cap;
	return 0;
}

size_t rvt_untraced_sections(const struct rvt_untraced **out)
{
	*out = NULL;
	return 0;
}
