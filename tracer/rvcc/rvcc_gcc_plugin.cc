// SPDX-License-Identifier: Apache-2.0
/*
 * rvcc_gcc_plugin.cc — the GCC plugin rvcc loads to leave functions out of
 * -finstrument-functions by their exact name, and (argument `late`) to put
 * the trace points into each function's final body itself (late mode,
 * below).
 *
 *   gcc -finstrument-functions -fplugin=…/rvcc_gcc_plugin.so \
 *       -fplugin-arg-rvcc_gcc_plugin-exclude=FILE …
 *
 * gcc's own -finstrument-functions-exclude-function-list matches names by
 * substring: excluding `pcache1Fetch` also excludes `pcache1FetchStage2`.
 * This plugin reads FILE (one function per line; the last word of the line
 * is the name, so rvcc's "rule name" lines of `.rearview_untraced` serve as
 * they are) and, when the front end hands a function body over to be
 * genericized (PLUGIN_PRE_GENERICIZE, before gimplification inserts the
 * enter/exit hooks), sets DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT on the
 * function whose source or assembler name equals a listed name — as
 * `__attribute__((no_instrument_function))` would.  The hooks are inserted
 * into the body before inlining, so every inlined copy of an excluded
 * function is left out too (in late mode the listed names get no trace
 * point).  Without an argument the plugin does nothing (rvcc loads it that
 * way to find out whether this gcc accepts it).
 *
 *   gcc -fplugin=…/rvcc_gcc_plugin.so -fplugin-arg-rvcc_gcc_plugin-late \
 *       [-fplugin-arg-rvcc_gcc_plugin-threshold=N] [...-exclude=FILE] …
 *
 * Late mode: the trace points, the build-time budget (threshold=N) and the
 * `.rearview_untraced` lines of what it left out, written into the object
 * by the plugin itself — one compile, no measuring pass.
 *
 * C++ only because GCC's plugin API is C++.  Built against gcc 12's plugin
 * headers; plugin_default_version_check refuses any other gcc, which then
 * stops with "fail to initialize plugin" and rvcc falls back to substring
 * exclusion.
 *
 * Invariants: the plugin only ever sets the no-instrument flag, never
 * clears it; the name set is filled once in plugin_init and read-only after;
 * a function the late pass leaves out by the budget or the list is named
 * once in `.rearview_untraced`, a traced one never;
 * in late mode every return of a traced function passes its exit trace
 * point (no call of it stays a tail call).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "gcc-plugin.h"
#include "plugin-version.h"
#include "tree.h"
#include "tree-pass.h"
#include "context.h"
#include "basic-block.h"
#include "gimple.h"
#include "gimple-iterator.h"
#include "cgraph.h"
#include "cfghooks.h"
#include "tree-cfg.h"
#include "tree-ssa-operands.h"
#include "tree-into-ssa.h"
#include "stringpool.h"
#include "attribs.h"
#include "target.h"
#include "cfganal.h"
#include "cfgloop.h"
#include "tree-inline.h"
#include "sreal.h"
#include "output.h"

#include <cassert>

int plugin_is_GPL_compatible;

static std::unordered_set<std::string> excluded;

/* Adds the last word of each line of path to excluded; false when it
 * cannot be read. */
static bool read_names(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		size_t end = strcspn(line, "\r\n");
		while (end && (line[end - 1] == ' ' || line[end - 1] == '\t'))
			end--;
		size_t start = end;
		while (start && line[start - 1] != ' ' && line[start - 1] != '\t')
			start--;
		if (end > start)
			excluded.insert(std::string(line + start, end - start));
	}
	fclose(f);
	return true;
}

static bool listed(tree name)
{
	return name && excluded.count(IDENTIFIER_POINTER(name)) != 0;
}

/* PLUGIN_PRE_GENERICIZE: gcc_data is the FUNCTION_DECL about to be
 * genericized. */
/* Late mode: the DECL_UIDs of the functions not to trace, listed or marked
 * no_instrument_function (without -finstrument-functions gcc sets the flag
 * on every function). */
static std::unordered_set<unsigned> untraced;
/* ... of which those listed (the never-list, not the attribute). */
static std::unordered_set<unsigned> listed_uids;

static void pre_genericize(void *gcc_data, void *)
{
	tree fndecl = (tree)gcc_data;
	if (!fndecl || TREE_CODE(fndecl) != FUNCTION_DECL)
		return;
	bool out = listed(DECL_NAME(fndecl)) || listed(DECL_ASSEMBLER_NAME(fndecl));
	if (out)
		DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT(fndecl) = 1;
	assert(!listed(DECL_NAME(fndecl)) || DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT(fndecl));
	if (out)
		listed_uids.insert(DECL_UID(fndecl));
	if (out || lookup_attribute("no_instrument_function", DECL_ATTRIBUTES(fndecl)))
		untraced.insert(DECL_UID(fndecl));
}

/*
 * Late mode (`late`): the trace points go into each function's final body,
 * after inlining and the interprocedural passes, instead of
 * -finstrument-functions' hooks before them.  -finstrument-functions takes
 * every function's address before gcc decides what to inline or clone, so a
 * static function called once stays out of line and gets no .isra/.constprop
 * clone; its hooks also go into every inlined copy.  Here a function gcc
 * inlines is part of its caller (as clang's -finstrument-functions-after-
 * inlining and XRay do), and the trace point is the one trace-inline.h
 * builds, byte for byte (mute.c's scan reads it): the gate check on the
 * path, the thread check and the stub's call in a subsection of their own.
 * The function is named by its own symbol in the asm text (a PC-relative
 * lea where it binds locally, its GOT slot where it may be interposed), so
 * gcc sees no address taken.  A split-off part (f.part.0, the cold half gcc
 * outlines) is its function's and gets none; a function marked
 * no_instrument_function (or listed, above) gets none.
 */
static bool late;

/*
 * Late mode's build-time budget (argument threshold=N, rvcc's
 * --rv-threshold): a function whose trace points would cost much beside its
 * own work is left out, its time then its caller's.  XRay's rule — fewer
 * than N machine instructions and no loop — reads the body's size, and a
 * hot function with a large rare path (sqlite3GetVarint: 9 returns, ~19
 * instructions a call) or a loop in a rare branch (gzip's ct_tally, 30
 * rounds every 4096th call) passes it although its gates are a sixth of
 * its work.  Here, on the final body (after inlining), the measure is the
 * work gcc expects of one call: each statement's time estimate (the one its
 * inliner uses, eni_time_weights) weighed by its block's guessed frequency
 * per call (gcc's static branch prediction; bounded loops count their
 * rounds).  A function is traced when that is at least N, or when it has a
 * loop that may run long — one whose rounds gcc cannot bound to less than
 * LOOP_LONG × N instructions — and gcc
 * expects it entered on at least one call in LOOP_REACH (a long loop is
 * what a capture must name; one behind a rare branch is no reason to pay a
 * gate on every call).  Without a guessed profile (-O0) every block counts
 * once and any loop counts; without a loop tree, any back edge does.
 */
static long threshold;
#define LOOP_REACH 8
#define LOOP_LONG  16

/* What late mode left out: "rule name" lines for `.rearview_untraced`. */
static std::vector<std::string> left_out;

/* c per call of a function entered ec times; 1 without a usable profile. */
static double per_call(profile_count c, profile_count ec)
{
	if (!c.initialized_p() || !ec.initialized_p() || !ec.nonzero_p())
		return 1;
	bool known = false;
	return c.to_sreal_scale(ec, &known).to_double();
}

/* gcc's time estimate of the statements of bb. */
static int block_time(basic_block bb)
{
	int t = 0;
	for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi); gsi_next(&gsi))
		if (!is_gimple_debug(gsi_stmt(gsi)))
			t += estimate_num_insns(gsi_stmt(gsi), &eni_time_weights);
	return t;
}

/* True when loop l may run long: gcc knows no bound on its rounds, or all
 * its rounds may take LOOP_LONG times the threshold (a bound from a
 * counter's type, 2^31 rounds, is no bound; gzip's 30 rounds and sqlite's
 * 255 of a byte's range are). */
static bool may_run_long(function *fun, class loop *l)
{
	HOST_WIDE_INT max = get_max_loop_iterations_int(l);
	if (max < 0 || max >= threshold * LOOP_LONG)
		return true;
	/* (not get_loop_body: a loop may have several latches here) */
	double t = 0;
	basic_block bb;
	FOR_EACH_BB_FN (bb, fun)
		if (flow_bb_inside_loop_p(l, bb))
			t += block_time(bb);
	return (double)(max + 1) * t >= (double)threshold * LOOP_LONG;
}

/* True when a loop of fun may run long and is reached often enough. */
static bool long_loop(function *fun)
{
	profile_count ec = ENTRY_BLOCK_PTR_FOR_FN(fun)->count;
	if (!loops_for_fn(fun) || loops_state_satisfies_p(fun, LOOPS_NEED_FIXUP)) {
		basic_block bb;
		mark_dfs_back_edges(fun);
		FOR_EACH_BB_FN (bb, fun) {
			edge e;
			edge_iterator ei;
			FOR_EACH_EDGE (e, ei, bb->succs)
				if (e->flags & EDGE_DFS_BACK)
					return true;
		}
		return false;
	}
	for (class loop *l : loops_list(fun, 0)) {
		if (!may_run_long(fun, l))
			continue;
		profile_count in = profile_count::zero();
		edge e;
		edge_iterator ei;
		FOR_EACH_EDGE (e, ei, l->header->preds)
			if (!flow_bb_inside_loop_p(l, e->src))
				in += e->count();
		if (per_call(in, ec) * LOOP_REACH >= 1)
			return true;
	}
	return false;
}

/* True when fun's trace points are worth their cost (above). */
static bool worth_tracing(function *fun)
{
	if (threshold <= 0)
		return true;
	profile_count ec = ENTRY_BLOCK_PTR_FOR_FN(fun)->count;
	double work = 0;
	basic_block bb;
	FOR_EACH_BB_FN (bb, fun)
		work += per_call(bb->count, ec) * block_time(bb);
	return work >= threshold || long_loop(fun);
}

/* PLUGIN_FINISH_UNIT: the left-out names into the object's
 * `.rearview_untraced` section (non-allocated; the linker concatenates the
 * objects' sections), as rvcc's objcopy does in the other modes. */
static void write_left_out(void *, void *)
{
	if (left_out.empty() || !asm_out_file)
		return;
	fputs("\t.pushsection .rearview_untraced,\"\",@progbits\n", asm_out_file);
	for (const std::string &line : left_out) {
		/* symbol names hold no quote or backslash */
		assert(line.find_first_of("\"\\") == std::string::npos);
		fprintf(asm_out_file, "\t.ascii \"%s\\n\"\n", line.c_str());
	}
	fputs("\t.popsection\n", asm_out_file);
}

/* Late mode's asm is x86-64's, LP64 (not -m32, not -mx32).  plugin_init
 * refuses late mode in a gcc for another target; -m32 and -mx32 are known
 * only once options are processed, so there the pass adds nothing (rvcc
 * does not ask for late mode with them). */
static bool late_target_ok()
{
#if defined(__x86_64__) && defined(TARGET_LP64)
	return TARGET_LP64;
#else
	return false;
#endif
}

/* The gate byte and its constructor and destructor (trace-inline.h's
 * RVT__GATE_BYTE and RVT__GATE_HOOKS): emitted once per translation unit. */
static const char gate_defs[] =
	".ifndef rvt__gate\n\t"
	".pushsection .bss.rvt__gate,\"awG\",@nobits,rvt__gate,comdat\n\t"
	".globl rvt__gate\n\t"
	".hidden rvt__gate\n"
	"rvt__gate: .zero 1\n\t"
	".popsection\n\t"
	".endif\n\t"
	".ifndef .Lrvt__gate_init\n"
	".pushsection .text.rvt__gate,\"axG\",@progbits,rvt__gate,comdat\n"
	".Lrvt__gate_init:endbr64\n"
	"leaq rvt__gate(%%rip),%%rdi\n"
	"jmp rvt__gate_register@PLT\n"
	".Lrvt__gate_fini:endbr64\n"
	"leaq rvt__gate(%%rip),%%rdi\n"
	"jmp rvt__gate_unregister@PLT\n"
	".section .init_array,\"awG\",@init_array,rvt__gate,comdat\n"
	".balign 8\n"
	".quad .Lrvt__gate_init\n"
	".section .fini_array,\"awG\",@fini_array,rvt__gate,comdat\n"
	".balign 8\n"
	".quad .Lrvt__gate_fini\n"
	".popsection\n"
	".endif\n\t";

/* The trace point's asm for the function `fn` (entry or exit). */
static std::string trace_point_asm(tree fn, bool entry)
{
	const char *name = IDENTIFIER_POINTER(DECL_ASSEMBLER_NAME(fn));
	name = targetm.strip_name_encoding(name);
	std::string load = targetm.binds_local_p(fn)
				   ? std::string("leaq ") + name + "(%%rip), %%rax\n\t"
				   : std::string("movq ") + name + "@GOTPCREL(%%rip), %%rax\n\t";
	std::string s = gate_defs;
	s += "cmpb $0, rvt__gate(%%rip)\n\t"
	     "jne .Lrvt_c%=\n"
	     ".Lrvt_r%=:\n\t"
	     ".subsection 1\n"
	     ".Lrvt_c%=:\n\t"
	     "movq rvt__tls@gottpoff(%%rip), %%r11\n\t"
	     "cmpq $0, %%fs:(%%r11)\n\t"
	     "jne .Lrvt_o%=\n\t"
	     "jmp .Lrvt_r%=\n"
	     ".Lrvt_o%=:\n\t";
	s += load;
	s += "leaq -128(%%rsp), %%rsp\n\t";
	s += entry ? "call rvt__inl_enter@PLT\n\t" : "call rvt__inl_exit@PLT\n\t";
	s += "leaq 128(%%rsp), %%rsp\n\t"
	     "jmp .Lrvt_r%=\n\t"
	     ".subsection 0";
	return s;
}

static gasm *trace_point(tree fn, bool entry)
{
	std::string text = trace_point_asm(fn, entry);
	vec<tree, va_gc> *clobbers = NULL;
	static const char *const regs[] = {"rax", "r11", "cc", "memory"};
	for (const char *r : regs)
		vec_safe_push(clobbers, build_tree_list(NULL_TREE, build_string(strlen(r), r)));
	gasm *a = gimple_build_asm_vec(ggc_strdup(text.c_str()), NULL, NULL, clobbers, NULL);
	gimple_asm_set_volatile(a, true);
	return a;
}

static const pass_data late_pass_data = {
	GIMPLE_PASS,   "rvcc_late", OPTGROUP_NONE, TV_NONE, PROP_gimple_any | PROP_cfg, 0, 0, 0,
	TODO_update_ssa_only_virtuals,
};

struct late_pass : gimple_opt_pass {
	late_pass(gcc::context *ctx) : gimple_opt_pass(late_pass_data, ctx) {}
	bool gate(function *fun) final override
	{
		tree fn = fun->decl;
		cgraph_node *node = cgraph_node::get(fn);
		if (!late_target_ok() || (node && node->split_part))
			return false;
		/* A clone (f.isra.0, f.constprop.0) is traced as its origin is. */
		tree origin = node && node->former_clone_of ? node->former_clone_of : fn;
		if (lookup_attribute("no_instrument_function", DECL_ATTRIBUTES(fn)) ||
		    lookup_attribute("naked", DECL_ATTRIBUTES(fn)))
			return false;
		const char *rule = NULL;
		if (untraced.count(DECL_UID(origin)))
			rule = listed_uids.count(DECL_UID(origin)) ? "never" : NULL;
		else if (!worth_tracing(fun))
			rule = "threshold";
		else
			return true;
		if (rule)
			left_out.push_back(std::string(rule) + " " +
					   targetm.strip_name_encoding(
						   IDENTIFIER_POINTER(DECL_ASSEMBLER_NAME(fn))));
		return false;
	}
	unsigned int execute(function *fun) final override
	{
		tree fn = fun->decl;
		/* Every return must pass its exit trace point: no call the tail
		 * call pass marked (a call whose value flows to a return, in
		 * its block or through a PHI of the return's) may become a
		 * jump. */
		basic_block b;
		FOR_EACH_BB_FN (b, fun)
			for (gimple_stmt_iterator gsi = gsi_start_bb(b); !gsi_end_p(gsi);
			     gsi_next(&gsi))
				if (gcall *call = dyn_cast<gcall *>(gsi_stmt(gsi)))
					gimple_call_set_tail(call, false);
		/* Each return first (before the entry's edge splits blocks). */
		auto_vec<basic_block> rets;
		edge e;
		edge_iterator ei;
		FOR_EACH_EDGE (e, ei, EXIT_BLOCK_PTR_FOR_FN(fun)->preds)
			rets.safe_push(e->src);
		for (basic_block bb : rets) {
			gimple_stmt_iterator gsi = gsi_last_bb(bb);
			if (gsi_end_p(gsi) || gimple_code(gsi_stmt(gsi)) != GIMPLE_RETURN)
				continue;
			gsi_insert_before(&gsi, trace_point(fn, false), GSI_SAME_STMT);
		}
		gsi_insert_on_edge_immediate(single_succ_edge(ENTRY_BLOCK_PTR_FOR_FN(fun)),
					     trace_point(fn, true));
		mark_virtual_operands_for_renaming(fun);
		return 0;
	}
};

int plugin_init(struct plugin_name_args *info, struct plugin_gcc_version *version)
{
	if (!plugin_default_version_check(version, &gcc_version)) {
		fprintf(stderr, "rvcc_gcc_plugin: built for gcc %s, not %s\n", gcc_version.basever,
			version->basever);
		return 1;
	}
	const char *file = NULL;
	for (int i = 0; i < info->argc; i++) {
		if (strcmp(info->argv[i].key, "exclude") == 0 && info->argv[i].value) {
			file = info->argv[i].value;
		} else if (strcmp(info->argv[i].key, "late") == 0) {
			late = true;
		} else if (strcmp(info->argv[i].key, "threshold") == 0 && info->argv[i].value) {
			char *end;
			threshold = strtol(info->argv[i].value, &end, 10);
			if (*end || threshold < 0) {
				fprintf(stderr, "rvcc_gcc_plugin: threshold=%s: not a count\n",
					info->argv[i].value);
				return 1;
			}
		} else {
			fprintf(stderr, "rvcc_gcc_plugin: unknown argument %s\n",
				info->argv[i].key);
			return 1;
		}
	}
	if (late && !late_target_ok()) {
		fprintf(stderr, "rvcc_gcc_plugin: late mode needs an x86-64 (LP64) target\n");
		return 1;
	}
	if (late) {
		struct register_pass_info pi;
		pi.pass = new late_pass(g);
		pi.reference_pass_name = "optimized";
		pi.ref_pass_instance_number = 1;
		pi.pos_op = PASS_POS_INSERT_BEFORE;
		register_callback(info->base_name, PLUGIN_PASS_MANAGER_SETUP, NULL, &pi);
		register_callback(info->base_name, PLUGIN_FINISH_UNIT, write_left_out, NULL);
	}
	if (file && !read_names(file)) {
		fprintf(stderr, "rvcc_gcc_plugin: %s: cannot read\n", file);
		return 1;
	}
	if (file || late)
		register_callback(info->base_name, PLUGIN_PRE_GENERICIZE, pre_genericize, NULL);
	return 0;
}
