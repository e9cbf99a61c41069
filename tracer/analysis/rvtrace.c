/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvtrace.c — the rvtrace command-line tool: info, summary, tree,
 * flamegraph, export and diff over any input librvanalysis imports.
 *
 * Output goes to stdout (or -o FILE); errors to stderr with exit status 1;
 * usage errors exit 2.  All the work is in the library; this file only
 * parses options and prints.
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
	"  flamegraph FILE    interactive SVG flame graph\n"
	"  export FILE        convert (--format F -o OUT)\n"
	"  diff A B           methods whose self time changed, largest first\n"
	"  hotlist FILE...    hot, short methods: a never-list for rvcc\n"
	"  why METHOD FILE    a method's time split into on-CPU and off-CPU, by reason\n"
	"\n"
	"`rvtrace COMMAND --help` describes each command; `rvtrace --version`\n"
	"prints the version.  On a terminal, work\n"
	"taking over a second shows a progress bar on stderr; --quiet (anywhere\n"
	"before a `--`) turns it off, --progress shows it on any stderr.\n";

static const char usage_info[] =
	"usage: rvtrace info FILE\n"
	"\n"
	"Print the detected format, the time span, the thread list with call\n"
	"counts, the number of distinct methods, of events dropped as damage\n"
	"(unmatched exits, torn slots, malformed lines) and of frames repaired\n"
	"(a capture's exits with no entry, given an \"(unknown caller)\" frame),\n"
	"and for a capture any span in which the tracer lost events.\n";

static const char usage_summary[] =
	"usage: rvtrace summary [--top N] [--window MS] [--json] [--match P] [--full] FILE\n"
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
	"aggregate-only inputs.\n";

static const char usage_why[] =
	"usage: rvtrace why METHOD FILE\n"
	"\n"
	"Why METHOD (exact name) took its time: its calls' inclusive time\n"
	"(recursion counted once) split into on-CPU and off-CPU time, the\n"
	"off-CPU time by reason (preempted: switched out while runnable;\n"
	"blocked: sleeping on a pipe, futex, I/O or a page fault), and the\n"
	"counters of its threads (CPU time, minor and major page faults,\n"
	"voluntary and involuntary context switches) — from rearviewd's OFFCPU\n"
	"records (tracer/FORMAT.md) — then every lock wait of METHOD with the\n"
	"lock's holder and what it was running (LOCK_WAIT records); times in\n"
	"microseconds.\n";

static const char usage_tree[] =
	"usage: rvtrace tree [--threshold PCT] [--thread N] FILE\n"
	"\n"
	"       rvtrace tree --callers METHOD FILE\n"
	"\n"
	"  --threshold PCT  hide nodes under PCT % of the total (default 1)\n"
	"  --thread N       only thread index N (see `rvtrace info`)\n"
	"  --callers M      bottom-up instead: who calls method M (exact name),\n"
	"                   with calls and inclusive time (recursion counted once)\n"
	"\n"
	"Top-down merged call tree: total %, self %, inclusive and self time,\n"
	"method, calls; children sorted by inclusive time.\n";

static const char usage_flame[] =
	"usage: rvtrace flamegraph [-o OUT.svg] [--title T] FILE\n"
	"\n"
	"Writes a self-contained interactive SVG flame graph: click a frame to\n"
	"zoom, Ctrl-F or the Search button to highlight by regex, hover for\n"
	"tooltips.  No external resources are referenced.\n";

static const char usage_export[] =
	"usage: rvtrace export --format F [-o OUT] FILE\n"
	"\n"
	"formats:\n"
	"  folded     one line per call path, self time in microseconds\n"
	"  chrome     Chrome Trace Event JSON (B/E events, anomaly instant)\n"
	"  nanoscope  Nanoscope text of the first thread\n"
	"  perfetto   Perfetto protobuf (opens in ui.perfetto.dev)\n"
	"  pprof      gzip'd pprof profile: wall time and calls per stack (go tool pprof)\n"
	"  speedscope speedscope JSON, evented profiles (www.speedscope.app)\n"
	"  android    Android .trace v3 (Android Studio, traceview, dmtracedump)\n"
	"  svg        the flame graph (same as `rvtrace flamegraph`)\n";

static const char usage_diff[] =
	"usage: rvtrace diff [--top N] A B\n"
	"       rvtrace diff [--top N] A... -- B...\n"
	"\n"
	"Compares methods by name: self time in A and B and the delta B - A,\n"
	"sorted by the size of the change.  With `--`, each side is a set of\n"
	"traces analysed as one (e.g. a release's captures against the next).\n";

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
	if (rc < 0)
		fprintf(stderr, "rvtrace: %s: %s\n", path, err.msg[0] ? err.msg : strerror(-rc));
	else if ((*t)->warning)
		fprintf(stderr, "rvtrace: %s: warning: %s\n", path, (*t)->warning);
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

static int cmd_info(int argc, char **argv)
{
	if (want_help(argc, argv) || argc != 2)
		return die_usage(usage_info);
	rva_trace *t;
	if (load(argv[1], &t) < 0)
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
	printf("repaired: %" PRIu64 " frames\n", t->repaired);
	for (size_t i = 0; i < t->nskipped; i++)
		printf("%s%" PRIu64 " %s%s", i ? ", " : "skipped:  ", t->skipped[i].n,
		       t->skipped[i].what, i + 1 == t->nskipped ? " (map to no call)\n" : "");
	print_note(t, "note:     ");
	for (size_t i = 0; i < t->nmuted; i++)
		printf("muted:    %s at %" PRId64 " (%" PRIu64 " calls/s, median %u ns)\n",
		       t->names[t->muted[i].method], t->muted[i].ns, t->muted[i].rate,
		       t->muted[i].median_ns);
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
	for (size_t i = 0; i < n; i++) {
		const rva_mstat *m = &v->st[ids[i]];
		printf("%10" PRIu64 " %14.3f %14.3f", m->calls, usec(t, m->incl), usec(t, m->self));
		if (t->has_cpu)
			printf(" %14.3f %14.3f", usec(t, m->cpu_incl), usec(t, m->cpu_self));
		if (offcol)
			printf(" %14.3f", usec(t, m->incl - m->cpu_incl));
		printf("  %s\n", t->names[ids[i]]);
	}
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
					     {0}};
	double top = 20, window = -1;
	int json = 0, full_model = 0, c;
	const char *match = NULL;
	while ((c = getopt_long(argc, argv, "n:w:jm:Fh", opts, NULL)) != -1) {
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
	/* Off-CPU records need the model (the on/off-CPU split is per call). */
	if (!full_model && window < 0 && !match && rva_detect(buf, len) == RVA_FMT_CAPTURE &&
	    !rva_capture_has_offcpu(buf, len)) {
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
					     {0}};
	double pct = 1, thread = -1;
	int c;
	const char *callers = NULL;
	while ((c = getopt_long(argc, argv, "t:T:c:h", opts, NULL)) != -1) {
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

	if (argc != 3 || argv[1][0] == '-')
		return die_usage(usage_why);
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
					     {0}};
	const char *fmt = NULL, *out = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
		if (c == 'f')
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
					     {0}};
	const char *out = NULL, *title = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "o:t:h", opts, NULL)) != -1) {
		if (c == 'o')
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
	static const struct option opts[] = {
		{"top", required_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'}, {0}};
	double top = 30;
	int c;
	while ((c = getopt_long(argc, argv, "+n:h", opts, NULL)) != -1) {
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
			return cmds[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "rvtrace: unknown command '%s'\n\n", cmd);
	return die_usage(usage_main);
}
