/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvlua.c — the out-of-line half of rvlua's trace points (rvlua.h), built
 * with Lua's own sources (it needs the VM's internal structures).
 *
 * Keys: a C function's key is its address (named from the symbol table at
 * capture time, e.g. `sort`; muted by address, rvt_addr_muted()).  A Lua function's key comes from
 * rvt_key_new() the first time the function runs on a traced thread and is
 * kept in its Proto (`rvkey`, added by rvlua.patch): a Proto may be freed and
 * its address reused by another function before a capture, so the address
 * cannot be the key, but a key from rvt_key_new() is never reused.  Its name
 * is `chunkname:line:name` — the chunk's source (`@file.lua`, `=stdin`, or
 * a shortened `[string "..."]`), the line the function is defined on, and the
 * name the call site gives it (Lua's debug info: `fib` for a call through a
 * local, global, field or method named fib; `main chunk` for line 0; `?`
 * when the caller is C or the call site names nothing) as of that first
 * traced call.  Cost: one name per function, a few dozen bytes, never freed.
 *
 * Frames that end without a return are counted on the CallInfo chain, which
 * always links L->ci back to L->base_ci; frames marked CIST_RVMUTED (their
 * key was muted when they started, rvlua.h) recorded no entry and count for
 * nothing.  Runs only on the thread running L;
 * no lock except inside rvt_key_new().
 */
#define LUA_CORE

#include "rvlua.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lauxlib.h"
#include "ldebug.h"
#include "lfunc.h"
#include "lobject.h"
#include "lstring.h"
#include "rv_version.h"

/* trace.h, rvt_control_start(): where the daemon listens by default. */
#define RVLUA_DEFAULT_SOCKET "/run/rearview/control.sock"

/* ldebug.c (rvlua.patch): the name a call made from `caller` gives its callee. */
LUAI_FUNC const char *luaG_rvcallname(lua_State *L, CallInfo *caller, const char **name);

/* `p`'s key, made on its first traced call from `caller` (NULL: unknown). */
static const void *proto_key(lua_State *L, CallInfo *caller, Proto *p)
{
	if (p->rvkey)
		return p->rvkey;
	char chunk[LUA_IDSIZE];
	const char *src = p->source ? getstr(p->source) : "=?";
	size_t srclen = p->source ? tsslen(p->source) : 2;
	if (src[0] == '@' || src[0] == '=')
		snprintf(chunk, sizeof(chunk), "%s", src);
	else
		luaO_chunkid(chunk, src, srclen);
	const char *name = NULL;
	if (p->linedefined == 0)
		name = "main chunk";
	else if (caller && !luaG_rvcallname(L, caller, &name))
		name = NULL;
	char full[LUA_IDSIZE + 128];
	snprintf(full, sizeof(full), "%s:%d:%s", chunk, p->linedefined, name ? name : "?");
	p->rvkey = rvt_key_new(full);
	/* Out of memory: the Proto's address, unnamed but still one key per frame. */
	return p->rvkey ? p->rvkey : p;
}

/* The key of the function running in frame `ci`. */
static const void *frame_key(lua_State *L, CallInfo *ci)
{
	const TValue *f = s2v(ci->func);
	switch (ttypetag(f)) {
	case LUA_VLCL:
		return proto_key(L, (ci->callstatus & CIST_TAIL) ? NULL : ci->previous,
				 clLvalue(f)->p);
	case LUA_VCCL:
		return (const void *)(uintptr_t)clCvalue(f)->f;
	case LUA_VLCF:
		return (const void *)(uintptr_t)fvalue(f);
	default:
		return ci; /* not reached: every frame above base_ci runs a function */
	}
}

void rvlua_enter_lua(lua_State *L, CallInfo *ci, Proto *p)
{
	assert(L->ci == ci && ci->previous);
	rvt_enter(proto_key(L, ci->previous, p));
}

void rvlua_tailcall(lua_State *L, CallInfo *ci, Proto *p)
{
	/* `ci` still runs the caller, stopped at its OP_TAILCALL: name `p` from it. */
	const void *key = proto_key(L, ci, p);
	if (!(ci->callstatus & CIST_RVMUTED))
		rvt_exit();
	/* proto_key() falls back to `p` itself, which has no muted flag. */
	if (p->rvkey && rvt_key_muted(p->rvkey)) {
		ci->callstatus |= CIST_RVMUTED;
	} else {
		ci->callstatus &= (unsigned short)~CIST_RVMUTED;
		rvt_enter(key);
	}
}

void rvlua_unwind(lua_State *L, CallInfo *to)
{
	unsigned n = 0;
	for (CallInfo *ci = L->ci; ci != to; ci = ci->previous) {
		assert(ci != NULL); /* `to` is an ancestor of L->ci */
		n += !(ci->callstatus & CIST_RVMUTED);
	}
	rvt_exit_n(n);
}

void rvlua_rewind(lua_State *L)
{
	if (L->ci == &L->base_ci)
		return;
	for (CallInfo *ci = L->base_ci.next;; ci = ci->next) {
		assert(ci != NULL); /* L->ci is on the chain above base_ci */
		if (!(ci->callstatus & CIST_RVMUTED))
			rvt_enter(frame_key(L, ci));
		if (ci == L->ci)
			break;
	}
}

/* lua.c (rvlua.patch) asks first: `rvlua --version` and `rvlua --help`
 * are answered here, before any Lua state exists; the exit status, or -1
 * for anything else (Lua's own options and scripts). */
int rvlua_options(int argc, char **argv);
int rvlua_options(int argc, char **argv)
{
	if (argc != 2)
		return -1;
	if (strcmp(argv[1], "--version") == 0) {
		printf("rvlua (Rearview) %s\n%s\n", RV_VERSION, LUA_COPYRIGHT);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (strcmp(argv[1], "--help") != 0)
		return -1;
	fputs("usage: rvlua [options] [script [args]]\n"
	      "       rvlua --help | --version\n"
	      "Lua 5.4 with Rearview trace points on every Lua and C function call.\n"
	      "options (Lua's):\n"
	      "  -e stat   execute string 'stat'\n"
	      "  -i        enter interactive mode after executing 'script'\n"
	      "  -l mod    require library 'mod' into global 'mod'\n"
	      "  -l g=mod  require library 'mod' into global 'g'\n"
	      "  -v        show version information\n"
	      "  -E        ignore environment variables\n"
	      "  -W        turn warnings on\n"
	      "  --        stop handling options\n"
	      "  -         stop handling options and execute stdin\n"
	      "tracing (environment): RV_TRACE=1 traces the main thread from the start,\n"
	      "RV_TRACE_FILE=out.rvt writes a capture at exit; under rearviewd (RV_SOCKET,\n"
	      "else " RVLUA_DEFAULT_SOCKET ") the daemon decides.\n",
	      stdout);
	return 0;
}

/*
 * At load: captures name the keys of Lua functions; and when a daemon is
 * there to follow (RV_SOCKET set, or the default control socket exists), the
 * main thread is the one it traces (the UI thread) and the control thread
 * connects to it, as README.md's "Tracing your own program" asks of every
 * program.  Without a daemon, developer mode (RV_TRACE, RV_TRACE_FILE) only.
 */
__attribute__((constructor)) static void rvlua_init(void)
{
	rvt_set_resolver(rvt_key_resolve, NULL);
	/* RVLUA_ENTER_C asks rvt_addr_muted(): the budget may mute C functions. */
	rvt_runtime_checks_addresses();
	const char *sock = getenv("RV_SOCKET");
	if ((sock && *sock) || access(RVLUA_DEFAULT_SOCKET, F_OK) == 0) {
		rvt_set_ui_thread(0);
		rvt_control_start(NULL);
	}
}
