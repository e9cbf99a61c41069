// SPDX-License-Identifier: Apache-2.0
/*
 * rvcc_gcc_plugin.cc — the GCC plugin rvcc loads to leave functions out of
 * -finstrument-functions by their exact name.
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
 * function is left out too.  Without the exclude argument the plugin does
 * nothing (rvcc loads it that way to find out whether this gcc accepts it).
 *
 * C++ only because GCC's plugin API is C++.  Built against gcc 12's plugin
 * headers; plugin_default_version_check refuses any other gcc, which then
 * stops with "fail to initialize plugin" and rvcc falls back to substring
 * exclusion.
 *
 * Invariants: the plugin only ever sets the no-instrument flag, never
 * clears it; the name set is filled once in plugin_init and read-only after.
 */
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_set>

#include "gcc-plugin.h"
#include "plugin-version.h"
#include "tree.h"

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
static void pre_genericize(void *gcc_data, void *)
{
	tree fndecl = (tree)gcc_data;
	if (!fndecl || TREE_CODE(fndecl) != FUNCTION_DECL)
		return;
	if (listed(DECL_NAME(fndecl)) || listed(DECL_ASSEMBLER_NAME(fndecl)))
		DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT(fndecl) = 1;
	assert(!listed(DECL_NAME(fndecl)) || DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT(fndecl));
}

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
		} else {
			fprintf(stderr, "rvcc_gcc_plugin: unknown argument %s\n",
				info->argv[i].key);
			return 1;
		}
	}
	if (!file)
		return 0;
	if (!read_names(file)) {
		fprintf(stderr, "rvcc_gcc_plugin: %s: cannot read\n", file);
		return 1;
	}
	register_callback(info->base_name, PLUGIN_PRE_GENERICIZE, pre_genericize, NULL);
	return 0;
}
