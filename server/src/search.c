/*
 * search.c — worst traces, top issues and chain search (search.h,
 * server/API.md "Worst traces", "Issues", "Chain search").
 *
 * Invariants: SQL text comes from fixed fragments chosen by a fixed table
 * (sort keys, directions), never from the request; request values are
 * bound.  Sorted lists page by keyset (the sort value and a rowid
 * tie-break, both in the cursor), so page k costs what page 1 costs.  A
 * chain or substring search scans its table newest first in rowid chunks
 * of SEARCH_CHUNK and stops after SEARCH_MAX_ROWS rowids or SEARCH_MAX_MS
 * of work, whichever comes first, with a cursor to go on: no pattern, how
 * hostile soever, costs more.  Pattern matching is rvs_chain_match over
 * frames (no regular expressions on user input), O(frames × elements).
 */
#include "search.h"
#include "store.h"
#include "issue.h"
#include "params.h"
#include "reply.h"
#include "route.h"
#include "rvs.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sqlite3.h>

#define LIST_DEFAULT	 50
#define LIST_MAX	 500
#define SEARCH_CHUNK	 20000
#define SEARCH_MAX_ROWS	 400000
#define SEARCH_MAX_MS	 400
#define CHAIN_MAX_FRAMES 1024 /* decode.c stores at most 513 per chain */
#define WEEK		 604800
#define WEEKS_DEFAULT	 8
#define WEEKS_MAX	 52
#define ISSUES_DEFAULT	 20
#define ISSUES_MAX	 100

/* ---- helpers --------------------------------------------------------------- */

static int parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;
	if (!*s)
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A string as JSON; bytes of invalid UTF-8 become '?'. */
static json_t *jstr(const char *s)
{
	json_t *j;
	char *c;
	if (!s)
		return json_null();
	if ((j = json_string(s)))
		return j;
	if (!(c = strdup(s)))
		return json_null();
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(c);
	free(c);
	return j ? j : json_null();
}

static json_t *jstrn(const char *s, size_t n)
{
	char *c = strndup(s, n);
	json_t *j = jstr(c);
	free(c);
	return j;
}

static json_t *jcol(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		return json_null();
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return json_real(sqlite3_column_double(st, i));
	default:
		return jstr((const char *)sqlite3_column_text(st, i));
	}
}

/* Columns [from, to) of the current row into obj, keyed by column name. */
static void cols_into(sqlite3_stmt *st, int from, int to, json_t *obj)
{
	for (int i = from; i < to; i++)
		json_object_set_new(obj, sqlite3_column_name(st, i), jcol(st, i));
}

static sqlite3 *open_ro(const char *database)
{
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(database, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return NULL;
	}
	rvs_sqlite_busy(db, 5000);
	return db;
}

/* 400 naming the parameter whose value is bad. */
static void bad_param(struct rvs_query_resp *r, const char *name)
{
	char msg[96];

	assert(name);
	snprintf(msg, sizeof msg, "bad value for parameter: %s", name);
	rvs_query_set_error(r, 400, msg);
}

/* Binds text parameter `name` of query to st's index i when present: 0,
 * or -EINVAL for a bad value (*bad = name). */
static int bind_text_param(sqlite3_stmt *st, int i, const char *query, const char *name,
			   const char **bad)
{
	char v[1024];
	int rc = rvs_query_param(query, name, v, sizeof v);
	if (rc < 0) {
		*bad = name;
		return -EINVAL;
	}
	if (rc)
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
	return 0;
}

/* Binds integer parameter `name` (an anomaly kind for "kind", params.h)
 * like bind_text_param. */
static int bind_int_param(sqlite3_stmt *st, int i, const char *query, const char *name,
			  const char **bad)
{
	char v[32];
	int64_t iv;
	int rc = rvs_query_param(query, name, v, sizeof v);
	if (rc < 0 || (rc && (strcmp(name, "kind") ? parse_i64(v, &iv) : rvs_param_kind(v, &iv)))) {
		*bad = name;
		return -EINVAL;
	}
	if (rc)
		sqlite3_bind_int64(st, i, iv);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- GET /api/v1/traces?sort=K ---------------------------------------------- */

struct sort_key {
	const char *name;
	const char *expr; /* the ORDER BY expression (an index of migration 9's) */
	int desc;	  /* the key's own direction: worst first */
};

/* "-" before a key reverses it.  age: the anomaly's age, oldest first
 * (captured_at_ns ascending; unknown capture times count as oldest). */
static const struct sort_key SORT_KEYS[] = {
	{"received", "t.rowid", 1},
	{"severity", "ifnull(t.severity, -1)", 1},
	{"duration", "ifnull(t.duration_ns, -1)", 1},
	{"age", "ifnull(t.captured_at_ns, -1)", 0},
	{"self", "m.self_ns", 1},
};
#define SORT_SELF 4

#define TRACE_COLS                                                                           \
	"t.trace_id, t.app_id, t.app_version, t.model, t.os_build, t.anomaly_kind,"          \
	" t.severity, t.captured_at_ns, t.received_at, t.anomaly_name, t.anomaly_signature," \
	" t.issue, t.duration_ns"
#define TRACE_NCOLS 13
#define TRACE_FILTERS                                                                      \
	" (?1 IS NULL OR t.app_id = ?1) AND (?2 IS NULL OR t.app_version = ?2)"            \
	" AND (?3 IS NULL OR t.model = ?3) AND (?4 IS NULL OR t.os_build = ?4)"            \
	" AND (?5 IS NULL OR t.anomaly_kind = ?5) AND (?6 IS NULL OR t.severity >= ?6)"    \
	" AND (?7 IS NULL OR t.received_at >= ?7) AND (?8 IS NULL OR t.received_at < ?8)"  \
	" AND (?9 IS NULL OR t.anomaly_signature = ?9 OR t.trace_id IN (SELECT c.trace_id" \
	"  FROM trace_chains c WHERE c.signature = ?9))"                                   \
	" AND (?11 IS NULL OR t.issue = ?11)"

/* The statement of sort key k in direction desc, with a keyset clause when
 * cursor, into sql[0..cap): 0 or -E2BIG.  by_issue: an issue's few traces
 * drive the query (found by its index, then sorted) instead of a walk of
 * the sort index that would read most of the table to find them. */
static int sorted_sql(const struct sort_key *k, int desc, int cursor, int by_issue, char *sql,
		      size_t cap)
{
	const int self = k == &SORT_KEYS[SORT_SELF];
	const char *tb = self ? "m.rowid" : "t.rowid", *dir = desc ? "DESC" : "ASC";
	const char *le = desc ? "<=" : ">=", *lt = desc ? "<" : ">";
	char keyset[256] = "";
	int n;
	if (cursor)
		snprintf(keyset, sizeof keyset, " AND %s %s ?12 AND (%s %s ?12 OR %s %s ?13)",
			 k->expr, le, k->expr, lt, tb, lt);
	n = snprintf(sql, cap,
		     "SELECT " TRACE_COLS ", %s, %s AS sort_value_, %s AS tiebreak_ FROM %s"
		     " WHERE %s%s" TRACE_FILTERS "%s ORDER BY %s %s, %s %s LIMIT ?14",
		     self ? "m.self_ns AS method_self_ns" : "NULL AS method_self_ns", k->expr, tb,
		     self ? "trace_methods m JOIN traces t ON t.trace_id = m.trace_id" : "traces t",
		     self ? "m.method = ?10 AND"
			  : "(?10 IS NULL OR t.trace_id IN (SELECT x.trace_id FROM trace_methods x"
			    " WHERE x.method = ?10)) AND",
		     by_issue && !self
			     ? " t.rowid IN (SELECT x.rowid FROM traces x WHERE x.issue = ?11) AND"
			     : "",
		     keyset, k->expr, dir, tb, dir);
	return n < 0 || (size_t)n >= cap ? -E2BIG : 0;
}

/* "V:T" into the sort value and tie-break; -EINVAL when malformed. */
static int parse_cursor(const char *s, int64_t *v, int64_t *t)
{
	char a[32];
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : 0;
	if (!colon || n >= sizeof a)
		return -EINVAL;
	memcpy(a, s, n);
	a[n] = '\0';
	return parse_i64(a, v) || parse_i64(colon + 1, t) ? -EINVAL : 0;
}

static void search_traces(sqlite3 *db, const char *query, struct rvs_query_resp *r)
{
	static const char *const text_params[] = {"app", "version", "model", "os_build"};
	static const char *const int_params[] = {"kind", "min_severity", "since", "until"};
	const struct sort_key *k;
	char v[1100], sql[2048];
	const char *name = "received", *bad = NULL;
	int64_t limit, n = 0, cv = 0, ct = 0, lastv = 0, lastt = 0;
	int desc, rc, has_cursor;
	sqlite3_stmt *st = NULL;
	json_t *items, *doc;

	if (rvs_param_limit(query, LIST_DEFAULT, LIST_MAX, &limit))
		return rvs_query_set_error(r, 400, "bad limit");
	rc = rvs_query_param(query, "sort", v, sizeof v);
	if (rc < 0)
		return rvs_query_set_error(r, 400, "bad sort");
	if (rc == 1)
		name = v;
	desc = name[0] == '-' ? 0 : 1;
	if (name[0] == '-')
		name++;
	k = NULL;
	for (size_t i = 0; i < sizeof SORT_KEYS / sizeof SORT_KEYS[0]; i++)
		if (strcmp(SORT_KEYS[i].name, name) == 0)
			k = &SORT_KEYS[i];
	if (!k) {
		char msg[1200];
		snprintf(msg, sizeof msg,
			 "unknown sort key \"%.1024s\" (known: received, severity, duration, age,"
			 " self; \"-\" reverses)",
			 name);
		return rvs_query_set_error(r, 400, msg);
	}
	if (!k->desc)
		desc = !desc;
	if (k == &SORT_KEYS[SORT_SELF] && rvs_query_param(query, "method", v, sizeof v) != 1)
		return rvs_query_set_error(r, 400, "sort=self needs method=NAME");
	rc = rvs_query_param(query, "cursor", v, sizeof v);
	if (rc < 0 || (rc == 1 && parse_cursor(v, &cv, &ct)))
		return rvs_query_set_error(r, 400, "bad cursor");
	has_cursor = rc == 1;
	if (sorted_sql(k, desc, has_cursor, rvs_query_param(query, "issue", v, sizeof v) == 1, sql,
		       sizeof sql) ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return rvs_query_set_error(r, 500, "query failed");
	for (int i = 0; i < 4; i++)
		if (bind_text_param(st, i + 1, query, text_params[i], &bad) ||
		    bind_int_param(st, i + 5, query, int_params[i], &bad))
			goto bad;
	if (bind_text_param(st, 9, query, "signature", &bad) ||
	    bind_text_param(st, 10, query, "method", &bad) ||
	    bind_text_param(st, 11, query, "issue", &bad))
		goto bad;
	if (has_cursor) {
		sqlite3_bind_int64(st, 12, cv);
		sqlite3_bind_int64(st, 13, ct);
	}
	sqlite3_bind_int64(st, 14, limit + 1);

	items = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *o;
		if (n == limit)
			break;
		o = json_object();
		cols_into(st, 0, TRACE_NCOLS, o);
		if (k == &SORT_KEYS[SORT_SELF])
			cols_into(st, TRACE_NCOLS, TRACE_NCOLS + 1, o);
		lastv = sqlite3_column_int64(st, TRACE_NCOLS + 1);
		lastt = sqlite3_column_int64(st, TRACE_NCOLS + 2);
		json_array_append_new(items, o);
		n++;
	}
	doc = json_pack("{s:o,s:s+}", "traces", items, "sort", desc == k->desc ? "" : "-", k->name);
	if (rc == SQLITE_ROW) {
		snprintf(v, sizeof v, "%" PRId64 ":%" PRId64, lastv, lastt);
		json_object_set_new(doc, "next_cursor", json_string(v));
	} else {
		json_object_set_new(doc, "next_cursor", json_null());
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		json_decref(doc);
		return rvs_query_set_error(r, 500, "query failed");
	}
	return rvs_query_reply(r, 200, doc);
bad:
	sqlite3_finalize(st);
	bad_param(r, bad);
}

/* ---- GET /api/v1/issues ----------------------------------------------------- */

/* Impact = traces × mean severity (at least 1 each) × distinct devices. */
static const char ISSUES_SQL[] =
	"SELECT t.issue, count(*) AS traces, count(DISTINCT t.device_id) AS devices,"
	" avg(max(ifnull(t.severity, 0), 1)) AS severity,"
	" count(*) * avg(max(ifnull(t.severity, 0), 1)) * count(DISTINCT t.device_id) AS impact,"
	" min(t.received_at) AS first_seen, max(t.received_at) AS last_seen,"
	" max(t.rowid) FROM traces t"
	" WHERE t.issue IS NOT NULL AND t.received_at >= ?1"
	" AND (?2 IS NULL OR t.app_id = ?2) AND (?3 IS NULL OR t.app_version = ?3)"
	" AND (?4 IS NULL OR t.anomaly_kind = ?4)"
	" GROUP BY t.issue ORDER BY impact DESC, t.issue LIMIT ?5";
static const char TREND_SQL[] =
	"SELECT t.received_at / 604800, count(*) FROM traces t WHERE t.issue = ?1"
	" AND t.received_at >= ?6 AND (?2 IS NULL OR t.app_id = ?2)"
	" AND (?3 IS NULL OR t.app_version = ?3) AND (?4 IS NULL OR t.anomaly_kind = ?4)"
	" GROUP BY 1";
/* The issue's newest trace (by rowid) and its anomaly chain. */
static const char EXAMPLE_SQL[] =
	"SELECT x.trace_id, c.chain FROM traces x LEFT JOIN trace_chains c ON"
	" c.trace_id = x.trace_id AND c.kind = 'anomaly' AND c.rank = 1 WHERE x.rowid = ?1";
static const char SIGS_SQL[] =
	"SELECT DISTINCT t.anomaly_signature FROM traces t WHERE t.issue = ?1"
	" AND t.received_at >= ?6 AND (?2 IS NULL OR t.app_id = ?2)"
	" AND (?3 IS NULL OR t.app_version = ?3) AND (?4 IS NULL OR t.anomaly_kind = ?4)"
	" AND t.anomaly_signature IS NOT NULL ORDER BY 1 LIMIT 64";

/* Every row's first column of st (bound, run to the end) as a JSON array. */
static json_t *column_list(sqlite3_stmt *st)
{
	json_t *arr = json_array();
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(arr, jcol(st, 0));
	sqlite3_reset(st);
	return arr;
}

/* The example trace of rowid into o, with its anomaly chain less its
 * leading "(unknown caller);" frames as the issue's chain. */
static void example_into(sqlite3_stmt *ex, int64_t rowid, json_t *o)
{
	static const char unk[] = "(unknown caller);";
	const char *s;
	json_t *chain = json_null();
	sqlite3_bind_int64(ex, 1, rowid);
	if (sqlite3_step(ex) == SQLITE_ROW) {
		json_object_set_new(o, "example_trace", jcol(ex, 0));
		if ((s = (const char *)sqlite3_column_text(ex, 1))) {
			while (strncmp(s, unk, sizeof unk - 1) == 0 && s[sizeof unk - 1])
				s += sizeof unk - 1;
			chain = jstr(s);
		}
	}
	json_object_set_new(o, "chain", chain);
	sqlite3_reset(ex);
}

static int bind_issue_filters(sqlite3_stmt *st, const char *query, const char **bad)
{
	return bind_text_param(st, 2, query, "app", bad) ||
			       bind_text_param(st, 3, query, "version", bad) ||
			       bind_int_param(st, 4, query, "kind", bad)
		       ? -EINVAL
		       : 0;
}

static void list_issues(sqlite3 *db, const char *query, struct rvs_query_resp *r)
{
	char v[32];
	int64_t limit, weeks = WEEKS_DEFAULT, cur = (int64_t)time(NULL) / WEEK, since;
	sqlite3_stmt *st = NULL, *tr = NULL, *ex = NULL, *sg = NULL;
	json_t *issues, *starts, *doc;
	const char *bad = NULL;
	int rc;

	if (rvs_param_limit(query, ISSUES_DEFAULT, ISSUES_MAX, &limit))
		return rvs_query_set_error(r, 400, "bad limit");
	rc = rvs_query_param(query, "weeks", v, sizeof v);
	if (rc < 0 || (rc && (parse_i64(v, &weeks) || weeks < 1 || weeks > WEEKS_MAX)))
		return rvs_query_set_error(r, 400, "bad weeks (1..52)");
	since = (cur - weeks + 1) * WEEK;
	if (sqlite3_prepare_v2(db, ISSUES_SQL, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, TREND_SQL, -1, &tr, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, EXAMPLE_SQL, -1, &ex, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, SIGS_SQL, -1, &sg, NULL) != SQLITE_OK) {
		rvs_query_set_error(r, 500, "query failed");
		goto out;
	}
	if (bind_issue_filters(st, query, &bad) || bind_issue_filters(tr, query, &bad) ||
	    bind_issue_filters(sg, query, &bad)) {
		bad_param(r, bad);
		goto out;
	}
	sqlite3_bind_int64(st, 1, since);
	sqlite3_bind_int64(st, 5, limit);
	sqlite3_bind_int64(tr, 6, since);
	sqlite3_bind_int64(sg, 6, since);
	issues = json_array();
	starts = json_array();
	for (int64_t w = cur - weeks + 1; w <= cur; w++)
		json_array_append_new(starts, json_integer(w * WEEK));
	doc = json_pack("{s:I,s:o,s:o}", "weeks", (json_int_t)weeks, "week_starts", starts,
			"issues", issues);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *o = json_object(), *trend = json_array();
		int64_t counts[WEEKS_MAX] = {0};
		int trc;
		cols_into(st, 0, 7, o);
		example_into(ex, sqlite3_column_int64(st, 7), o);
		sqlite3_bind_text(sg, 1, (const char *)sqlite3_column_text(st, 0), -1,
				  SQLITE_TRANSIENT);
		json_object_set_new(o, "signatures", column_list(sg));
		sqlite3_bind_text(tr, 1, (const char *)sqlite3_column_text(st, 0), -1,
				  SQLITE_TRANSIENT);
		while ((trc = sqlite3_step(tr)) == SQLITE_ROW) {
			int64_t w = sqlite3_column_int64(tr, 0) - (cur - weeks + 1);
			if (w >= 0 && w < weeks)
				counts[w] = sqlite3_column_int64(tr, 1);
		}
		sqlite3_reset(tr);
		for (int64_t w = 0; w < weeks; w++)
			json_array_append_new(trend, json_integer(counts[w]));
		json_object_set_new(o, "trend", trend);
		json_array_append_new(issues, o);
		if (trc != SQLITE_DONE)
			break;
	}
	if (rc != SQLITE_DONE) {
		json_decref(doc);
		rvs_query_set_error(r, 500, "query failed");
		goto out;
	}
	rvs_query_reply(r, 200, doc);
out:
	sqlite3_finalize(st);
	sqlite3_finalize(tr);
	sqlite3_finalize(ex);
	sqlite3_finalize(sg);
}

/* ---- chain patterns ---------------------------------------------------------- */

int rvs_chain_pattern_parse(const char *text, struct rvs_chain_pat *p)
{
	const char *s = text;
	char *out = p->buf;
	int names = 0;

	p->n = 0;
	for (;;) {
		const char *e = s, *end;
		size_t len;
		/* The element ends at the next '>' that has whitespace on both sides. */
		while (*e && !(e[0] == '>' && e > s && isspace((unsigned char)e[-1]) &&
			       isspace((unsigned char)e[1])))
			e++;
		end = e;
		while (s < end && isspace((unsigned char)*s))
			s++;
		while (end > s && isspace((unsigned char)end[-1]))
			end--;
		len = (size_t)(end - s);
		if (!len || len > RVS_PAT_NAME_MAX)
			return -EINVAL;
		if (len == 1 && *s == '*') {
			if (!p->n || p->el[p->n - 1]) { /* merge consecutive stars */
				if (p->n == RVS_PAT_MAX)
					return -EINVAL;
				p->el[p->n] = NULL;
				p->len[p->n++] = 0;
			}
		} else {
			if (p->n == RVS_PAT_MAX)
				return -EINVAL;
			memcpy(out, s, len);
			out[len] = '\0';
			p->el[p->n] = out;
			p->len[p->n++] = len;
			out += len + 1;
			names++;
		}
		if (!*e)
			break;
		s = e + 1;
	}
	assert(out <= p->buf + sizeof p->buf);
	return names ? 0 : -EINVAL;
}

int rvs_chain_match(const struct rvs_chain_pat *p, const char *const *frames, const size_t *lens,
		    size_t n, size_t *from, size_t *to)
{
	size_t pos = 0, first = SIZE_MAX, i = 0;

	while (i < p->n) {
		size_t j = i, seg, k;
		if (!p->el[i]) {
			i++;
			continue;
		}
		while (j < p->n && p->el[j])
			j++;
		seg = j - i;
		for (k = pos; k + seg <= n; k++) {
			size_t m = 0;
			while (m < seg && lens[k + m] == p->len[i + m] &&
			       memcmp(frames[k + m], p->el[i + m], lens[k + m]) == 0)
				m++;
			if (m == seg)
				break;
		}
		if (k + seg > n)
			return 0;
		if (first == SIZE_MAX)
			first = k;
		pos = k + seg;
		i = j;
	}
	assert(first != SIZE_MAX); /* the parser refuses patterns without a name */
	*from = first;
	*to = pos;
	return 1;
}

/* ---- GET /api/v1/search ------------------------------------------------------ */

#define HIT_COLS                                                                                   \
	"t.trace_id, t.app_id, t.app_version, t.model, t.anomaly_kind, t.severity, t.received_at," \
	" t.issue"
#define HIT_NCOLS   8
#define HIT_FILTERS " AND (?4 IS NULL OR t.app_id = ?4) AND (?5 IS NULL OR t.app_version = ?5)"

/* Stored chains whose text holds ?3 (the pattern's longest name and its
 * ';'), in one rowid chunk [?2, ?1), newest first. */
static const char CHAIN_SCAN_SQL[] =
	"SELECT " HIT_COLS ", c.rowid, c.kind AS source, c.rank, c.chain FROM trace_chains c"
	" JOIN traces t ON t.trace_id = c.trace_id WHERE c.rowid < ?1 AND c.rowid >= ?2"
	" AND instr(c.chain, ?3) > 0" HIT_FILTERS " ORDER BY c.rowid DESC";
/* Methods whose name holds ?3, in one rowid chunk. */
static const char METHOD_SCAN_SQL[] =
	"SELECT " HIT_COLS ", m.rowid, 'method' AS source, NULL AS rank, m.method, m.calls,"
	" m.self_ns FROM trace_methods m JOIN traces t ON t.trace_id = m.trace_id"
	" WHERE m.rowid < ?1 AND m.rowid >= ?2 AND instr(m.method, ?3) > 0" HIT_FILTERS
	" ORDER BY m.rowid DESC";
/* One method by name (its index), newest rows first. */
static const char METHOD_EXACT_SQL[] =
	"SELECT " HIT_COLS ", m.rowid, 'method' AS source, NULL AS rank, m.method, m.calls,"
	" m.self_ns FROM trace_methods m JOIN traces t ON t.trace_id = m.trace_id"
	" WHERE m.method = ?3 AND m.rowid < ?1 AND m.rowid >= ?2" HIT_FILTERS
	" ORDER BY m.rowid DESC LIMIT ?6";

enum search_mode { MODE_CHAIN, MODE_METHOD, MODE_SUBSTRING };

struct search {
	enum search_mode mode;
	struct rvs_chain_pat pat;
	char needle[RVS_PAT_NAME_MAX + 2]; /* instr() prefilter */
	int64_t limit, n;
	json_t *hits;
	char last_trace[40]; /* the previous hit's trace: one hit per trace in a run */
	int64_t last_rowid;
};

/* The hit of row st (a chain or method row) when it matches: appended to
 * s->hits.  0, or 1 when the hit is one past the limit (not appended). */
static int take_row(struct search *s, sqlite3_stmt *st)
{
	const char *tid = (const char *)sqlite3_column_text(st, 0);
	const char *text = (const char *)sqlite3_column_text(st, HIT_NCOLS + 3);
	const char *frames[CHAIN_MAX_FRAMES];
	size_t lens[CHAIN_MAX_FRAMES], nf = 0, from = 0, to = 1;
	json_t *o, *fr;

	if (!tid || !text || strcmp(tid, s->last_trace) == 0)
		return 0;
	if (s->mode == MODE_CHAIN) {
		for (const char *p = text; *p && nf < CHAIN_MAX_FRAMES;) {
			size_t l = strcspn(p, ";");
			frames[nf] = p;
			lens[nf++] = l;
			p += l + (p[l] == ';');
		}
		if (!rvs_chain_match(&s->pat, frames, lens, nf, &from, &to))
			return 0;
	} else {
		frames[0] = text;
		lens[0] = strlen(text);
		nf = 1;
	}
	if (s->n == s->limit)
		return 1;
	o = json_object();
	cols_into(st, 0, HIT_NCOLS, o);
	cols_into(st, HIT_NCOLS + 1, HIT_NCOLS + 3, o);
	if (s->mode != MODE_CHAIN)
		cols_into(st, HIT_NCOLS + 4, HIT_NCOLS + 6, o);
	fr = json_array();
	for (size_t i = 0; i < nf; i++)
		json_array_append_new(fr, jstrn(frames[i], lens[i]));
	json_object_set_new(o, "frames", fr);
	json_object_set_new(o, "match", json_pack("[I,I]", (json_int_t)from, (json_int_t)to));
	json_array_append_new(s->hits, o);
	snprintf(s->last_trace, sizeof s->last_trace, "%s", tid);
	s->last_rowid = sqlite3_column_int64(st, HIT_NCOLS);
	s->n++;
	return 0;
}

/* Which search the query asks for, into s: exactly one of chain=,
 * caller=&callee=, contains=.  0 or an error message (static). */
static const char *parse_search(const char *query, struct search *s)
{
	char a[RVS_PAT_NAME_MAX * 3], b[RVS_PAT_NAME_MAX + 1];
	int has_chain = rvs_query_param(query, "chain", a, sizeof a);
	int has_caller = rvs_query_param(query, "caller", b, sizeof b);
	int has_callee, has_sub;
	size_t best = 0;

	if (has_chain < 0 || has_caller < 0)
		return "bad chain or caller";
	if (has_caller == 1) {
		size_t bl = strlen(b);
		has_callee = rvs_query_param(query, "callee", a, sizeof a);
		if (has_callee != 1 || has_chain)
			return "caller needs callee (and no chain)";
		/* Adjacent caller → callee: the pattern "caller > callee",
		 * built here so the names need no escaping. */
		if (!bl || bl > RVS_PAT_NAME_MAX || !a[0] || strlen(a) > RVS_PAT_NAME_MAX)
			return "bad caller or callee";
		s->mode = MODE_CHAIN;
		s->pat.n = 2;
		memcpy(s->pat.buf, b, bl + 1);
		memcpy(s->pat.buf + bl + 1, a, strlen(a) + 1);
		s->pat.el[0] = s->pat.buf;
		s->pat.len[0] = bl;
		s->pat.el[1] = s->pat.buf + bl + 1;
		s->pat.len[1] = strlen(a);
	} else if (has_chain == 1) {
		if (rvs_chain_pattern_parse(a, &s->pat))
			return "bad chain pattern (names separated by \" > \", \"*\" for any "
			       "frames, "
			       "at most 16 elements)";
		s->mode = s->pat.n == 1 ? MODE_METHOD : MODE_CHAIN;
	} else {
		has_sub = rvs_query_param(query, "contains", a, sizeof a);
		if (has_sub != 1 || !a[0] || strlen(a) > RVS_PAT_NAME_MAX)
			return "give chain=, caller= and callee=, or contains=";
		s->mode = MODE_SUBSTRING;
		snprintf(s->needle, sizeof s->needle, "%s", a);
		return NULL;
	}
	if (rvs_query_param(query, "contains", b, sizeof b) != 0)
		return "contains= goes alone";
	for (size_t i = 0; i < s->pat.n; i++)
		if (s->pat.el[i] && s->pat.len[i] > best) {
			best = s->pat.len[i];
			snprintf(s->needle, sizeof s->needle, "%s%s", s->pat.el[i],
				 s->mode == MODE_CHAIN ? ";" : "");
		}
	return NULL;
}

static void search_chains(sqlite3 *db, const char *query, struct rvs_query_resp *r)
{
	struct search *s = calloc(1, sizeof *s);
	const char *msg, *sql;
	char v[32];
	int64_t hi = INT64_MAX, scanned = 0, t0 = now_ms();
	const char *bad = NULL;
	int rc = SQLITE_DONE, full = 0, partial = 0;
	sqlite3_stmt *st = NULL;
	json_t *doc;

	if (!s)
		return rvs_query_set_error(r, 500, "out of memory");
	if ((msg = parse_search(query, s))) {
		rvs_query_set_error(r, 400, msg);
		goto out;
	}
	if (rvs_param_limit(query, LIST_DEFAULT, LIST_MAX, &s->limit)) {
		rvs_query_set_error(r, 400, "bad limit");
		goto out;
	}
	rc = rvs_query_param(query, "cursor", v, sizeof v);
	if (rc < 0 || (rc && (parse_i64(v, &hi) || hi < 0))) {
		rvs_query_set_error(r, 400, "bad cursor");
		goto out;
	}
	sql = s->mode == MODE_CHAIN    ? CHAIN_SCAN_SQL
	      : s->mode == MODE_METHOD ? METHOD_EXACT_SQL
				       : METHOD_SCAN_SQL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		rvs_query_set_error(r, 500, "query failed");
		goto out;
	}
	if (bind_text_param(st, 4, query, "app", &bad) ||
	    bind_text_param(st, 5, query, "version", &bad)) {
		bad_param(r, bad);
		goto out;
	}
	sqlite3_bind_text(st, 3, s->needle, -1, SQLITE_STATIC);
	s->hits = json_array();
	if (hi == INT64_MAX) { /* the first page starts past the newest row */
		sqlite3_stmt *mx;
		const char *q = s->mode == MODE_CHAIN ? "SELECT max(rowid) FROM trace_chains"
						      : "SELECT max(rowid) FROM trace_methods";
		hi = 0;
		if (sqlite3_prepare_v2(db, q, -1, &mx, NULL) == SQLITE_OK &&
		    sqlite3_step(mx) == SQLITE_ROW)
			hi = sqlite3_column_int64(mx, 0) + 1;
		sqlite3_finalize(mx);
	}
	/* An exact method is one index lookup: no chunks.  Time is checked
	 * between chunks and every 256 rows a chunk hands over; a search cut
	 * mid-chunk goes on below the last row it looked at. */
	rc = SQLITE_DONE;
	while (hi > 0 && !full && !partial) {
		int64_t lo =
			s->mode == MODE_METHOD ? 0 : (hi > SEARCH_CHUNK ? hi - SEARCH_CHUNK : 0);
		int64_t seen = hi;
		unsigned k = 0;
		if (scanned >= SEARCH_MAX_ROWS || now_ms() - t0 > SEARCH_MAX_MS) {
			partial = 1;
			break;
		}
		sqlite3_bind_int64(st, 1, hi);
		sqlite3_bind_int64(st, 2, lo);
		if (s->mode == MODE_METHOD)
			sqlite3_bind_int64(st, 6, s->limit + 1);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			seen = sqlite3_column_int64(st, HIT_NCOLS);
			if ((full = take_row(s, st)))
				break;
			if (s->mode != MODE_METHOD && ++k % 256 == 0 &&
			    now_ms() - t0 > SEARCH_MAX_MS) {
				partial = 1;
				break;
			}
		}
		sqlite3_reset(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			break;
		if (partial) {
			scanned += hi - seen;
			hi = seen;
		} else {
			scanned += hi - lo;
			hi = lo;
		}
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		json_decref(s->hits);
		rvs_query_set_error(r, 500, "query failed");
		goto out;
	}
	doc = json_pack("{s:o,s:s,s:I,s:b}", "hits", s->hits, "mode",
			s->mode == MODE_CHAIN	 ? "chain"
			: s->mode == MODE_METHOD ? "method"
						 : "contains",
			"scanned", (json_int_t)scanned, "partial", partial);
	if (full)
		snprintf(v, sizeof v, "%" PRId64, s->last_rowid);
	else if (partial)
		snprintf(v, sizeof v, "%" PRId64, hi);
	json_object_set_new(doc, "next_cursor", full || partial ? json_string(v) : json_null());
	rvs_query_reply(r, 200, doc);
out:
	sqlite3_finalize(st);
	free(s);
}

/* Runs fn with a read-only connection, or answers 503.  These reads are
 * sqlite's still (issue 15): on PostgreSQL `feature` is refused with a
 * 501 naming it (server/README.md, "PostgreSQL"). */
static void with_db(struct rvs_call *c, const char *feature,
		    void (*fn)(sqlite3 *, const char *, struct rvs_query_resp *))
{
	sqlite3 *db;
	char msg[128];

	if (rvs_store_for(c->cfg->database) != &rvs_store_sqlite) {
		snprintf(msg, sizeof msg, "%s: not available on PostgreSQL yet", feature);
		return rvs_query_set_error(c->q, 501, msg);
	}
	if (!(db = open_ro(c->cfg->database)))
		return rvs_query_set_error(c->q, 503, "database unavailable");
	fn(db, c->query, c->q);
	sqlite3_close(db);
}

void rvs_search_traces(struct rvs_call *c)
{
	with_db(c, "sorted and by-issue trace lists", search_traces);
}

void rvs_search_issues(struct rvs_call *c)
{
	with_db(c, "issues", list_issues);
}

void rvs_search_chains(struct rvs_call *c)
{
	with_db(c, "chain search", search_chains);
}
