/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvtrace.c — the rvtrace command-line tool: info, summary, tree, replay,
 * report, graph, flamegraph, export, diff and why over any input
 * librvanalysis imports.
 *
 * Output goes to stdout (or -o FILE); errors to stderr with exit status 1;
 * usage errors (a bad option value, a pattern that does not compile) exit
 * 2.  The filters (--filter, --notrace, --hide, --depth, --time-filter,
 * --tid) are options of every command but hotlist; they are parsed into
 * one rva_filter and applied to each trace as it is loaded, so every view
 * sees the same filtered model.  All the work is in the library; this file
 * only parses options and prints.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rearview/analysis.h"
#include "rearview/common.h"
#include "hotlist.h"

static const char usage_main[] =
	"usage: rvtrace COMMAND [OPTIONS] FILE...\n"
	"\n"
	"Decode, analyse and convert method traces.  Inputs are detected by\n"
	"content: Rearview captures (.rvt), Android .trace (v1-3, streaming),\n"
	"Chrome Trace Event JSON, Perfetto protobuf, folded stacks, Nanoscope text.\n"
	"\n"
	"commands:\n"
	"  info FILE          format, threads, methods, calls, time span\n"
	"  summary FILE       top methods by self time, chains at the anomaly,\n"
	"                     longest-running chains with signatures (--json)\n"
	"  tree FILE          top-down call tree with percentages\n"
	"  replay FILE        every call in time order, indented, with durations\n"
	"  report FILE        per-method totals, sorted (-s total,self,calls,...)\n"
	"  graph [FUNC] FILE  the call graph below FUNC, with the paths to it\n"
	"  flamegraph FILE    interactive SVG flame graph\n"
	"  export FILE        convert (--format F -o OUT)\n"
	"  diff A B           methods whose self time changed, largest first\n"
	"  hotlist FILE...    hot, short methods: a never-list for rvcc\n"
	"  why METHOD FILE    a method's time split into on-CPU and off-CPU, by reason\n"
	"\n"
	"Filters, accepted by every command but hotlist (short forms in replay,\n"
	"report and graph; see `rvtrace replay --help`):\n"
	"  -F, --filter=PAT   only calls of PAT and what they call\n"
	"  -N, --notrace=PAT  leave out calls of PAT and what they call\n"
	"  -H, --hide=PAT     leave out calls of PAT, keep what they call\n"
	"  -D, --depth=N      only N levels of calls\n"
	"  -t, --time-filter=TIME  only calls lasting TIME or more\n"
	"      --tid=TID[,TID...]  only these threads\n"
	"\n"
	"`rvtrace COMMAND --help` describes each command; `rvtrace --version`\n"
	"prints the version.  On a terminal, work\n"
	"taking over a second shows a progress bar on stderr; --quiet (anywhere\n"
	"before a `--`) turns it off, --progress shows it on any stderr.\n";

/* The filters' manual, in replay's, report's and graph's help; the other
 * commands name them in FILTER_LINE. */
#define FILTER_HELP                                                                        \
	"filters (every command but hotlist; a call a filter removes gives its time\n"     \
	"to its kept caller's self time):\n"                                               \
	"  -F, --filter=PAT       only calls of PAT and what they call (the outermost\n"   \
	"                         such call becomes a root)\n"                             \
	"  -N, --notrace=PAT      leave out calls of PAT and everything they call\n"       \
	"  -H, --hide=PAT         leave out calls of PAT but keep what they call\n"        \
	"  -D, --depth=N          only N levels of calls (N >= 1; after -F, below it)\n"   \
	"  -t, --time-filter=TIME only calls lasting TIME or more: a number with\n"        \
	"                         ns, us, ms or s (default us); for traces of sample\n"    \
	"                         weights a plain number of samples\n"                     \
	"      --tid=TID[,TID...] only these threads (tids as `rvtrace info` lists)\n"     \
	"  Each option may be given several times.  PAT selects the methods named\n"       \
	"  exactly PAT and, when PAT holds one of . ? * + - ^ $ | ( ) [ ] { } \\, those\n" \
	"  whose name the POSIX extended regular expression PAT matches anywhere\n"        \
	"  (anchor it with ^ and $), as uftrace does.  A pattern that does not\n"          \
	"  compile, a depth or time that is not a number in range, is a usage\n"           \
	"  error (exit 2).\n"
#define FILTER_LINE                                                                   \
	"\nFilters: --filter, --notrace, --hide, --depth, --time-filter and --tid,\n" \
	"as in `rvtrace replay --help`, narrow the trace first.\n"

static const char usage_replay[] =
	"usage: rvtrace replay [-f FIELDS] [FILTERS] FILE\n"
	"\n"
	"Every call in time order, as `uftrace replay` shows it: a call with\n"
	"callees opens with `name() {` and closes with `} /* name */` and its\n"
	"duration; a call without callees is one line `name();` with its duration.\n"
	"Threads are merged by time, each line with its thread's tid; the anomaly\n"
	"is a `/* anomaly: NAME */` line at its time.  Durations in us, ms or s\n"
	"(sample counts for aggregate-only inputs).  Indentation stops at 256\n"
	"levels; deeper lines show their depth as [N].\n"
	"\n"
	"  -f, --output-fields=FIELDS  columns, comma-separated, of duration, tid,\n"
	"                         elapsed (time since the trace's first call), or\n"
	"                         none (default duration,tid)\n" FILTER_HELP;

static const char usage_report[] =
	"usage: rvtrace report [-s KEYS] [--avg-self] [--threads] [--top N] [FILTERS] FILE\n"
	"\n"
	"Per method, as `uftrace report` shows it: total time (inclusive, a\n"
	"recursive call inside itself counted once), self time, calls, and the\n"
	"average, minimum and maximum of one call's total time.\n"
	"\n"
	"  -s, --sort=KEYS   comma-separated sort keys, each breaking the ties of the\n"
	"                    one before: total (default), self, calls, avg, min, max\n"
	"                    (largest first), func (by name); ties end by name\n"
	"      --avg-self    average, minimum and maximum of one call's self time\n"
	"                    instead (avg, min and max then sort by those)\n"
	"      --threads     one table per thread\n"
	"  -n, --top N       at most N rows per table (default all)\n" FILTER_HELP;

static const char usage_graph[] =
	"usage: rvtrace graph [FILTERS] [FUNC] FILE\n"
	"\n"
	"The call graph below FUNC, as `uftrace graph FUNC` shows it: first each\n"
	"distinct call path (backtrace) that leads to FUNC, with its calls (hits)\n"
	"and time; then every outermost call of FUNC merged into one tree (calls\n"
	"of FUNC inside FUNC are part of it), one line per call path with its\n"
	"total time and `(calls)`, children by time, several children drawn\n"
	"with `+-` and `|`.  Without FUNC, the whole trace's call graph.  FUNC is\n"
	"an exact name, or a pattern (as for --filter) that selects exactly one\n"
	"method.  -D N draws N levels, FUNC the first (without FUNC, N levels of\n"
	"the roots); the graph never goes more than 512 levels below FUNC.  The\n"
	"time of calls left out stays in the total time of those above them.\n"
	"The other filters narrow the trace first, as in every command.\n" FILTER_HELP;

static const char usage_info[] =
	"usage: rvtrace info [FILTERS] FILE\n"
	"\n"
	"Print the detected format, the time span, the thread list with call\n"
	"counts, the number of distinct methods, of events dropped as damage\n"
	"(unmatched exits, torn slots, malformed lines) and of frames repaired\n"
	"(a capture's exits with no entry, given an \"(unknown caller)\" frame),\n"
	"and for a capture any span in which the tracer lost events.\n" FILTER_LINE;

static const char usage_summary[] =
	"usage: rvtrace summary [--top N] [--window MS] [--json] [--match P] [--full]\n"
	"                       [FILTERS] FILE\n"
	"\n"
	"  --top N        rows in each table (default 20)\n"
	"  --window MS    analyse only the last MS milliseconds before the anomaly\n"
	"                 (or before the end of the trace when there is none)\n"
	"  --json         machine-readable output; schema in tracer/RVTRACE.md\n"
	"  --match P      also list calls matching the pattern P =\n"
	"                 NAME[,NAME...][@MIN_MS]: names (globs) in order along the\n"
	"                 chain, the last one the call itself, lasting >= MIN_MS\n"
	"                 (a \"performance bug model\"); text output only\n"
	"  --full         decode a Rearview capture into the full model first\n"
	"                 (same output; by default a capture is summarised while\n"
	"                 it is decoded, in memory proportional to its distinct\n"
	"                 call paths; --window and --match need the model and\n"
	"                 imply it)\n"
	"\n"
	"Prints the methods with the most self time (calls, inclusive time with\n"
	"recursion counted once, self time; for traces with a thread-CPU clock\n"
	"beside the wall clock, e.g. Android dual-clock traces, also cpu_incl and\n"
	"cpu_self in thread-CPU time), the call chain running at the anomaly\n"
	"on each thread, and the chains (distinct call paths) with the most self\n"
	"time, each with its 64-bit signature (FNV-1a over normalized names, the\n"
	"same on every device).  Times are microseconds, or samples for\n"
	"aggregate-only inputs.\n" FILTER_LINE;

static const char usage_why[] =
	"usage: rvtrace why [FILTERS] METHOD FILE\n"
	"\n"
	"Why METHOD (exact name) took its time: its calls' inclusive time\n"
	"(recursion counted once) split into on-CPU and off-CPU time, the\n"
	"off-CPU time by reason (preempted: switched out while runnable;\n"
	"blocked: sleeping on a pipe, futex, I/O or a page fault), and the\n"
	"counters of its threads (CPU time, minor and major page faults,\n"
	"voluntary and involuntary context switches) — from rearviewd's OFFCPU\n"
	"records (tracer/FORMAT.md) — then every lock wait of METHOD with the\n"
	"lock's holder and what it was running (LOCK_WAIT records); times in\n"
	"microseconds.\n" FILTER_LINE;

static const char usage_tree[] =
	"usage: rvtrace tree [--threshold PCT] [--thread N] [FILTERS] FILE\n"
	"\n"
	"       rvtrace tree --callers METHOD [FILTERS] FILE\n"
	"\n"
	"  --threshold PCT  hide nodes under PCT % of the total (default 1)\n"
	"  --thread N       only thread index N (see `rvtrace info`)\n"
	"  --callers M      bottom-up instead: who calls method M (exact name),\n"
	"                   with calls and inclusive time (recursion counted once)\n"
	"\n"
	"Top-down merged call tree: total %, self %, inclusive and self time,\n"
	"method, calls; children sorted by inclusive time.\n" FILTER_LINE;

static const char usage_flame[] =
	"usage: rvtrace flamegraph [-o OUT.svg] [--title T] [FILTERS] FILE\n"
	"\n"
	"Writes a self-contained interactive SVG flame graph: click a frame to\n"
	"zoom, Ctrl-F or the Search button to highlight by regex, hover for\n"
	"tooltips.  No external resources are referenced.\n" FILTER_LINE;

static const char usage_export[] =
	"usage: rvtrace export --format F [-o OUT] [FILTERS] FILE\n"
	"\n"
	"formats:\n"
	"  folded     one line per call path, self time in microseconds\n"
	"  chrome     Chrome Trace Event JSON (X events, anomaly instant)\n"
	"  nanoscope  Nanoscope text of the first thread\n"
	"  perfetto   Perfetto protobuf (opens in ui.perfetto.dev)\n"
	"  pprof      gzip'd pprof profile: wall time and calls per stack (go tool pprof)\n"
	"  speedscope speedscope JSON, evented profiles (www.speedscope.app)\n"
	"  android    Android .trace v3 (Android Studio, traceview, dmtracedump)\n"
	"  svg        the flame graph (same as `rvtrace flamegraph`)\n" FILTER_LINE;

static const char usage_diff[] =
	"usage: rvtrace diff [--top N] [FILTERS] A B\n"
	"       rvtrace diff [--top N] [FILTERS] A... -- B...\n"
	"\n"
	"Compares methods by name: self time in A and B and the delta B - A,\n"
	"sorted by the size of the change.  With `--`, each side is a set of\n"
	"traces analysed as one (e.g. a release's captures against the next).\n" FILTER_LINE;

static int die_usage(const char *u)
{
	fputs(u, stderr);
	return 2;
}

static int want_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	return 0;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int quiet;    /* --quiet: no progress bar */
static int progress; /* --progress: the bar even when stderr is no terminal */

/* The filters of the command line (every command but hotlist), applied to
 * each trace load() reads.  The time filter is kept as given: its unit is
 * checked against each trace (sample weights take no unit). */
static rva_filter *filter;
static struct {
	int set, unit; /* given; with a unit */
	double v;      /* in ns, or the number as given without a unit */
} min_time;
static size_t calls_read, calls_kept; /* by the last load(): before / after */

/* Long-only codes of the filter options (getopt_long's values). */
enum { OPT_FILTER = 0x100, OPT_NOTRACE, OPT_HIDE, OPT_DEPTH, OPT_TIME, OPT_TID };
#define FILTER_OPTS                                                 \
	{"filter", required_argument, NULL, OPT_FILTER},            \
		{"notrace", required_argument, NULL, OPT_NOTRACE},  \
		{"hide", required_argument, NULL, OPT_HIDE},        \
		{"depth", required_argument, NULL, OPT_DEPTH},      \
		{"time-filter", required_argument, NULL, OPT_TIME}, \
	{                                                           \
		"tid", required_argument, NULL, OPT_TID             \
	}

/* An unsigned decimal integer in [lo, hi] (no sign, no blanks). */
static int parse_uint(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *e;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &e, 10);
	if (errno || *e || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* TIME = NUMBER[ns|us|ms|s] into min_time: NUMBER times the unit in ns,
 * or NUMBER alone without a unit (µs for a trace of times, samples for one
 * of sample weights; apply_filter decides).  Either way at most 2^63 ns. */
static int parse_time(const char *s)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	const char *why = NULL;
	char *e;
	errno = 0;
	double v = strtod(s, &e);
	if (e == s || errno || !(v >= 0) || v > 1e300) {
		why = e != s && v < 0 ? "a duration cannot be negative" : "not a number in range";
	} else if (*e) {
		size_t i = 0;
		while (i < sizeof(units) / sizeof(units[0]) && strcmp(e, units[i].unit) != 0)
			i++;
		if (i == sizeof(units) / sizeof(units[0])) {
			fprintf(stderr,
				"rvtrace: --time-filter '%s': unknown unit '%s' (ns, us, ms or "
				"s)\n",
				s, e);
			return -1;
		}
		v *= units[i].ns;
	}
	if (!why && v * (*e ? 1 : 1e3) > 9.2e18)
		why = "out of range";
	if (why) {
		fprintf(stderr, "rvtrace: --time-filter '%s': %s\n", s, why);
		return -1;
	}
	min_time.set = 1;
	min_time.unit = *e != '\0';
	min_time.v = v;
	return 0;
}

/* Handles a filter option (code from FILTER_OPTS); 0, or 2 (usage error,
 * said on stderr). */
static int filter_opt(int code, const char *arg)
{
	if (!filter && !(filter = rva_filter_new())) {
		fprintf(stderr, "rvtrace: out of memory\n");
		return 2;
	}
	rva_error err = {{0}};
	uint64_t v;
	int rc;
	switch (code) {
	case OPT_FILTER:
	case OPT_NOTRACE:
	case OPT_HIDE:
		rc = rva_filter_add(filter,
				    code == OPT_FILTER	  ? RVA_FILTER_INCLUDE
				    : code == OPT_NOTRACE ? RVA_FILTER_EXCLUDE
							  : RVA_FILTER_HIDE,
				    arg, &err);
		if (rc < 0) {
			fprintf(stderr, "rvtrace: %s\n", err.msg[0] ? err.msg : strerror(-rc));
			return 2;
		}
		return 0;
	case OPT_DEPTH:
		if (parse_uint(arg, 1, UINT64_MAX, &v) < 0) {
			fprintf(stderr,
				"rvtrace: --depth '%s': not a whole number from 1 to %" PRIu64 "\n",
				arg, UINT64_MAX);
			return 2;
		}
		rva_filter_depth(filter, v);
		return 0;
	case OPT_TIME:
		return parse_time(arg) < 0 ? 2 : 0;
	case OPT_TID: {
		char buf[4096];
		if (strlen(arg) >= sizeof(buf))
			goto bad_tid;
		snprintf(buf, sizeof(buf), "%s", arg);
		char *save = NULL;
		int n = 0;
		for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (parse_uint(tok, 0, UINT32_MAX, &v) < 0)
				goto bad_tid;
			if (rva_filter_tid(filter, (uint32_t)v) < 0) {
				fprintf(stderr, "rvtrace: out of memory\n");
				return 2;
			}
			n++;
		}
		if (n)
			return 0;
	bad_tid:
		fprintf(stderr, "rvtrace: --tid '%.64s': not a list of thread ids\n", arg);
		return 2;
	}
	default:
		return 2;
	}
}

/* The short forms of replay, report and graph. */
static int filter_short(int c)
{
	switch (c) {
	case 'F':
		return OPT_FILTER;
	case 'N':
		return OPT_NOTRACE;
	case 'H':
		return OPT_HIDE;
	case 'D':
		return OPT_DEPTH;
	case 't':
		return OPT_TIME;
	default:
		return c;
	}
}

/* On stderr: up to 5 methods of t whose name contains pat (patterns
 * without a regex character select whole names only: `-F main` is not
 * `.../bench.py:111:main`). */
static void suggest(const rva_trace *t, const char *pat)
{
	for (size_t i = 0, n = 0; i < t->nmethods && n < 5; i++)
		if (strstr(t->names[i], pat))
			fprintf(stderr, "%s  %s\n",
				n++ ? "" : "rvtrace: methods whose name holds it:\n", t->names[i]);
}

/* Applies the command line's filters to t (loaded from path): 0, or -1
 * with the reason on stderr. */
static int apply_filter(const char *path, rva_trace *t)
{
	calls_read = calls_kept = 0;
	for (size_t i = 0; i < t->nthreads; i++)
		calls_read += t->threads[i].ncalls;
	if (!filter && !min_time.set) {
		calls_kept = calls_read;
		return 0;
	}
	if (!filter && !(filter = rva_filter_new())) {
		fprintf(stderr, "rvtrace: out of memory\n");
		return -1;
	}
	if (min_time.set) {
		if (t->weighted && min_time.unit) {
			fprintf(stderr,
				"rvtrace: %s: its times are sample weights: give --time-filter a "
				"number of samples, without a unit\n",
				path);
			return -1;
		}
		rva_filter_min_duration(
			filter,
			(int64_t)(t->weighted || min_time.unit ? min_time.v : min_time.v * 1e3));
	}
	const char *pat;
	for (size_t it = 0; (pat = rva_filter_unused(filter, t, &it));) {
		fprintf(stderr, "rvtrace: %s: warning: no method is named '%s' or matches it\n",
			path, pat);
		suggest(t, pat);
	}
	int rc = rva_trace_filter(t, filter);
	if (rc < 0) {
		fprintf(stderr, "rvtrace: %s: %s\n", path, strerror(-rc));
		return -1;
	}
	for (size_t i = 0; i < t->nthreads; i++)
		calls_kept += t->threads[i].ncalls;
	return 0;
}

/* 1 when the command line has a filter. */
static int filtering(void)
{
	return min_time.set || rva_filter_active(filter);
}

static int parse_num(const char *s, double *out);

/* The progress bar: drawn on a terminal only, once the work has run for a
 * second, and redrawn at most ten times a second (the library reports at a
 * bounded rate already).  `\r[#####     ] 42% 13.4 MiB/32.0 MiB`. */
typedef struct bar {
	double t0, last, after;
	int drawn;
} bar;

static void bar_draw(void *arg, uint64_t done, uint64_t total)
{
	bar *b = arg;
	double now = mono_s();
	if (now - b->t0 < b->after || (now - b->last < 0.1 && done < total) || total == 0)
		return;
	int pct = (int)(done * 100 / total), fill = pct / 5;
	fprintf(stderr, "\r[%.*s%*s] %3d%% %.1f MiB/%.1f MiB", fill, "####################",
		20 - fill, "", pct, (double)done / 1048576.0, (double)total / 1048576.0);
	fflush(stderr);
	b->last = now;
	b->drawn = 1;
}

/* Starts a bar when stderr is a terminal (or --progress) and --quiet is not given: *p is
 * then the callback to pass, else p->fn is NULL.  RVTRACE_PROGRESS_AFTER
 * (seconds, default 1) is when it appears; tests set it to 0. */
static void bar_start(bar *b, rva_progress *p)
{
	*b = (bar){.t0 = mono_s(), .after = 1.0};
	const char *env = getenv("RVTRACE_PROGRESS_AFTER");
	double after;
	if (env && parse_num(env, &after) == 0)
		b->after = after;
	*p = (rva_progress){(isatty(STDERR_FILENO) || progress) && !quiet ? bar_draw : NULL, b};
}

static void bar_end(const bar *b)
{
	if (b->drawn)
		fputs("\r\033[K", stderr);
}

/* Imports a file, with the progress bar. */
static int load(const char *path, rva_trace **t)
{
	rva_error err = {{0}};
	bar b;
	rva_progress p;
	bar_start(&b, &p);
	int rc = rva_import_file_progress(path, t, &err, &p);
	bar_end(&b);
	if (rc < 0) {
		fprintf(stderr, "rvtrace: %s: %s\n", path, err.msg[0] ? err.msg : strerror(-rc));
		return rc;
	}
	if ((*t)->warning)
		fprintf(stderr, "rvtrace: %s: warning: %s\n", path, (*t)->warning);
	if (apply_filter(path, *t) < 0) {
		rva_trace_free(*t);
		*t = NULL;
		return -EINVAL;
	}
	return rc;
}

static int parse_num(const char *s, double *out)
{
	char *e;
	errno = 0;
	double v = strtod(s, &e);
	if (errno || *e || e == s || v < 0)
		return -1;
	*out = v;
	return 0;
}

static double usec(const rva_trace *t, int64_t v)
{
	return t->weighted ? (double)v : (double)v / 1000.0;
}

/* The "self time includes untraced callees" line, when t has one. */
static void print_note(const rva_trace *t, const char *prefix)
{
	char note[1024];
	if (rva_untraced_note(t, note, sizeof(note)))
		printf("%s%s\n", prefix, note);
}

/* Parses a command line whose only options are the filters; returns the
 * index of the first operand, or -1 after a usage error (then *rc is the
 * exit status). */
static int filters_only(int argc, char **argv, const char *usage, int *rc)
{
	static const struct option opts[] = {FILTER_OPTS, {"help", no_argument, NULL, 'h'}, {0}};
	int c;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c >= OPT_FILTER && (*rc = filter_opt(c, optarg)) == 0)
			continue;
		if (c < OPT_FILTER)
			*rc = die_usage(usage);
		return -1;
	}
	return optind;
}

static int cmd_info(int argc, char **argv)
{
	int rc, at = filters_only(argc, argv, usage_info, &rc);
	if (at < 0)
		return rc;
	if (at + 1 != argc)
		return die_usage(usage_info);
	rva_trace *t;
	if (load(argv[at], &t) < 0)
		return 1;
	size_t calls = 0;
	for (size_t i = 0; i < t->nthreads; i++)
		calls += t->threads[i].ncalls;
	printf("format:   %s\n", t->format);
	printf("clock:    %s\n", t->weighted ? "sample weights" : "nanoseconds");
	printf("span:     %" PRId64 " .. %" PRId64 " (%.3f %s)\n", t->start, t->end,
	       usec(t, t->end - t->start), t->weighted ? "samples" : "us");
	printf("methods:  %zu\ncalls:    %zu\ndropped:  %" PRIu64 "\n", t->nmethods, calls,
	       t->dropped);
	if (filtering())
		printf("filtered: %zu of %zu calls kept\n", calls_kept, calls_read);
	printf("repaired: %" PRIu64 " frames\n", t->repaired);
	for (size_t i = 0; i < t->nskipped; i++)
		printf("%s%" PRIu64 " %s%s", i ? ", " : "skipped:  ", t->skipped[i].n,
		       t->skipped[i].what, i + 1 == t->nskipped ? " (map to no call)\n" : "");
	print_note(t, "note:     ");
	for (size_t i = 0; i < t->nmuted; i++) {
		const rva_muted *m = &t->muted[i];
		printf("muted:    %s at %" PRId64 " (%" PRIu64 " calls/s, median %u ns",
		       t->names[m->method], m->ns, m->rate, m->median_ns);
		/* MUTED_CALLERS: its share of each caller's self time then */
		for (uint32_t k = 0; k < m->ncallers && k < RVA_MUTED_CALLERS; k++)
			printf("%s%.1f %% of %s", k ? ", " : "; ", m->share_ppm[k] / 1e4,
			       t->names[m->caller[k]]);
		printf(")\n");
	}
	if (t->lost_spans)
		printf("lost:     %" PRIu64 " span(s) of %.3f us in all, the first %" PRId64
		       " .. %" PRId64 " (the tracer had no spare ring at a capture)\n",
		       t->lost_spans, usec(t, t->lost_ns), t->lost_first_start, t->lost_first_end);
	if (t->has_anomaly)
		printf("anomaly:  %s at %" PRId64 "\n", t->anomaly_name ? t->anomaly_name : "",
		       t->anomaly_ns);
	if (strcmp(t->format, "rearview-capture") == 0)
		printf("checksum: %s\n",
		       t->checksum == RVA_CHECKSUM_VERIFIED ? "verified (XXH3-64)" : "none");
	if (t->nframes) {
		size_t late = 0;
		for (size_t i = 0; i < t->nframes; i++)
			late += t->frames[i].late != 0;
		printf("frames:   %zu, %zu late\n", t->nframes, late);
	}
	if (t->warning)
		printf("warning:  %s\n", t->warning);
	printf("threads:  %zu\n", t->nthreads);
	for (size_t i = 0; i < t->nthreads; i++)
		printf("  [%zu] pid %u tid %u %s: %zu calls\n", i, t->threads[i].pid,
		       t->threads[i].tid, t->threads[i].name ? t->threads[i].name : "",
		       t->threads[i].ncalls);
	rva_trace_free(t);
	return 0;
}

/* --match NAME[,NAME...][@MIN_MS] */
static int print_matches(const rva_trace *t, const char *spec)
{
	char buf[1024];
	const char *names[32];
	size_t n = 0;
	double min_ms = 0;
	if (strlen(spec) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", spec);
	char *at = strrchr(buf, '@');
	if (at) {
		*at = '\0';
		if (parse_num(at + 1, &min_ms) < 0)
			return -1;
	}
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok && n < 32; tok = strtok_r(NULL, ",", &save))
		names[n++] = tok;
	if (n == 0)
		return -1;
	rva_pattern p = {names, n, t->weighted ? (int64_t)min_ms : (int64_t)(min_ms * 1e6)};
	rva_match m[20];
	size_t total = rva_pattern_match(t, &p, m, 20);
	printf("\npattern %s: %zu matching calls\n", spec, total);
	for (size_t i = 0; i < total && i < 20; i++) {
		const rva_call *c = &t->threads[m[i].thread].calls[m[i].call];
		printf("  thread %u  at %" PRId64 "  %.3f %s  %s\n", t->threads[m[i].thread].tid,
		       c->start, usec(t, c->end - c->start), t->weighted ? "samples" : "us",
		       t->names[c->method]);
	}
	return 0;
}

/* What `summary` prints, from the model or from a streaming summary. */
typedef struct sumview {
	const rva_trace *t;	/* the analysed trace (sliced to the window or not) */
	const rva_trace *full;	/* the anomaly and the threads */
	const rva_mstat *st;	/* of t */
	const rva_chains *ch;	/* of t */
	const uint32_t *achain; /* streaming: the chain at the anomaly on thread
				 * 0; NULL: rva_chain_at on full */
	size_t adepth;
	const char *match; /* --match on t, or NULL */
} sumview;

static void print_chain_at(const rva_trace *full, size_t th, const uint32_t *chain, size_t d)
{
	printf("  thread %u  sig %016" PRIx64 "\n", full->threads[th].tid,
	       rva_signature(full, chain, d));
	for (size_t k = 0; k < d; k++)
		printf("    %*s%s\n", (int)k, "", full->names[chain[k]]);
}

/* The text summary; 2 for a bad --match pattern, else 0. */
static int print_summary(const sumview *v, size_t ntop)
{
	const rva_trace *t = v->t, *full = v->full;
	uint32_t *ids = calloc(ntop + 1, sizeof(*ids));
	if (!ids) {
		fprintf(stderr, "rvtrace: out of memory\n");
		return 1;
	}
	size_t n = rva_top_self(t, v->st, ids, ntop);
	int rc = 0;
	const char *unit = t->weighted ? "samples" : "us";
	printf("%s, %zu threads, %zu methods, span %.3f %s, %" PRIu64 " dropped\n", t->format,
	       t->nthreads, t->nmethods, usec(t, t->end - t->start), unit, t->dropped);
	print_note(full, "");
	putchar('\n');
	/* Two clocks (Android dual) or off-CPU records (a capture through
	 * rearviewd): thread-CPU columns beside the wall ones; with off-CPU
	 * records also the inclusive time spent off the CPU. */
	int offcol = t->has_cpu && rva_trace_has_offcpu(full);
	if (offcol)
		printf("%10s %14s %14s %14s %14s %14s  %s\n", "calls", "incl", "self",
		       "on_cpu_incl", "on_cpu_self", "off_cpu_incl", "method");
	else if (t->has_cpu)
		printf("%10s %14s %14s %14s %14s  %s\n", "calls", "incl", "self", "cpu_incl",
		       "cpu_self", "method");
	else
		printf("%10s %14s %14s  %s\n", "calls", "incl", "self", "method");
	int est = 0;
	for (size_t i = 0; i < n; i++) {
		const rva_mstat *m = &v->st[ids[i]];
		/* A muted function with no call left in the trace: "muted" and
		 * its estimated self time; an estimate is marked "~". */
		if (m->calls)
			printf("%10" PRIu64, m->calls);
		else
			printf("%10s", "muted");
		printf(" %14.3f %s%13.3f", usec(t, m->incl), m->est_self ? "~" : " ",
		       usec(t, m->self));
		est |= m->est_self != 0;
		if (t->has_cpu)
			printf(" %14.3f %14.3f", usec(t, m->cpu_incl), usec(t, m->cpu_self));
		if (offcol)
			printf(" %14.3f", usec(t, m->incl - m->cpu_incl));
		printf("  %s\n", t->names[ids[i]]);
	}
	if (est)
		printf("%s\n", RVA_EST_LINE);
	free(ids);
	if (rva_trace_has_offcpu(full) && !full->weighted) {
		rva_offcpu_reason r[RVA_OFF_NREASONS - 1];
		size_t nr = rva_offcpu_reasons(full, r);
		printf("\noff-CPU by reason:\n");
		for (size_t i = 0; i < nr; i++)
			printf("  %14.3f us  %s\n", (double)r[i].ns / 1e3, r[i].name);
	}
	if (full->has_anomaly) {
		printf("\nanomaly %s at %" PRId64 "; chains running then:\n",
		       full->anomaly_name ? full->anomaly_name : "", full->anomaly_ns);
		if (v->achain) {
			if (v->adepth && full->nthreads)
				print_chain_at(full, 0, v->achain,
					       v->adepth > 256 ? 256 : v->adepth);
		} else {
			for (size_t th = 0; th < full->nthreads; th++) {
				uint32_t chain[256];
				size_t d = rva_chain_at(full, th, full->anomaly_ns, chain, 256);
				if (d)
					print_chain_at(full, th, chain, d > 256 ? 256 : d);
			}
		}
	}
	if (v->match && print_matches(t, v->match) < 0) {
		fprintf(stderr, "rvtrace: bad --match pattern '%s'\n", v->match);
		rc = 2;
	}
	printf("\nchains by self time:\n");
	for (size_t i = 0; i < v->ch->n && i < ntop; i++) {
		const rva_chain *k = &v->ch->v[i];
		printf("  %016" PRIx64 " %14.3f %s  ", k->signature, usec(t, k->self), unit);
		if (k->depth > k->nmethods)
			printf("[%zu outer frames truncated];", k->depth - k->nmethods);
		for (size_t d = 0; d < k->nmethods; d++)
			printf("%s%s", d ? ";" : "", t->names[k->methods[d]]);
		putchar('\n');
	}
	if (rva_locks_print(stdout, full, ntop) == -ENOMEM) {
		fprintf(stderr, "rvtrace: out of memory\n");
		rc = 1;
	}
	return rc;
}

/* `summary` of a Rearview capture held in buf, summarised while decoded
 * (rva_capture_summarize).  Returns the exit status, or -1 when the model
 * is needed after all (--json on a capture with no anomaly record whose
 * chain at the end the summary could not give). */
static int summary_streamed(const char *path, const uint8_t *buf, size_t len, int json, size_t ntop)
{
	rva_error err = {{0}};
	rva_summary sm;
	bar b;
	rva_progress p;
	bar_start(&b, &p);
	int rc = rva_capture_summarize_progress(buf, len, &sm, &err, &p);
	bar_end(&b);
	if (rc < 0) {
		fprintf(stderr, "rvtrace: %s: %s\n", path, err.msg[0] ? err.msg : strerror(-rc));
		return 1;
	}
	if (json && !sm.trace->has_anomaly && !sm.end_chain) {
		rva_summary_release(&sm);
		return -1;
	}
	if (json) {
		rc = rva_summary_json_from(stdout, &sm, ntop) < 0;
		if (rc)
			fprintf(stderr, "rvtrace: cannot write the summary\n");
	} else {
		rva_chains ch = {0};
		if (rva_chains_from_tree(sm.trace, &sm.tree, ntop, &ch) < 0) {
			fprintf(stderr, "rvtrace: out of memory\n");
			rc = 1;
		} else {
			static const uint32_t none[1];
			sumview v = {sm.trace,
				     sm.trace,
				     sm.stats,
				     &ch,
				     sm.anomaly_chain ? sm.anomaly_chain : none,
				     sm.anomaly_depth,
				     NULL};
			rc = print_summary(&v, ntop);
		}
		rva_chains_release(&ch);
	}
	rva_summary_release(&sm);
	return rc;
}

static int cmd_summary(int argc, char **argv)
{
	static const struct option opts[] = {{"top", required_argument, NULL, 'n'},
					     {"window", required_argument, NULL, 'w'},
					     {"json", no_argument, NULL, 'j'},
					     {"match", required_argument, NULL, 'm'},
					     {"full", no_argument, NULL, 'F'},
					     {"help", no_argument, NULL, 'h'},
					     FILTER_OPTS,
					     {0}};
	double top = 20, window = -1;
	int json = 0, full_model = 0, c;
	const char *match = NULL;
	while ((c = getopt_long(argc, argv, "n:w:jm:Fh", opts, NULL)) != -1) {
		if (c >= OPT_FILTER) {
			if (filter_opt(c, optarg))
				return 2;
			continue;
		}
		if (c == 'm') {
			match = optarg;
			continue;
		}
		if (c == 'n' && parse_num(optarg, &top) == 0)
			continue;
		if (c == 'w' && parse_num(optarg, &window) == 0)
			continue;
		if (c == 'j' || c == 'F') {
			*(c == 'j' ? &json : &full_model) = 1;
			continue;
		}
		return die_usage(usage_summary);
	}
	if (optind + 1 != argc)
		return die_usage(usage_summary);
	size_t ntop = (size_t)top;
	const char *path = argv[optind];
	rva_error err = {{0}};
	uint8_t *buf;
	size_t len;
	if (rva_file_read(path, &buf, &len, &err) < 0) {
		fprintf(stderr, "rvtrace: %s: %s\n", path, err.msg);
		return 1;
	}
	/* Off-CPU records need the model (the on/off-CPU split is per call),
	 * and so do filters. */
	if (!full_model && window < 0 && !match && !filtering() &&
	    rva_detect(buf, len) == RVA_FMT_CAPTURE && !rva_capture_has_offcpu(buf, len)) {
		int rc = summary_streamed(path, buf, len, json, ntop);
		if (rc >= 0) {
			free(buf);
			return fflush(stdout) != 0 ? 1 : rc;
		}
	}
	rva_trace *full, *t;
	bar b;
	rva_progress p;
	bar_start(&b, &p);
	int rc = rva_import_progress(buf, len, &full, &err, &p);
	bar_end(&b);
	free(buf);
	if (rc < 0) {
		fprintf(stderr, "rvtrace: %s: %s\n", path, err.msg[0] ? err.msg : strerror(-rc));
		return 1;
	}
	if (apply_filter(path, full) < 0) {
		rva_trace_free(full);
		return 1;
	}
	t = full;
	int64_t at = full->has_anomaly ? full->anomaly_ns : full->end;
	int64_t w = window < 0 ? -1 : full->weighted ? (int64_t)window : (int64_t)(window * 1e6);
	if (json) {
		rc = rva_summary_json(stdout, full, w, ntop) < 0;
		if (rc)
			fprintf(stderr, "rvtrace: cannot write the summary\n");
		rva_trace_free(full);
		return fflush(stdout) != 0 ? 1 : rc;
	}
	if (w >= 0) {
		t = rva_trace_slice(full, at - w, at + 1);
		if (!t) {
			fprintf(stderr, "rvtrace: out of memory\n");
			rva_trace_free(full);
			return 1;
		}
	}
	rva_mstat *st = NULL;
	rva_chains ch = {0};
	if (rva_method_stats(t, &st) < 0 || rva_chains_collect(t, ntop, &ch) < 0) {
		fprintf(stderr, "rvtrace: out of memory\n");
		rc = 1;
	} else {
		sumview v = {t, full, st, &ch, NULL, 0, match};
		rc = print_summary(&v, ntop);
	}
	free(st);
	rva_chains_release(&ch);
	if (t != full)
		rva_trace_free(t);
	rva_trace_free(full);
	if (fflush(stdout) != 0)
		return 1;
	return rc;
}

/* Bottom-up view of one method; frees t. */
static int print_callers(rva_trace *t, const char *name)
{
	int64_t m = rva_method_find(t, name);
	if (m < 0) {
		fprintf(stderr, "rvtrace: no method named '%s'\n", name);
		rva_trace_free(t);
		return 1;
	}
	rva_caller *v;
	int64_t n = rva_callers(t, (uint32_t)m, &v);
	if (n < 0) {
		fprintf(stderr, "rvtrace: out of memory\n");
		rva_trace_free(t);
		return 1;
	}
	printf("callers of %s:\n%10s %14s  %s\n", name, "calls", t->weighted ? "incl" : "incl_us",
	       "caller");
	for (int64_t i = 0; i < n; i++)
		printf("%10" PRIu64 " %14.3f  %s\n", v[i].calls, usec(t, v[i].incl),
		       v[i].caller == UINT32_MAX ? "(root)" : t->names[v[i].caller]);
	free(v);
	rva_trace_free(t);
	return 0;
}

static int cmd_tree(int argc, char **argv)
{
	static const struct option opts[] = {{"threshold", required_argument, NULL, 't'},
					     {"thread", required_argument, NULL, 'T'},
					     {"callers", required_argument, NULL, 'c'},
					     {"help", no_argument, NULL, 'h'},
					     FILTER_OPTS,
					     {0}};
	double pct = 1, thread = -1;
	int c;
	const char *callers = NULL;
	while ((c = getopt_long(argc, argv, "t:T:c:h", opts, NULL)) != -1) {
		if (c >= OPT_FILTER) {
			if (filter_opt(c, optarg))
				return 2;
			continue;
		}
		if (c == 'c') {
			callers = optarg;
			continue;
		}
		if (c == 't' && parse_num(optarg, &pct) == 0)
			continue;
		if (c == 'T' && parse_num(optarg, &thread) == 0)
			continue;
		return die_usage(usage_tree);
	}
	if (optind + 1 != argc)
		return die_usage(usage_tree);
	rva_trace *t;
	if (load(argv[optind], &t) < 0)
		return 1;
	if (callers)
		return print_callers(t, callers);
	rva_tree tr;
	int rc = rva_tree_build(t, thread < 0 ? SIZE_MAX : (size_t)thread, &tr);
	if (rc == 0) {
		print_note(t, "");
		rc = rva_tree_print(stdout, t, &tr, pct);
		rva_tree_release(&tr);
	}
	rva_trace_free(t);
	if (rc < 0)
		fprintf(stderr, "rvtrace: %s\n", strerror(-rc));
	return rc < 0;
}

static int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {{"output-fields", required_argument, NULL, 'f'},
					     {"help", no_argument, NULL, 'h'},
					     FILTER_OPTS,
					     {0}};
	unsigned fields = RVA_REPLAY_DURATION | RVA_REPLAY_TID;
	int c;
	while ((c = getopt_long(argc, argv, "f:F:N:H:D:t:h", opts, NULL)) != -1) {
		c = filter_short(c);
		if (c >= OPT_FILTER) {
			if (filter_opt(c, optarg))
				return 2;
			continue;
		}
		if (c != 'f')
			return die_usage(usage_replay);
		char buf[256];
		char *save = NULL;
		if (strlen(optarg) >= sizeof(buf))
			return die_usage(usage_replay);
		snprintf(buf, sizeof(buf), "%s", optarg);
		fields = 0;
		for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (strcmp(tok, "duration") == 0)
				fields |= RVA_REPLAY_DURATION;
			else if (strcmp(tok, "tid") == 0)
				fields |= RVA_REPLAY_TID;
			else if (strcmp(tok, "elapsed") == 0)
				fields |= RVA_REPLAY_ELAPSED;
			else if (strcmp(tok, "none") != 0) {
				fprintf(stderr,
					"rvtrace: unknown field '%s' (duration, tid, elapsed, "
					"none)\n",
					tok);
				return 2;
			}
		}
	}
	if (optind + 1 != argc)
		return die_usage(usage_replay);
	rva_trace *t;
	if (load(argv[optind], &t) < 0)
		return 1;
	print_note(t, "# ");
	int rc = rva_replay_print(stdout, t, fields);
	rva_trace_free(t);
	if (rc == 0 && fflush(stdout) != 0)
		rc = -EIO;
	if (rc < 0)
		fprintf(stderr, "rvtrace: %s\n", strerror(-rc));
	return rc < 0;
}

/* -s KEYS into keys[0..*n) (at most max). 0, or -1 (said on stderr). */
static int parse_sort(const char *arg, int *keys, size_t *n, size_t max)
{
	static const struct {
		const char *name;
		int key;
	} names[] = {{"total", RVA_SORT_TOTAL}, {"self", RVA_SORT_SELF}, {"calls", RVA_SORT_CALLS},
		     {"call", RVA_SORT_CALLS},	{"avg", RVA_SORT_AVG},	 {"min", RVA_SORT_MIN},
		     {"max", RVA_SORT_MAX},	{"func", RVA_SORT_NAME}, {"name", RVA_SORT_NAME}};
	char buf[256];
	char *save = NULL;
	*n = 0;
	if (strlen(arg) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i = 0;
		while (i < sizeof(names) / sizeof(names[0]) && strcmp(tok, names[i].name) != 0)
			i++;
		if (i == sizeof(names) / sizeof(names[0])) {
			fprintf(stderr,
				"rvtrace: unknown sort key '%s' (total, self, calls, avg, min, "
				"max, "
				"func)\n",
				tok);
			return -1;
		}
		if (*n == max)
			goto bad;
		keys[(*n)++] = names[i].key;
	}
	if (*n)
		return 0;
bad:
	fprintf(stderr, "rvtrace: --sort '%.64s': give 1 to %zu keys, comma-separated\n", arg, max);
	return -1;
}

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {{"sort", required_argument, NULL, 's'},
					     {"avg-self", no_argument, NULL, 'S'},
					     {"threads", no_argument, NULL, 'T'},
					     {"top", required_argument, NULL, 'n'},
					     {"help", no_argument, NULL, 'h'},
					     FILTER_OPTS,
					     {0}};
	int keys[16] = {RVA_SORT_TOTAL}, by_self = 0, threads = 0, c;
	size_t nkeys = 1;
	uint64_t top = 0;
	while ((c = getopt_long(argc, argv, "s:n:F:N:H:D:t:h", opts, NULL)) != -1) {
		c = filter_short(c);
		if (c >= OPT_FILTER) {
			if (filter_opt(c, optarg))
				return 2;
		} else if (c == 's') {
			if (parse_sort(optarg, keys, &nkeys, sizeof(keys) / sizeof(keys[0])) < 0)
				return 2;
		} else if (c == 'S') {
			by_self = 1;
		} else if (c == 'T') {
			threads = 1;
		} else if (c == 'n' && parse_uint(optarg, 0, SIZE_MAX, &top) == 0) {
			continue;
		} else {
			return die_usage(usage_report);
		}
	}
	if (optind + 1 != argc)
		return die_usage(usage_report);
	rva_trace *t;
	if (load(argv[optind], &t) < 0)
		return 1;
	print_note(t, "# ");
	int rc = 0;
	if (!threads) {
		rc = rva_report_print(stdout, t, SIZE_MAX, keys, nkeys, by_self, (size_t)top);
	} else {
		for (size_t i = 0; i < t->nthreads && rc == 0; i++) {
			const rva_thread *th = &t->threads[i];
			printf("%s# thread [%zu] pid %u tid %u%s%s: %zu calls\n", i ? "\n" : "", i,
			       th->pid, th->tid, th->name ? " " : "", th->name ? th->name : "",
			       th->ncalls);
			rc = rva_report_print(stdout, t, i, keys, nkeys, by_self, (size_t)top);
		}
	}
	rva_trace_free(t);
	if (rc == 0 && fflush(stdout) != 0)
		rc = -EIO;
	if (rc < 0)
		fprintf(stderr, "rvtrace: %s\n", strerror(-rc));
	return rc < 0;
}

/* The method FUNC names in t: its exact name, else the one method a
 * pattern (as --filter's) selects; -1 after saying why not on stderr. */
static int64_t pick_method(const rva_trace *t, const char *func)
{
	int64_t m = rva_method_find(t, func);
	if (m >= 0)
		return m;
	rva_filter *f = rva_filter_new();
	rva_error err = {{0}};
	if (!f || rva_filter_add(f, RVA_FILTER_INCLUDE, func, &err) < 0) {
		fprintf(stderr, "rvtrace: %s\n", err.msg[0] ? err.msg : "out of memory");
		rva_filter_free(f);
		return -1;
	}
	size_t n = 0;
	for (size_t i = 0; i < t->nmethods; i++)
		if (rva_filter_matches(f, RVA_FILTER_INCLUDE, t->names[i]) && n++ == 0)
			m = (int64_t)i;
	if (n == 0) {
		fprintf(stderr, "rvtrace: no method is named '%s' or matches it\n", func);
		suggest(t, func);
	} else if (n > 1) {
		fprintf(stderr, "rvtrace: more than one method matches '%s'; give one exactly:\n",
			func);
		for (size_t i = 0, k = 0; i < t->nmethods && k < 10; i++)
			if (rva_filter_matches(f, RVA_FILTER_INCLUDE, t->names[i]) && ++k)
				fprintf(stderr, "  %s\n", t->names[i]);
	}
	if (n != 1)
		m = -1;
	rva_filter_free(f);
	return m;
}

static int cmd_graph(int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, FILTER_OPTS, {0}};
	int c;
	uint64_t depth = 0; /* the graph's own: levels, FUNC the first */
	while ((c = getopt_long(argc, argv, "F:N:H:D:t:h", opts, NULL)) != -1) {
		c = filter_short(c);
		if (c == OPT_DEPTH) {
			if (parse_uint(optarg, 1, UINT64_MAX, &depth) == 0)
				continue;
			fprintf(stderr,
				"rvtrace: --depth '%s': not a whole number from 1 to %" PRIu64 "\n",
				optarg, UINT64_MAX);
			return 2;
		}
		if (c < OPT_FILTER)
			return die_usage(usage_graph);
		if (filter_opt(c, optarg))
			return 2;
	}
	if (optind + 1 != argc && optind + 2 != argc)
		return die_usage(usage_graph);
	const char *func = optind + 2 == argc ? argv[optind] : NULL;
	rva_trace *t;
	if (load(argv[argc - 1], &t) < 0)
		return 1;
	int64_t m = func ? pick_method(t, func) : (int64_t)UINT32_MAX;
	if (m < 0) {
		rva_trace_free(t);
		return 1;
	}
	/* Levels under FUNC (the roots without one): -D, at most 512. */
	size_t levels = RVA_EXPORT_MAX_DEPTH;
	if (depth && depth - (func != NULL) < levels)
		levels = (size_t)(depth - (func != NULL));
	rva_focus fc;
	int rc = rva_focus_build(t, (uint32_t)m, levels, &fc);
	if (rc == 0) {
		print_note(t, "# ");
		rc = rva_focus_print(stdout, t, &fc);
		rva_focus_release(&fc);
	}
	rva_trace_free(t);
	if (rc == 0 && fflush(stdout) != 0)
		rc = -EIO;
	if (rc < 0)
		fprintf(stderr, "rvtrace: %s\n", strerror(-rc));
	return rc < 0;
}

static FILE *open_out(const char *path)
{
	if (!path || strcmp(path, "-") == 0)
		return stdout;
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "rvtrace: %s: %s\n", path, strerror(errno));
	return f;
}

static int close_out(FILE *f)
{
	if (f == stdout)
		return fflush(f) == 0 ? 0 : -EIO;
	return fclose(f) == 0 ? 0 : -EIO;
}

struct export_job {
	const char *fmt, *title;
	const rva_trace *t;
};

static int export_to(FILE *f, const struct export_job *j)
{
	const char *fmt = j->fmt, *title = j->title;
	const rva_trace *t = j->t;
	int rc;
	if (strcmp(fmt, "folded") == 0)
		rc = rva_export_folded(f, t);
	else if (strcmp(fmt, "chrome") == 0)
		rc = rva_export_chrome(f, t);
	else if (strcmp(fmt, "nanoscope") == 0)
		rc = rva_export_nanoscope(f, t, 0);
	else if (strcmp(fmt, "speedscope") == 0)
		rc = rva_export_speedscope(f, t);
	else if (strcmp(fmt, "android") == 0)
		rc = rva_export_android(f, t);
	else if (strcmp(fmt, "perfetto") == 0)
		rc = rva_export_perfetto(f, t);
	else if (strcmp(fmt, "svg") == 0)
		rc = rva_export_svg(f, t, title);
	else if (strcmp(fmt, "pprof") == 0)
		rc = rva_export_pprof(f, t);
	else
		rc = -EINVAL;
	if (rc == 0 && fflush(f) != 0)
		rc = -EIO;
	/* An exporter reports a failed write as -EIO; the stream's errno says
	 * why (EFBIG, ENOSPC, …), which is what the user needs to read. */
	if (rc == -EIO && ferror(f) && errno)
		rc = -errno;
	return rc;
}

/* rvc_write_file_atomic_fn() filler: the export into the temporary file. */
static int export_fill(int fd, void *arg)
{
	int dfd = dup(fd);
	FILE *f = dfd < 0 ? NULL : fdopen(dfd, "w");
	if (!f) {
		int rc = -errno;
		if (dfd >= 0)
			close(dfd);
		return rc;
	}
	errno = 0;
	int rc = export_to(f, arg);
	if (fclose(f) != 0 && rc == 0)
		rc = errno ? -errno : -EIO;
	return rc;
}

static int known_format(const char *fmt)
{
	static const char *const fmts[] = {"folded",  "chrome",	  "nanoscope", "speedscope",
					   "android", "perfetto", "svg",       "pprof"};
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
		if (strcmp(fmt, fmts[i]) == 0)
			return 1;
	return 0;
}

/*
 * Writes the export to outp: stdout for NULL or "-"; a FIFO, terminal or
 * other non-regular file is written through; a regular file (or a new name)
 * appears only complete — a failed export leaves no file, and an old one
 * as it was.
 */
static int do_export(const char *fmt, const char *in, const char *outp, const char *title)
{
	if (!known_format(fmt)) {
		fprintf(stderr, "rvtrace: unknown export format '%s'\n", fmt);
		return 2;
	}
	rva_trace *t;
	if (load(in, &t) < 0)
		return 1;
	struct export_job j = {fmt, title ? title : in, t};
	struct stat st;
	int rc;
	if (!outp || strcmp(outp, "-") == 0 || (stat(outp, &st) == 0 && !S_ISREG(st.st_mode))) {
		FILE *f = open_out(outp);
		if (!f) {
			rva_trace_free(t);
			return 1;
		}
		errno = 0;
		rc = export_to(f, &j);
		if (close_out(f) < 0 && rc == 0)
			rc = -EIO;
	} else {
		rc = rvc_write_file_atomic_fn(outp, 0644, export_fill, &j);
	}
	rva_trace_free(t);
	if (rc < 0)
		fprintf(stderr, "rvtrace: export to %s failed: %s\n",
			outp && strcmp(outp, "-") ? outp : "standard output", strerror(-rc));
	return rc < 0;
}

static double pct_of(int64_t a, int64_t b)
{
	return b > 0 ? 100.0 * (double)a / (double)b : 0;
}

static int cmd_why(int argc, char **argv)
{
	static const char *const reason[RVA_OFF_NREASONS] = {"", "preempted", "blocked"};
	int64_t incl = 0, off = 0, unknown = 0, by[RVA_OFF_NREASONS] = {0};
	uint64_t calls = 0;
	int have = 0;
	rva_trace *t;

	int rc0, at = filters_only(argc, argv, usage_why, &rc0);
	if (at < 0)
		return rc0;
	if (at + 2 != argc)
		return die_usage(usage_why);
	argv += at - 1;
	if (load(argv[2], &t) < 0)
		return 1;
	int64_t m = rva_method_find(t, argv[1]);
	if (m < 0) {
		fprintf(stderr, "rvtrace: no method named '%s' in %s\n", argv[1], argv[2]);
		rva_trace_free(t);
		return 1;
	}
	for (size_t i = 0; i < t->nthreads; i++) {
		const rva_thread *th = &t->threads[i];
		int64_t until = INT64_MIN; /* end of the outermost open call of m */

		have |= th->noffcpu > 0 || th->counters;
		for (size_t k = 0; k < th->ncalls; k++) {
			const rva_call *c = &th->calls[k];
			int64_t r[RVA_OFF_NREASONS];

			if (c->method != (uint32_t)m || c->start < until)
				continue;
			until = c->end;
			calls++;
			incl += c->end - c->start;
			off += rva_offcpu_overlap(th, c->start, c->end, r);
			unknown += rva_offcpu_unknown(th, c->start, c->end);
			for (int j = 1; j < RVA_OFF_NREASONS; j++)
				by[j] += r[j];
		}
	}
	printf("method: %s\ncalls: %" PRIu64 "\ninclusive: %.3f\n", argv[1], calls, usec(t, incl));
	if (!have) {
		printf("no off-CPU records: the capture was not taken through rearviewd with "
		       "perf events\n");
		int rc = rva_locks_why(stdout, t, (uint32_t)m);
		rva_trace_free(t);
		return rc < 0;
	}
	/* Before the oldest switch the daemon kept (its ring lost older
	 * ones) the records say nothing: that time is not called on-CPU. */
	printf("on-CPU: %.3f (%.1f%%)\noff-CPU: %.3f (%.1f%%)\n", usec(t, incl - off - unknown),
	       pct_of(incl - off - unknown, incl), usec(t, off), pct_of(off, incl));
	for (int j = 1; j < RVA_OFF_NREASONS; j++)
		printf("  %s: %.3f (%.1f%%)\n", reason[j], usec(t, by[j]), pct_of(by[j], incl));
	if (unknown)
		printf("not known (before the oldest switch kept): %.3f (%.1f%%)\n",
		       usec(t, unknown), pct_of(unknown, incl));
	for (size_t i = 0; i < t->nthreads; i++) {
		const rva_tcounters *k = t->threads[i].counters;

		if (!k)
			continue;
		printf("thread %" PRIu32 ": cpu %.3f, faults minor %" PRIu64 " major %" PRIu64
		       ", switches %" PRIu64 " (over %.3f); in the last %.3f: voluntary %" PRIu64
		       " involuntary %" PRIu64 "\n",
		       t->threads[i].tid, (double)k->task_clock_ns / 1e3, k->minor_faults,
		       k->major_faults, k->switches, (double)(k->at - k->since) / 1e3,
		       (double)(k->at - k->window) / 1e3, k->voluntary, k->involuntary);
	}
	int rc = rva_locks_why(stdout, t, (uint32_t)m);
	rva_trace_free(t);
	return rc < 0;
}

static int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {{"format", required_argument, NULL, 'f'},
					     {"output", required_argument, NULL, 'o'},
					     {"help", no_argument, NULL, 'h'},
					     FILTER_OPTS,
					     {0}};
	const char *fmt = NULL, *out = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
		if (c >= OPT_FILTER) {
			if (filter_opt(c, optarg))
				return 2;
		} else if (c == 'f')
			fmt = optarg;
		else if (c == 'o')
			out = optarg;
		else
			return die_usage(usage_export);
	}
	if (!fmt || optind + 1 != argc)
		return die_usage(usage_export);
	return do_export(fmt, argv[optind], out, NULL);
}

static int cmd_flamegraph(int argc, char **argv)
{
	static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
					     {"title", required_argument, NULL, 't'},
					     {"help", no_argument, NULL, 'h'},
					     FILTER_OPTS,
					     {0}};
	const char *out = NULL, *title = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "o:t:h", opts, NULL)) != -1) {
		if (c >= OPT_FILTER) {
			if (filter_opt(c, optarg))
				return 2;
		} else if (c == 'o')
			out = optarg;
		else if (c == 't')
			title = optarg;
		else
			return die_usage(usage_flame);
	}
	if (optind + 1 != argc)
		return die_usage(usage_flame);
	return do_export("svg", argv[optind], out, title);
}

/* Loads files[0..n) into one trace. */
static rva_trace *load_set(char **files, int n)
{
	rva_trace *all = NULL;
	for (int i = 0; i < n; i++) {
		rva_trace *t;
		if (load(files[i], &t) < 0) {
			rva_trace_free(all);
			return NULL;
		}
		if (!all) {
			all = t;
			continue;
		}
		int rc = rva_trace_append(all, t);
		rva_trace_free(t);
		if (rc < 0) {
			fprintf(stderr, "rvtrace: %s: %s\n", files[i],
				rc == -EINVAL ? "cannot mix sample weights and times"
					      : strerror(-rc));
			rva_trace_free(all);
			return NULL;
		}
	}
	return all;
}

static int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {{"top", required_argument, NULL, 'n'},
					     {"help", no_argument, NULL, 'h'},
					     FILTER_OPTS,
					     {0}};
	double top = 30;
	int c;
	while ((c = getopt_long(argc, argv, "+n:h", opts, NULL)) != -1) {
		if (c >= OPT_FILTER) {
			if (filter_opt(c, optarg))
				return 2;
			continue;
		}
		if (c == 'n' && parse_num(optarg, &top) == 0)
			continue;
		return die_usage(usage_diff);
	}
	int sep = -1;
	for (int i = optind; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			sep = i;
	if (sep < 0 && optind + 2 == argc)
		sep = optind + 1; /* A B: an implicit separator between them */
	else if (sep < 0 || sep == optind || sep == argc - 1)
		return die_usage(usage_diff);
	int b0 = strcmp(argv[sep], "--") == 0 ? sep + 1 : sep;
	rva_trace *a = load_set(argv + optind, sep - optind);
	rva_trace *b = a ? load_set(argv + b0, argc - b0) : NULL;
	if (!a || !b) {
		rva_trace_free(a);
		return 1;
	}
	rva_delta *v;
	int64_t n = rva_diff(a, b, &v);
	if (n < 0) {
		fprintf(stderr, "rvtrace: out of memory\n");
	} else {
		printf("%14s %14s %14s  %s\n", "self_a", "self_b", "delta", "method");
		for (int64_t i = 0; i < n && i < (int64_t)top; i++)
			printf("%14.3f %14.3f %+14.3f  %s\n", usec(a, v[i].self_a),
			       usec(b, v[i].self_b), usec(a, v[i].delta), v[i].name);
		free(v);
	}
	rva_trace_free(a);
	rva_trace_free(b);
	return n < 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return die_usage(usage_main);
	/* --quiet / -q anywhere before a `--` (diff's separator): no bar;
	 * --progress: the bar on any stderr. */
	int n = 1;
	for (int i = 1, rest = 0; i < argc; i++) {
		rest |= strcmp(argv[i], "--") == 0;
		if (!rest && (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0))
			quiet = 1;
		else if (!rest && strcmp(argv[i], "--progress") == 0)
			progress = 1;
		else
			argv[n++] = argv[i];
	}
	argv[n] = NULL;
	argc = n;
	if (argc < 2)
		return die_usage(usage_main);
	const char *cmd = argv[1];
	static const struct {
		const char *name;
		int (*fn)(int, char **);
		const char *usage;
	} cmds[] = {
		{"info", cmd_info, usage_info},
		{"summary", cmd_summary, usage_summary},
		{"tree", cmd_tree, usage_tree},
		{"replay", cmd_replay, usage_replay},
		{"report", cmd_report, usage_report},
		{"graph", cmd_graph, usage_graph},
		{"flamegraph", cmd_flamegraph, usage_flame},
		{"export", cmd_export, usage_export},
		{"diff", cmd_diff, usage_diff},
		{"hotlist", rvtrace_cmd_hotlist, rvtrace_usage_hotlist},
		{"why", cmd_why, usage_why},
	};
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0)
		return rvc_print_version("rvtrace");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(cmd, cmds[i].name) == 0) {
			if (want_help(argc - 1, argv + 1)) {
				fputs(cmds[i].usage, stdout);
				return 0;
			}
			int rc = cmds[i].fn(argc - 1, argv + 1);
			rva_filter_free(filter);
			return rc;
		}
	fprintf(stderr, "rvtrace: unknown command '%s'\n\n", cmd);
	return die_usage(usage_main);
}
