// SPDX-License-Identifier: Apache-2.0
/*
 * rvcc_clang_plugin.cc — the LLVM pass plugin rvcc loads into clang to give
 * -finstrument-functions-after-inlining a threshold and a never-list.
 *
 *   RVCC_CLANG_EXCLUDE=NEVER RVCC_CLANG_THRESHOLD=N RVCC_CLANG_OUT=FILE \
 *   clang -finstrument-functions-after-inlining -fpass-plugin=…/rvcc_clang_plugin.so …
 *
 * clang has no per-function exclusion for -finstrument-functions (its
 * -fprofile-list applies to profile instrumentation only, XRay's lists to
 * XRay sleds only).  With -finstrument-functions-after-inlining, clang marks
 * each function with the "instrument-function-entry-inlined" and
 * "instrument-function-exit-inlined" attributes and inserts the hooks in a
 * pass at the end of the optimisation pipeline, after inlining.  This
 * plugin's pass runs just before it (registered at the same extension point,
 * earlier: clang registers its own callback after loading the plugins) and
 * removes both attributes from the functions to leave out:
 *   - a function whose (mangled) name is a line of NEVER ('#' comments, the
 *     first word of the line: `rvtrace hotlist` output);
 *   - with N > 0, a function of fewer than N IR instructions after
 *     optimisation and without a loop (XRay's rule, on IR instead of machine
 *     instructions).
 * It appends "never NAME" / "threshold NAME" for each to FILE (rvcc turns it
 * into the object's `.rearview_untraced` section).  The settings come from
 * the environment because a pass plugin is loaded after clang has parsed
 * -mllvm options.  Inlined copies never carry hooks (that is what
 * after-inlining means), so excluding a function affects its out-of-line
 * body only.
 *
 * Invariants: the pass only ever removes the two attributes, never adds
 * them, and reports exactly the functions it removed them from.
 */
#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace llvm;

namespace
{

const char entry_attr[] = "instrument-function-entry-inlined";
const char exit_attr[] = "instrument-function-exit-inlined";

/* Adds the first word of each line of path (comments after '#') to names;
 * false when it cannot be read. */
bool read_names(const char *path, StringSet<> &names)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");
		size_t len = strcspn(s, " \t#\r\n");
		if (len)
			names.insert(StringRef(s, len));
	}
	fclose(f);
	return true;
}

struct Exclude : PassInfoMixin<Exclude> {
	StringSet<> never;
	long threshold = 0;
	const char *out = nullptr;

	PreservedAnalyses run(Module &m, ModuleAnalysisManager &mam)
	{
		auto &fam = mam.getResult<FunctionAnalysisManagerModuleProxy>(m).getManager();
		FILE *f = nullptr;
		for (Function &fn : m) {
			if (fn.isDeclaration() || !fn.hasFnAttribute(entry_attr))
				continue;
			const char *rule = nullptr;
			if (never.count(fn.getName())) {
				rule = "never";
			} else if (threshold > 0 &&
				   fn.getInstructionCount() < (unsigned)threshold &&
				   fam.getResult<LoopAnalysis>(fn).empty()) {
				rule = "threshold";
			}
			if (!rule)
				continue;
			fn.removeFnAttr(entry_attr);
			fn.removeFnAttr(exit_attr);
			assert(!fn.hasFnAttribute(entry_attr));
			if (out && !f && !(f = fopen(out, "a"))) {
				errs() << "rvcc_clang_plugin: " << out << ": cannot write\n";
				out = nullptr;
			}
			if (f)
				fprintf(f, "%s %s\n", rule, fn.getName().str().c_str());
		}
		if (f)
			fclose(f);
		return PreservedAnalyses::all();
	}
};

void register_callbacks(PassBuilder &pb)
{
	const char *never = getenv("RVCC_CLANG_EXCLUDE");
	const char *threshold = getenv("RVCC_CLANG_THRESHOLD");
	Exclude pass;
	if (never && *never && !read_names(never, pass.never))
		errs() << "rvcc_clang_plugin: " << never << ": cannot read (ignored)\n";
	pass.threshold = threshold ? strtol(threshold, nullptr, 10) : 0;
	pass.out = getenv("RVCC_CLANG_OUT");
	if (pass.never.empty() && pass.threshold <= 0)
		return;
	pb.registerOptimizerLastEPCallback(
		[pass](ModulePassManager &mpm, OptimizationLevel) { mpm.addPass(Exclude(pass)); });
}

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo()
{
	return {LLVM_PLUGIN_API_VERSION, "rvcc_clang_plugin", LLVM_VERSION_STRING,
		register_callbacks};
}
