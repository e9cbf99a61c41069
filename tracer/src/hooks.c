/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hooks.c — call mode: the out-of-line __cyg_profile_func_enter/exit that
 * -finstrument-functions calls.  Portable C, the same trace point as inline
 * mode (trace-inline.h), so both modes write identical slots.  On x86-64 the
 * hand-written hooks-x86_64.S is linked instead (tracer/lib.mk).  The shadow
 * stack records the caller's stack pointer (this hook's CFA), as inline mode
 * records the function's own.
 */
#include "tracer-int.h"

RVT_API void __cyg_profile_func_enter(void *fn, void *call_site);
RVT_API void __cyg_profile_func_exit(void *fn, void *call_site);

void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	rvt__trace_point(fn, 1, (uintptr_t)__builtin_dwarf_cfa());
}

void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	rvt__trace_point(fn, 0, 0);
}
