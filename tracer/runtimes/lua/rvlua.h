/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvlua.h — Rearview's trace points in Lua 5.4's call and return paths
 * (rvlua.patch puts the RVLUA_* lines into ldo.c and lvm.c; rvlua.c has the
 * out-of-line parts).  Every macro costs an untraced thread one
 * thread-local load and a branch (rvt_thread_active()); a traced thread runs
 * the trace point inlined (rvt_enter_inline() / rvt_exit_inline()), and the
 * rare work (naming a function, walking frames) in rvlua.c.
 *
 * Invariant kept on a traced thread: every CallInfo that becomes L->ci
 * records one entry and, when it leaves the chain by any path (return, tail
 * call, error unwinding, coroutine yield or death), one exit; a coroutine
 * resumed after a yield enters its suspended frames again.  A frame started
 * while its function is muted by the tracer's budget (RV_TRACE_MUTE) — a
 * Lua function's key (rvt_key_muted()), a C function's address
 * (rvt_addr_muted()) — records neither: it carries CIST_RVMUTED, and every
 * exit path (return, tail call, unwinding, yield) and a resume's re-entry
 * skip frames that carry it.  A frame entered before its function was
 * muted has no bit and still ends with its exit.
 */
#ifndef RVLUA_H
#define RVLUA_H

#include <rearview/trace-runtime.h>

#include "lstate.h"

/* CallInfo.callstatus bit (14, unused by Lua 5.4.4's lstate.h): this frame's
 * entry was not recorded because its key was muted, so neither is its exit. */
#define CIST_RVMUTED (1 << 14)

/* A Lua function's frame `ci` (now L->ci) starts running `p`. */
LUAI_FUNC void rvlua_enter_lua(lua_State *L, CallInfo *ci, Proto *p);
/* `ci` (running Lua code) tail-calls `p`: one exit, then `p`'s entry. */
LUAI_FUNC void rvlua_tailcall(lua_State *L, CallInfo *ci, Proto *p);
/* Frames L->ci down to `to` (exclusive, an ancestor of L->ci) end unreturned. */
LUAI_FUNC void rvlua_unwind(lua_State *L, CallInfo *to);
/* Coroutine L resumes: its frames base_ci+1 .. L->ci enter again. */
LUAI_FUNC void rvlua_rewind(lua_State *L);

/* A function already keyed costs the traced thread one inlined trace point
 * (or, muted, the bit on its frame). */
#define RVLUA_ENTER_LUA(L, ci, p)                                       \
	do {                                                            \
		if (rvt_thread_active()) {                              \
			if (l_unlikely((p)->rvkey == NULL))             \
				rvlua_enter_lua(L, ci, p);              \
			else if (l_unlikely(rvt_key_muted((p)->rvkey))) \
				(ci)->callstatus |= CIST_RVMUTED;       \
			else                                            \
				rvt_enter_inline((p)->rvkey);           \
		}                                                       \
	} while (0)
/* Frame `ci` (now L->ci) starts running the C function `f`. */
#define RVLUA_ENTER_C(ci, f)                                             \
	do {                                                             \
		if (rvt_thread_active()) {                               \
			const void *rvf_ = (const void *)(uintptr_t)(f); \
			if (l_unlikely(rvt_addr_muted(rvf_)))            \
				(ci)->callstatus |= CIST_RVMUTED;        \
			else                                             \
				rvt_enter_inline(rvf_);                  \
		}                                                        \
	} while (0)
/* Frame `ci` (L->ci) returns. */
#define RVLUA_EXIT(ci)                                                         \
	do {                                                                   \
		if (rvt_thread_active() && !((ci)->callstatus & CIST_RVMUTED)) \
			rvt_exit_inline();                                     \
	} while (0)
#define RVLUA_TAILCALL(L, ci, p)                  \
	do {                                      \
		if (rvt_thread_active())          \
			rvlua_tailcall(L, ci, p); \
	} while (0)
#define RVLUA_UNWIND(L, to)                  \
	do {                                 \
		if (rvt_thread_active())     \
			rvlua_unwind(L, to); \
	} while (0)
#define RVLUA_REWIND(L)                  \
	do {                             \
		if (rvt_thread_active()) \
			rvlua_rewind(L); \
	} while (0)

#endif
