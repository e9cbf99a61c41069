/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvcc.c — a compiler wrapper that builds any program for Rearview tracing.
 *
 *   CC="rvcc gcc" ./configure && make        (also clang, g++, clang++)
 *
 * rvcc runs the real compiler with the instrumentation Rearview recommends
 * added and, when the command links, librvtrace added to the link.  Options
 * come from `--rv-…` flags (removed before the compiler sees them) or from
 * RVCC_… environment variables; `rvcc --help` lists them.
 *
 * What it adds, per compiler:
 *   gcc, C     -fplugin=rvcc_gcc_plugin.so -fplugin-arg-rvcc_gcc_plugin-late
 *              (late mode, the default: the plugin puts trace-inline.h's
 *              trace point into each function gcc leaves out of line, after
 *              inlining and the IPA passes, so gcc inlines and clones as
 *              without rvcc); where gcc cannot load the plugin, with -flto
 *              (the plugin would have to run in lto1) or --rv-mode=inline:
 *              -finstrument-functions -include rearview/trace-inline.h
 *              (inline mode: the trace point inlined into each body and
 *              each inlined copy)
 *   g++        late mode as for C; where it is unavailable -finstrument-
 *              functions (call mode; the inline header is C only)
 *   clang(++)  -finstrument-functions-after-inlining (no hooks in inlined
 *              copies); with a threshold or never-list also
 *              -fpass-plugin=rvcc_clang_plugin.so (below)
 * In late mode the plugin leaves out the functions too small for their trace
 * points itself, measuring each final body (rvcc_gcc_plugin.cc, "build-time
 * budget": fewer than --rv-threshold instructions expected per call and no
 * loop that may run long; 200 by default, 0 traces every function), takes
 * the never-list (`rvtrace hotlist`) as a file and names what it left out
 * in the object; one compile.
 * Inline mode instruments every inlined copy of a function, so rvcc leaves small
 * leaf functions out (XRay's rule: fewer than --rv-threshold machine
 * instructions and no backward branch) and the functions of a never-list.
 * Both need the function sizes, so such a compile runs
 * twice: once uninstrumented with -fno-inline into a temporary object whose
 * disassembly (objdump) gives each function's instruction count and loops,
 * then for real with -finstrument-functions-exclude-function-list=
 * (in pass one, -fkeep-inline-functions and always_inline spelled as
 * noinline give inline helpers a body to measure too: gcc instruments their
 * inlined copies as well; -fno-ipa-icf keeps a function whose body equals
 * another's from being folded into it and vanishing from the list).  The exclusion goes through
 * rvcc's GCC plugin (rvcc_gcc_plugin.cc, installed in lib/rearview/), which leaves exactly the
 * listed names out; pass one loads it to see that this gcc can.  Without it
 * (not there, --rv-plugin=off, another gcc version: said once on stderr,
 * never an error) the list goes to -finstrument-functions-exclude-function-
 * list, which gcc matches by substring, so a name is then only excluded when
 * it is not a substring of a function of the same translation unit that
 * stays traced.
 * clang has no per-function exclusion flag (-fprofile-list covers profile
 * instrumentation only), so rvcc loads its LLVM pass plugin
 * (rvcc_clang_plugin.cc), which takes the threshold (IR instructions after
 * optimisation, no loop) and the never-list from the environment and takes
 * the hooks off those functions before clang inserts them; one compile, no
 * pass one.  When clang cannot load it, rvcc says so once and compiles
 * again without it.
 * The names left out are written into the object's `.rearview_untraced`
 * section (non-allocated; one "rule name" line each; objcopy adds it, in
 * late mode the plugin emits it), which the linker concatenates, so the
 * program says what it does not trace.
 *
 * Invocations that do not compile code pass through unchanged: no input
 * file (`--version`, `-v`, `-dumpmachine`, `-print-…`), preprocessing only
 * (-E, -M, -MM), -fsyntax-only, and everything with --rv-off / RVCC=off.
 * Response files (@file) are expanded so that rvcc sees every argument.
 * rvcc's own options may come before the compiler (CC="rvcc --rv-… gcc")
 * or anywhere after it.  Called as rvcc-COMPILER (a link or copy named so:
 * rvcc-gcc, rvcc-g++ …), it runs COMPILER: CC=rvcc-gcc for build systems
 * that take the compiler as one word (debhelper's CMake passes
 * -DCMAKE_C_COMPILER="$CC").
 *
 * Transparency: a build through rvcc must behave as through the compiler
 * alone, so what rvcc adds cannot change what the program's sources see.
 * The force-included trace-inline.h includes no header and defines no
 * feature macro and is valid in every dialect and warning setting (see it);
 * the link adds `-lrvtrace` (found by its SONAME at run time, so packages
 * depend on the library's package) and no RUNPATH unless asked
 * (--rv-rpath: the build tree's own programs), and defines nothing the
 * program exports.
 *
 * Invariants: the compiler's own arguments are passed in their original
 * order; rvcc adds arguments only after them (-include before the sources
 * is positional-independent in gcc); the exit status is the compiler's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <assert.h>

#include "rearview/common.h"

#ifndef RVCC_PREFIX
#define RVCC_PREFIX "/usr/local"
#endif
/* Where librvtrace and lib/rearview/'s plugins are installed (multiarch). */
#ifndef RVCC_LIBDIR
#define RVCC_LIBDIR RVCC_PREFIX "/lib"
#endif

/* Functions of fewer machine instructions (gcc; IR instructions with clang)
 * and no loop are left out unless --rv-threshold says otherwise: XRay's
 * rule, chosen for rvcc from measurement (tracer/BENCHMARKS.md); in late
 * mode, of fewer instructions expected per call and no long loop. */
#define RVCC_DEFAULT_THRESHOLD "200"

static const char usage[] =
	"usage: rvcc [--rv-OPTION…] COMPILER [--rv-OPTION…] ARGS…\n"
	"       rvcc --help | --version  (rvcc's own version unless RVCC_CC is set;\n"
	"                                `rvcc gcc --version` is gcc's)\n"
	"  Runs COMPILER (gcc, clang, g++, clang++ or a path) with Rearview's\n"
	"  instrumentation added and librvtrace linked in.  Use it as CC/CXX:\n"
	"    CC=\"rvcc gcc\" ./configure && make\n"
	"    CC=\"rvcc --rv-threshold=0 gcc\" make   (every function)\n"
	"  or by the name rvcc-COMPILER (rvcc-gcc, rvcc-g++, rvcc-clang, rvcc-clang++\n"
	"  are installed beside rvcc), where a compiler must be one word (CMake):\n"
	"    CC=rvcc-gcc CXX=rvcc-g++ cmake …   (or -DCMAKE_C_COMPILER_LAUNCHER=rvcc)\n"
	"options (flag / environment; flags win):\n"
	"  --rv-off              RVCC=off         pass everything through untouched\n"
	"  --rv-mode=late|inline|call RVCC_MODE   gcc, g++: the trace point inlined into\n"
	"                                         each function gcc leaves out of line,\n"
	"                                         after inlining (late, the default:\n"
	"                                         needs the GCC plugin, else inline for\n"
	"                                         C, call for C++); gcc C: into every\n"
	"                                         function and inlined copy (inline), or\n"
	"                                         calls to librvtrace's hooks (call)\n"
	"  --rv-threshold=N      RVCC_THRESHOLD   leave out functions of fewer than N\n"
	"                                         instructions without a loop (late\n"
	"                                         mode: expected per call, and no loop\n"
	"                                         that may run long; gcc: machine,\n"
	"                                         clang: IR instructions; "
	"default " RVCC_DEFAULT_THRESHOLD ";\n"
	"                                         0 = every function)\n"
	"  --rv-never=FILE       RVCC_NEVER       never instrument the functions\n"
	"                                         named in FILE (one per line, '#'\n"
	"                                         comments; `rvtrace hotlist` output)\n"
	"  --rv-plugin=FILE|off  RVCC_PLUGIN      the compiler plugin that leaves out\n"
	"                                         exactly those names (default: lib/\n"
	"                                         rearview/rvcc_{gcc,clang}_plugin.so);\n"
	"                                         without it (said once) gcc keeps names\n"
	"                                         that are part of a traced name, and\n"
	"                                         clang instruments every function\n"
	"  --rv-static           RVCC_STATIC=1    link librvtrace.a instead of the .so\n"
	"  --rv-rpath            RVCC_RPATH=1     give the program a RUNPATH to librvtrace's\n"
	"                                         directory (off: the dynamic linker finds\n"
	"                                         it by its SONAME, as in a package)\n"
	"  --rv-libdir=DIR       RVCC_LIBDIR      where librvtrace is (default: the\n"
	"                                         lib/ beside rvcc's bin/, else\n"
	"                                         " RVCC_LIBDIR ")\n"
	"  --rv-incdir=DIR       RVCC_INCDIR      where rearview/trace-inline.h is\n"
	"  --rv-verbose          RVCC_VERBOSE=1   print each command run\n"
	"  The compiler may also come from RVCC_CC when the first argument is an option.\n"
	"  The traced program then runs with RV_TRACE=1 (trace the main thread) and\n"
	"  RV_TRACE_FILE=out.rvt (capture at exit), or under rearviewd.\n";

struct args {
	char **v;
	size_t n, cap;
};

static void args_push(struct args *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? 2 * a->cap : 64;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v) {
			perror("rvcc");
			exit(1);
		}
	}
	a->v[a->n] = strdup(s);
	if (!a->v[a->n]) {
		perror("rvcc");
		exit(1);
	}
	a->n++;
	a->v[a->n] = NULL;
}

struct opts {
	int off, inline_mode, is_static, verbose, rpath;
	int late;	  /* late mode (gcc, g++): the plugin's trace points after inlining */
	int mode_default; /* the mode is rvcc's default, not asked for */
	long threshold;
	int threshold_default; /* the threshold is rvcc's default, not asked for */
	const char *never, *libdir, *incdir;
	const char *plugin; /* rvcc_gcc_plugin.so, "off", or NULL: the default */
};

/* rvcc's default threshold is a cost measure, not something asked for: when
 * a plugin it needs is missing, rvcc says nothing (a build's output, which
 * configure probes read, stays the compiler's own) and traces more. */
static int quiet_default(const struct opts *o)
{
	return o->threshold_default && !o->never && !o->plugin;
}

struct names {
	char **v;
	size_t n;
};

static void args_free(struct args *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

static int names_has(const struct names *ns, const char *s)
{
	for (size_t i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i], s) == 0)
			return 1;
	return 0;
}

static void names_push(struct names *ns, const char *s)
{
	char **nv = realloc(ns->v, (ns->n + 1) * sizeof(*nv));
	char *d = strdup(s);
	if (!nv || !d) {
		perror("rvcc");
		exit(1);
	}
	ns->v = nv;
	ns->v[ns->n++] = d;
}

static void names_add(struct names *ns, const char *s)
{
	if (!names_has(ns, s))
		names_push(ns, s);
}

/* Expands @file the way gcc reads it: whitespace separates, quotes and
 * backslash escape.  A file that cannot be read stays a literal argument. */
static void push_expanded(struct args *out, const char *arg, int depth)
{
	FILE *f = arg[0] == '@' && depth < 8 ? fopen(arg + 1, "r") : NULL;
	if (!f) {
		args_push(out, arg);
		return;
	}
	char buf[PATH_MAX * 2];
	size_t len = 0;
	int c, quote = 0, have = 0;
	while ((c = fgetc(f)) != EOF) {
		if (c == '\\') {
			c = fgetc(f);
			if (c == EOF)
				break;
		} else if (quote && c == quote) {
			quote = 0;
			continue;
		} else if (!quote && (c == '"' || c == '\'')) {
			quote = c;
			have = 1;
			continue;
		} else if (!quote && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
			if (have || len) {
				buf[len] = 0;
				push_expanded(out, buf, depth + 1);
			}
			len = 0;
			have = 0;
			continue;
		}
		if (len + 1 < sizeof(buf))
			buf[len++] = (char)c;
		have = 1;
	}
	if (have || len) {
		buf[len] = 0;
		push_expanded(out, buf, depth + 1);
	}
	fclose(f);
}

/* Options whose value is the next argument (gcc and clang). */
static int takes_value(const char *a)
{
	static const char *const two[] = {"-o",
					  "-x",
					  "-I",
					  "-L",
					  "-l",
					  "-D",
					  "-U",
					  "-include",
					  "-imacros",
					  "-isystem",
					  "-idirafter",
					  "-iprefix",
					  "-iwithprefix",
					  "-iwithprefixbefore",
					  "-iquote",
					  "-isysroot",
					  "-imultilib",
					  "-MF",
					  "-MT",
					  "-MQ",
					  "-Xlinker",
					  "-Xassembler",
					  "-Xpreprocessor",
					  "-Xclang",
					  "-T",
					  "-u",
					  "-e",
					  "--param",
					  "-aux-info",
					  "-dumpbase",
					  "-dumpdir",
					  "-target",
					  "-arch",
					  "-z",
					  "-B",
					  "-G",
					  "-Xarch_host",
					  "-Xcuda-ptxas",
					  "--sysroot",
					  "-specs",
					  "-wrapper",
					  "-mllvm",
					  "-working-directory",
					  "-ivfsoverlay"};
	for (size_t i = 0; i < sizeof(two) / sizeof(two[0]); i++)
		if (strcmp(a, two[i]) == 0)
			return 1;
	return 0;
}

static int has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static void verbose_print(const struct opts *o, char *const *v)
{
	if (!o->verbose)
		return;
	fputs("rvcc:", stderr);
	for (size_t i = 0; v[i]; i++)
		fprintf(stderr, " %s", v[i]);
	fputc('\n', stderr);
}

/* Runs argv, waits; returns its exit status (or 127 when it cannot run).
 * quiet: its stderr goes to /dev/null. */
static int run_as(const struct opts *o, char *const *v, int quiet)
{
	verbose_print(o, v);
	pid_t pid = fork();
	if (pid < 0) {
		perror("rvcc: fork");
		return 127;
	}
	if (pid == 0) {
		if (quiet && !freopen("/dev/null", "w", stderr))
			_exit(127);
		execvp(v[0], v);
		fprintf(stderr, "rvcc: %s: %s\n", v[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run(const struct opts *o, char *const *v)
{
	return run_as(o, v, 0);
}

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* librvtrace's directory: the option, else lib/ beside this binary's bin/
 * (the build tree and an installed prefix look the same), else the prefix. */
static void find_dirs(struct opts *o)
{
	/* room for self (< PATH_MAX) and the longest suffix below */
	static char libdir[PATH_MAX + 64], incdir[PATH_MAX + 64];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash)
			*slash = 0; /* …/bin */
		slash = strrchr(self, '/');
		if (slash)
			*slash = 0; /* the prefix or build directory */
	} else {
		self[0] = 0;
	}
	char probe[PATH_MAX + 64];
	if (!o->libdir) {
		snprintf(probe, sizeof(probe), "%s/lib/librvtrace.a", self);
		if (self[0] && file_exists(probe))
			snprintf(libdir, sizeof(libdir), "%s/lib", self);
		else
			snprintf(libdir, sizeof(libdir), "%s", RVCC_LIBDIR);
		o->libdir = libdir;
	}
	if (!o->incdir) {
		snprintf(probe, sizeof(probe), "%s/include/rearview/trace-inline.h", self);
		if (self[0] && file_exists(probe))
			snprintf(incdir, sizeof(incdir), "%s/include", self);
		else
			snprintf(incdir, sizeof(incdir), "%s/include", RVCC_PREFIX);
		/* A build tree (build/bin/rvcc, build/san/bin/rvcc …): the
		 * source tree's tracer/include a few levels up. */
		static const char ups[] = "/../../../.."; /* 3 bytes a level */
		for (int k = 3; self[0] && !file_exists(probe) && k < (int)sizeof(ups); k += 3) {
			snprintf(probe, sizeof(probe),
				 "%s%.*s/tracer/include/rearview/trace-inline.h", self, k, ups);
			if (file_exists(probe))
				snprintf(incdir, sizeof(incdir), "%s%.*s/tracer/include", self, k,
					 ups);
		}
		o->incdir = incdir;
	}
}

/* The compiler plugin for exclusion by exact name: the option, else
 * rearview/NAME in librvtrace's directory.  NULL when turned off, or (said
 * on stderr) when the file is not there.  A run looks once (one compiler,
 * one plugin name): later calls return the first answer and say nothing. */
static const char *find_plugin(const struct opts *o, const char *name)
{
	static char path[PATH_MAX + 32];
	static const char *found, *asked;
	if (asked) {
		assert(strcmp(asked, name) == 0);
		return found;
	}
	asked = name;
	if (o->plugin && strcmp(o->plugin, "off") == 0)
		return NULL;
	if (o->plugin)
		snprintf(path, sizeof(path), "%s", o->plugin);
	else
		snprintf(path, sizeof(path), "%s/rearview/%s", o->libdir, name);
	if (file_exists(path))
		return found = path;
	if (!quiet_default(o))
		fprintf(stderr, "rvcc: %s: no such plugin; excluding by substring-safe names\n",
			path);
	return NULL;
}

static void read_never(const char *path, struct names *never)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "rvcc: never-list %s: %s (ignored)\n", path, strerror(errno));
		return;
	}
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");
		/* A clone's name (f.isra.0, f.constprop.1: `rvtrace hotlist`
		 * of a capture names them as gcc made them) stands for f, as
		 * measure() folds clones into f; no C name has a dot. */
		s[strcspn(s, "#.\r\n")] = 0;
		size_t l = strlen(s);
		while (l && (s[l - 1] == ' ' || s[l - 1] == '\t'))
			s[--l] = 0;
		if (l && !strchr(s, ','))
			names_add(never, s);
	}
	fclose(f);
}

struct fn {
	char name[512];
	long insns;
	int loop;
	const char *rule; /* why it is left out, or NULL: traced */
};

struct fns {
	struct fn *v;
	size_t n;
};

static struct fn *fns_get(struct fns *fs, const char *name)
{
	for (size_t i = 0; i < fs->n; i++)
		if (strcmp(fs->v[i].name, name) == 0)
			return &fs->v[i];
	struct fn *nv = realloc(fs->v, (fs->n + 1) * sizeof(*nv));
	if (!nv) {
		perror("rvcc");
		exit(1);
	}
	fs->v = nv;
	struct fn *f = &fs->v[fs->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	return f;
}

/* Reads `objdump -d` of obj: per function (clones such as foo.part.0 and
 * foo.cold folded into foo) its instruction count and whether any branch
 * targets an earlier address of the same function (a loop or recursion). */
static int measure(const char *obj, struct fns *fs)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s'", obj);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -errno;
	char line[2048], cur[512] = "", sym[512] = "";
	struct fn *f = NULL;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long addr;
		char name[512];
		if (sscanf(line, "%llx <%511[^>]>:", &addr, name) == 2) {
			snprintf(sym, sizeof(sym), "%s", name);
			name[strcspn(name, ".")] = 0;
			snprintf(cur, sizeof(cur), "%s", name);
			f = fns_get(fs, cur);
			continue;
		}
		if (!f || sscanf(line, " %llx:", &addr) != 1 || !strchr(line, '\t'))
			continue;
		f->insns++;
		/* "jne    20 <sum+0x10>": a target inside the same symbol. */
		char *lt = strrchr(line, '<');
		size_t sl = strlen(sym);
		if (lt && strncmp(lt + 1, sym, sl) == 0 &&
		    (lt[1 + sl] == '>' || lt[1 + sl] == '+')) {
			char *q = lt;
			while (q > line && q[-1] == ' ')
				q--;
			while (q > line && strchr("0123456789abcdef", q[-1]))
				q--;
			unsigned long long target = strtoull(q, NULL, 16);
			if (target <= addr)
				f->loop = 1;
		}
	}
	int st = pclose(p);
	return st == 0 ? 0 : -EIO;
}

/* gcc's exclude list matches substrings: a name is safe to exclude when no
 * traced function of this translation unit contains it.  Un-excluding one
 * name can make another unsafe, hence the passes until nothing changes. */
static void keep_substring_safe(struct fns *fs)
{
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < fs->n; i++) {
			if (!fs->v[i].rule)
				continue;
			for (size_t j = 0; j < fs->n; j++) {
				if (j == i || fs->v[j].rule ||
				    !strstr(fs->v[j].name, fs->v[i].name))
					continue;
				fs->v[i].rule = NULL;
				changed = 1;
				break;
			}
		}
	}
}

struct compile {
	int lang_c; /* every source is C (not C++, assembler …) */
	int one_obj;
	const char *output; /* -o, or NULL */
	const char *source; /* the only source, or NULL */
};

/* Adds -fplugin=plugin (arg NULL) or the plugin's argument `arg` (named
 * after the plugin's file, as gcc names it). */
static void push_plugin(struct args *cc, const char *plugin, const char *arg)
{
	char a[PATH_MAX + 128];
	const char *b = strrchr(plugin, '/');
	b = b ? b + 1 : plugin;
	int blen = (int)strcspn(b, ".");
	if (arg)
		snprintf(a, sizeof(a), "-fplugin-arg-%.*s-%s", blen, b, arg);
	else
		snprintf(a, sizeof(a), "-fplugin=%s", plugin);
	args_push(cc, a);
}

/* True when late mode cannot serve the compile: the plugin's trace point is
 * x86-64 LP64 code (not -m32, -mx32, -m16), and it must run in the compile
 * that optimises, which with -flto (its last -flto or -fno-lto) is the
 * link's lto1. */
static int late_unfit(const struct args *cc)
{
#ifndef __x86_64__
	(void)cc;
	return 1;
#else
	int lto = 0, abi = 0;
	for (size_t i = 1; i < cc->n; i++) {
		const char *a = cc->v[i];
		if (has_prefix(a, "-flto"))
			lto = 1;
		else if (strcmp(a, "-fno-lto") == 0)
			lto = 0;
		else if (strcmp(a, "-m32") == 0 || strcmp(a, "-mx32") == 0 ||
			 strcmp(a, "-m16") == 0)
			abi = 1;
		else if (strcmp(a, "-m64") == 0)
			abi = 0;
	}
	return lto || abi;
#endif
}

/* True when an empty C compile with cc and the arguments of `with`
 * (a plugin's, then the compile's own) fails: the compiler cannot load the
 * plugin (about 10–30 ms).  `with` is freed. */
static int plugin_unusable(const struct opts *o, const char *cc, struct args *with)
{
	static const char *const rest[] = {"-x", "c", "-c", "/dev/null", "-o", "/dev/null"};
	struct args a = {0};
	args_push(&a, cc);
	for (size_t i = 0; i < with->n; i++)
		args_push(&a, with->v[i]);
	for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
		args_push(&a, rest[i]);
	int rc = run_as(o, a.v, 1);
	args_free(&a);
	args_free(with);
	return rc != 0;
}

/* True when gcc cannot load the GCC plugin in late mode. */
static int gcc_plugin_unusable(const struct opts *o, const char *cc, const char *plugin)
{
	struct args with = {0};
	push_plugin(&with, plugin, NULL);
	push_plugin(&with, plugin, "late");
	return plugin_unusable(o, cc, &with);
}

/* The two-pass compile for the threshold and the never-list (gcc, one
 * source and no other input; pass one always stops at the object).  Fills
 * excluded with the names to leave out and rules with their reason.
 * *plugin: the GCC plugin to exclude with, or NULL; pass one loads it (with
 * no list it does nothing) and, when gcc cannot but compiles without it,
 * says so and sets *plugin to NULL: names are then kept substring-safe.
 * Returns 0, or non-zero when pass one fails (then rvcc instruments
 * everything, and the real compile reports the error). */
static int plan_exclusions(const struct opts *o, const struct args *cc, const struct names *never,
			   const char **plugin, struct names *excluded, struct names *rules)
{
	char tmpl[] = "/tmp/rvcc-XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0)
		return -errno;
	close(fd);
	struct args a = {0};
	for (size_t i = 0; i < cc->n; i++) {
		const char *s = cc->v[i];
		if (strcmp(s, "-o") == 0 || strcmp(s, "-MF") == 0 || strcmp(s, "-MT") == 0 ||
		    strcmp(s, "-MQ") == 0) {
			i++;
			continue;
		}
		if (strcmp(s, "-MD") == 0 || strcmp(s, "-MMD") == 0 || strcmp(s, "-MP") == 0 ||
		    has_prefix(s, "-Wp,-M") || strcmp(s, "-g") == 0 || has_prefix(s, "-flto"))
			continue;
		args_push(&a, s);
	}
	args_push(&a, "-c");
	args_push(&a, "-fno-inline");
	args_push(&a, "-fno-ipa-icf"); /* identical bodies keep their own names */
	args_push(&a, "-fkeep-inline-functions");
	args_push(&a, "-Dalways_inline=noinline");
	args_push(&a, "-D__always_inline__=__noinline__");
	args_push(&a, "-g0");
	args_push(&a, "-w");
	args_push(&a, "-o");
	args_push(&a, tmpl);
	int rc;
	if (*plugin) {
		char fp[PATH_MAX + 64];
		snprintf(fp, sizeof(fp), "-fplugin=%s", *plugin);
		args_push(&a, fp);
		rc = run_as(o, a.v, 1);
		free(a.v[--a.n]);
		a.v[a.n] = NULL;
		if (rc != 0 && (rc = run_as(o, a.v, 1)) == 0 && !quiet_default(o)) {
			fprintf(stderr,
				"rvcc: %s: %s cannot load it; excluding by substring-safe names\n",
				*plugin, a.v[0]);
			*plugin = NULL;
		}
	} else {
		/* Quiet: a source that does not compile is the real compile's
		 * to report (once, as the compiler alone would). */
		rc = run_as(o, a.v, 1);
	}
	struct fns fs = {0};
	if (rc == 0)
		rc = measure(tmpl, &fs);
	unlink(tmpl);
	for (size_t i = 0; i < a.n; i++)
		free(a.v[i]);
	free(a.v);
	if (rc != 0) {
		free(fs.v);
		return rc;
	}
	for (size_t i = 0; i < fs.n; i++) {
		struct fn *f = &fs.v[i];
		if (names_has(never, f->name))
			f->rule = "never";
		else if (o->threshold > 0 && f->insns < o->threshold && !f->loop)
			f->rule = "threshold";
	}
	if (!*plugin)
		keep_substring_safe(&fs);
	for (size_t i = 0; i < fs.n; i++) {
		if (!fs.v[i].rule)
			continue;
		names_push(excluded, fs.v[i].name);
		names_push(rules, fs.v[i].rule);
	}
	assert(excluded->n == rules->n);
	free(fs.v);
	return 0;
}

/* The temporary file template rvcc's lists are made from. */
static const char tmp_template[] = "/tmp/rvcc-XXXXXX";

/* Writes "rule name\n" per excluded name into a new temporary file whose
 * path goes to tmpl (at least sizeof(tmp_template) bytes); the caller
 * unlinks it.  Returns 0 or a negative errno (then nothing is left behind). */
static int write_list(char *tmpl, const struct names *excluded, const struct names *rules)
{
	memcpy(tmpl, tmp_template, sizeof(tmp_template));
	int fd = mkstemp(tmpl);
	if (fd < 0)
		return -errno;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(tmpl);
		return -e;
	}
	for (size_t i = 0; i < excluded->n; i++)
		fprintf(f, "%s %s\n", rules->v[i], excluded->v[i]);
	if (fclose(f) != 0) {
		int e = errno;
		unlink(tmpl);
		return -e;
	}
	return 0;
}

/* Adds the `.rearview_untraced` section to obj from list (write_list). */
static int mark_untraced(const struct opts *o, const char *obj, const char *list)
{
	char sec[PATH_MAX + 32];
	snprintf(sec, sizeof(sec), ".rearview_untraced=%s", list);
	struct args a = {0};
	args_push(&a, "objcopy");
	args_push(&a, "--add-section");
	args_push(&a, sec);
	args_push(&a, "--set-section-flags");
	args_push(&a, ".rearview_untraced=contents,readonly");
	args_push(&a, obj);
	int rc = run(o, a.v);
	for (size_t i = 0; i < a.n; i++)
		free(a.v[i]);
	free(a.v);
	return rc;
}

/* clang: the pass plugin (rvcc_clang_plugin.cc) takes the threshold and the
 * never-list from the environment and appends "rule name" lines for what it
 * leaves out to out (at least sizeof(tmp_template) bytes), a new empty
 * temporary file; arg gets the flag that
 * loads it.  Returns the plugin, or NULL (nothing set) when there is none,
 * clang cannot load it (said on stderr) or no file can be made. */
static const char *clang_exclusions(const struct opts *o, const char *cc, char *out, char *arg,
				    size_t arg_size)
{
	const char *plugin = find_plugin(o, "rvcc_clang_plugin.so");
	if (!plugin)
		return NULL;
	snprintf(arg, arg_size, "-fpass-plugin=%s", plugin);
	struct args with = {0};
	args_push(&with, arg);
	if (plugin_unusable(o, cc, &with)) {
		if (!quiet_default(o))
			fprintf(stderr,
				"rvcc: %s: %s cannot load it; every function instrumented\n",
				plugin, cc);
		return NULL;
	}
	memcpy(out, tmp_template, sizeof(tmp_template));
	int fd = mkstemp(out);
	if (fd < 0) {
		perror("rvcc: mkstemp");
		out[0] = 0;
		return NULL;
	}
	close(fd);
	char t[32];
	snprintf(t, sizeof(t), "%ld", o->threshold);
	if (setenv("RVCC_CLANG_THRESHOLD", t, 1) != 0 || setenv("RVCC_CLANG_OUT", out, 1) != 0 ||
	    (o->never && setenv("RVCC_CLANG_EXCLUDE", o->never, 1) != 0)) {
		perror("rvcc: setenv");
		exit(1);
	}
	return plugin;
}

static long file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

/* Sets the option `a` (--rv-…); -1 when it is not one. */
static int parse_option(struct opts *o, const char *a)
{
	const char *v = strchr(a, '=');
	v = v ? v + 1 : "";
	if (strcmp(a, "--rv-off") == 0)
		o->off = 1;
	else if (strcmp(a, "--rv-static") == 0)
		o->is_static = 1;
	else if (strcmp(a, "--rv-verbose") == 0)
		o->verbose = 1;
	else if (strcmp(a, "--rv-rpath") == 0)
		o->rpath = 1;
	else if (has_prefix(a, "--rv-mode=")) {
		o->inline_mode = strcmp(v, "call") != 0;
		o->late = strcmp(v, "late") == 0;
		o->mode_default = 0;
	} else if (has_prefix(a, "--rv-threshold=")) {
		o->threshold = strtol(v, NULL, 10);
		o->threshold_default = 0;
	} else if (has_prefix(a, "--rv-never="))
		o->never = v;
	else if (has_prefix(a, "--rv-libdir="))
		o->libdir = v;
	else if (has_prefix(a, "--rv-incdir="))
		o->incdir = v;
	else if (has_prefix(a, "--rv-plugin="))
		o->plugin = v;
	else
		return -1;
	return 0;
}

/* True when `a` names a compiler input (a source, object or archive by its
 * extension) rather than a compiler: `rvcc app.c` compiles app.c with
 * RVCC_CC (default gcc). */
static int is_input_name(const char *a)
{
	static const char *const ext[] = {"c",	 "i", "h",  "cc", "cpp", "cxx", "C",  "c++", "ii",
					  "s",	 "S", "sx", "o",  "a",	 "so",	"lo", "la",  "hh",
					  "hpp", "H", "m",  "mm", "f",	 "F",	"f90"};
	const char *slash = strrchr(a, '/');
	const char *dot = strrchr(slash ? slash + 1 : a, '.');
	if (!dot)
		return 0;
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (strcmp(dot + 1, ext[i]) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	o.inline_mode = strcmp(env_or("RVCC_MODE", "late"), "call") != 0;
	o.late = strcmp(env_or("RVCC_MODE", "late"), "late") == 0;
	o.mode_default = !env_or("RVCC_MODE", NULL);
	o.off = strcmp(env_or("RVCC", ""), "off") == 0;
	o.is_static = strcmp(env_or("RVCC_STATIC", "0"), "1") == 0;
	o.verbose = strcmp(env_or("RVCC_VERBOSE", "0"), "1") == 0;
	o.rpath = strcmp(env_or("RVCC_RPATH", "0"), "1") == 0;
	o.threshold_default = !env_or("RVCC_THRESHOLD", NULL);
	o.threshold = strtol(env_or("RVCC_THRESHOLD", RVCC_DEFAULT_THRESHOLD), NULL, 10);
	o.never = env_or("RVCC_NEVER", NULL);
	o.libdir = env_or("RVCC_LIBDIR", NULL);
	o.incdir = env_or("RVCC_INCDIR", NULL);
	o.plugin = env_or("RVCC_PLUGIN", NULL);

	const char *self = strrchr(argv[0], '/');
	self = self ? self + 1 : argv[0];
	/* Called as rvcc-gcc: CC=rvcc-gcc needs no space; --help is gcc's. */
	const char *named = has_prefix(self, "rvcc-") && self[5] ? self + 5 : NULL;
	if (!named && argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	/* rvcc's own version; with RVCC_CC set, `rvcc --version` is that
	 * compiler's (build systems identify the compiler by it). */
	if (!named && argc == 2 && strcmp(argv[1], "--version") == 0 && !env_or("RVCC_CC", NULL))
		return rvc_print_version("rvcc");
	/* The compiler: the first argument that is not one of rvcc's options
	 * (which may come before it), unless it is an option or an input. */
	int first = 1;
	while (first < argc && has_prefix(argv[first], "--rv-"))
		first++;
	const char *compiler = env_or("RVCC_CC", "gcc");
	int cc_at = 0;
	if (named) {
		compiler = named;
	} else if (first < argc && argv[first][0] != '-' && argv[first][0] != '@' &&
		   !is_input_name(argv[first])) {
		compiler = argv[first];
		cc_at = first;
	}

	/* The compiler's arguments: response files expanded, --rv- removed. */
	struct args cc = {0};
	args_push(&cc, compiler);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i == cc_at)
			continue;
		if (!has_prefix(a, "--rv-")) {
			push_expanded(&cc, a, 0);
			continue;
		}
		if (parse_option(&o, a) != 0) {
			fprintf(stderr, "rvcc: unknown option %s (see rvcc --help)\n", a);
			return 2;
		}
	}

	const char *base = strrchr(compiler, '/');
	base = base ? base + 1 : compiler;
	int is_clang = strstr(base, "clang") != NULL;
	int is_cxx = strstr(base, "++") != NULL;

	/* Classify the command. */
	int compile_only = 0, preprocess_only = 0, shared = 0, nsrc = 0, ninputs = 0, asm_src = 0;
	int cxx_src = 0;
	struct compile c = {0};
	const char *lang = NULL;
	for (size_t i = 1; i < cc.n; i++) {
		const char *a = cc.v[i];
		if (a[0] == '-' && a[1]) {
			if (strcmp(a, "-c") == 0 || strcmp(a, "-S") == 0)
				compile_only = 1;
			else if (strcmp(a, "-E") == 0 || strcmp(a, "-M") == 0 ||
				 strcmp(a, "-MM") == 0 || strcmp(a, "-fsyntax-only") == 0)
				preprocess_only = 1;
			else if (strcmp(a, "-shared") == 0)
				shared = 1;
			else if (strcmp(a, "-o") == 0 && i + 1 < cc.n)
				c.output = cc.v[i + 1];
			else if (has_prefix(a, "-x"))
				lang = a[2] ? a + 2 : (i + 1 < cc.n ? cc.v[i + 1] : NULL);
			if (takes_value(a))
				i++;
			continue;
		}
		ninputs++;
		const char *dot = strrchr(a, '.');
		const char *ext = dot ? dot + 1 : "";
		int is_src;
		if (lang && strcmp(lang, "none") != 0) {
			is_src = 1;
			if (has_prefix(lang, "assembler"))
				asm_src = 1;
			else if (strstr(lang, "c++"))
				cxx_src = 1;
		} else if (strcmp(ext, "c") == 0 || strcmp(ext, "i") == 0) {
			is_src = 1;
		} else if (strcmp(ext, "s") == 0 || strcmp(ext, "S") == 0 ||
			   strcmp(ext, "sx") == 0) {
			is_src = 1;
			asm_src = 1;
		} else if (strcmp(ext, "cc") == 0 || strcmp(ext, "cpp") == 0 ||
			   strcmp(ext, "cxx") == 0 || strcmp(ext, "C") == 0 ||
			   strcmp(ext, "c++") == 0 || strcmp(ext, "ii") == 0) {
			is_src = 1;
			cxx_src = 1;
		} else {
			is_src = 0;
		}
		if (is_src) {
			nsrc++;
			c.source = a;
		}
	}
	if (o.off || ninputs == 0 || preprocess_only) {
		verbose_print(&o, cc.v);
		execvp(cc.v[0], cc.v);
		fprintf(stderr, "rvcc: %s: %s\n", cc.v[0], strerror(errno));
		return 127;
	}
	find_dirs(&o);

	/* Instrumentation, when there is something to compile. */
	struct names never = {0}, excluded = {0}, rules = {0};
	int two_pass = 0;
	const char *clang_plugin = NULL;
	const char *late = NULL; /* the GCC plugin, in late mode */
	char clang_out[32] = "", clang_arg[PATH_MAX + 64];
	size_t ncc = cc.n; /* the user's arguments end here */
	if (nsrc > 0) {
		if (is_clang) {
			args_push(&cc, "-finstrument-functions-after-inlining");
			if (o.threshold > 0 || o.never)
				clang_plugin = clang_exclusions(&o, cc.v[0], clang_out, clang_arg,
								sizeof(clang_arg));
			if (clang_plugin)
				args_push(&cc, clang_arg);
		} else {
			c.lang_c = !cxx_src && !is_cxx && !asm_src;
			/* Late mode (C and C++, x86-64) needs the plugin in the
			 * compile that optimises (late_unfit); otherwise inline (C)
			 * or call (C++) mode.  A plugin that does not load in late
			 * mode is left to pass one to try for exclusion. */
			if (o.late && !asm_src && !late_unfit(&cc))
				late = find_plugin(&o, "rvcc_gcc_plugin.so");
			if (late && gcc_plugin_unusable(&o, cc.v[0], late))
				late = NULL;
			if (o.late && !o.mode_default && !asm_src && !late)
				fprintf(stderr, "rvcc: late mode unavailable; %s mode instead\n",
					c.lang_c ? "inline" : "call");
			if (!late)
				args_push(&cc, "-finstrument-functions");
			if (o.inline_mode && c.lang_c && !late) {
				char inc[PATH_MAX + 32];
				snprintf(inc, sizeof(inc), "%s/rearview/trace-inline.h", o.incdir);
				args_push(&cc, "-include");
				args_push(&cc, inc);
			}
			if (o.never)
				read_never(o.never, &never);
			/* Late mode's plugin measures and names what it leaves
			 * out itself (rvcc_gcc_plugin.cc, "build-time budget"). */
			two_pass = !late && nsrc == 1 && ninputs == 1 && !asm_src &&
				   (o.threshold > 0 || never.n > 0);
		}
	}
	char list[32] = "";
	_Static_assert(sizeof(list) >= sizeof(tmp_template) &&
			       sizeof(clang_out) >= sizeof(tmp_template),
		       "a list's path fits");
	if (two_pass) {
		struct args plain = {cc.v, ncc, cc.cap};
		char *saved = cc.v[ncc];
		cc.v[ncc] = NULL;
		const char *plugin = find_plugin(&o, "rvcc_gcc_plugin.so");
		int rc = plan_exclusions(&o, &plain, &never, &plugin, &excluded, &rules);
		cc.v[ncc] = saved;
		if (rc == 0 && excluded.n > 0 && write_list(list, &excluded, &rules) != 0) {
			perror("rvcc: the exclusion list");
			list[0] = 0;
		}
		if (list[0] && plugin) {
			char arg[sizeof(list) + 16];
			snprintf(arg, sizeof(arg), "exclude=%s", list);
			push_plugin(&cc, plugin, NULL);
			push_plugin(&cc, plugin, arg);
		} else if (list[0]) {
			size_t len = 64;
			for (size_t i = 0; i < excluded.n; i++)
				len += strlen(excluded.v[i]) + 1;
			char *flag = malloc(len);
			if (!flag) {
				perror("rvcc");
				return 1;
			}
			size_t at = (size_t)snprintf(
				flag, len, "-finstrument-functions-exclude-function-list=");
			for (size_t i = 0; i < excluded.n; i++)
				at += (size_t)snprintf(flag + at, len - at, "%s%s", i ? "," : "",
						       excluded.v[i]);
			args_push(&cc, flag);
			free(flag);
		}
	}

	char late_list[32] = "";
	if (late) {
		assert(!two_pass); /* so -fplugin= is not in cc yet */
		push_plugin(&cc, late, NULL);
		push_plugin(&cc, late, "late");
		if (o.threshold > 0) {
			char t[48];
			snprintf(t, sizeof(t), "threshold=%ld", o.threshold);
			push_plugin(&cc, late, t);
		}
		if (never.n > 0) {
			struct names rule = {0};
			for (size_t i = 0; i < never.n; i++)
				names_push(&rule, "never");
			if (write_list(late_list, &never, &rule) == 0) {
				char arg[sizeof(late_list) + 16];
				snprintf(arg, sizeof(arg), "exclude=%s", late_list);
				push_plugin(&cc, late, arg);
			} else {
				perror("rvcc: the never-list");
				late_list[0] = 0;
			}
			names_free(&rule);
		}
	}

	/* librvtrace, when the command links. */
	if (!compile_only) {
		char a1[PATH_MAX + 32], a2[PATH_MAX + 32];
		if (o.is_static && !shared) {
			snprintf(a1, sizeof(a1), "%s/librvtrace.a", o.libdir);
			snprintf(a2, sizeof(a2), "%s/librvproto.a", o.libdir);
			args_push(&cc, a1);
			args_push(&cc, a2);
			args_push(&cc, "-lprotobuf-c");
			args_push(&cc, "-lelf");
			args_push(&cc, "-lpthread");
			/* The control thread's member, whose constructor joins the
			 * daemon (trace.h): nothing else refers to it. */
			args_push(&cc, "-Wl,-u,rvt_control_start");
		} else {
			snprintf(a1, sizeof(a1), "-L%s", o.libdir);
			args_push(&cc, a1);
			if (o.rpath) {
				snprintf(a2, sizeof(a2), "-Wl,-rpath,%s", o.libdir);
				args_push(&cc, a2);
			}
			/* Needed even where nothing of this link is traced
			 * (the linker's --as-needed, gcc's default here, would
			 * drop it): the program joins the daemon all the same. */
			args_push(&cc, "-Wl,--push-state,--no-as-needed");
			args_push(&cc, "-lrvtrace");
			args_push(&cc, "-Wl,--pop-state");
		}
	}

	int rc = run(&o, cc.v);
	if (rc == 0 && clang_plugin && file_size(clang_out) > 0 && (nsrc == 1 || !compile_only)) {
		snprintf(list, sizeof(list), "%s", clang_out);
	}
	if (clang_out[0] && strcmp(list, clang_out) != 0)
		unlink(clang_out);
	if (rc == 0 && list[0]) {
		char obj[PATH_MAX];
		if (c.output) {
			snprintf(obj, sizeof(obj), "%s", c.output);
		} else if (!compile_only) {
			snprintf(obj, sizeof(obj), "a.out");
		} else {
			const char *b = strrchr(c.source, '/');
			b = b ? b + 1 : c.source;
			snprintf(obj, sizeof(obj), "%s", b);
			char *dot = strrchr(obj, '.');
			if (dot && strlen(dot) >= 2)
				snprintf(dot, sizeof(obj) - (size_t)(dot - obj), ".o");
		}
		int src_is_s = 0;
		for (size_t i = 1; i < ncc; i++)
			src_is_s |= strcmp(cc.v[i], "-S") == 0;
		if (!src_is_s && mark_untraced(&o, obj, list) != 0)
			fprintf(stderr, "rvcc: %s: could not add .rearview_untraced\n", obj);
	}
	if (list[0])
		unlink(list);
	if (late_list[0])
		unlink(late_list);
	args_free(&cc);
	names_free(&never);
	names_free(&excluded);
	names_free(&rules);
	return rc;
}
