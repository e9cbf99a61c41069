/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alerts.c — alert rules on trends (alerts.h): specs validated, evaluated
 * from the trend's rows, their moves recorded with their webhooks.
 *
 * Invariants: an evaluation reads at most RVS_ALERT_MAX_ROWS traces (the
 * store's trend_read cap) and one count row per day of its span, so its
 * cost is bounded whatever the fleet; it computes every figure both
 * weighted and unweighted from the same rows, and the rule's `weighted`
 * only picks which of the two decides; the state moves only on a decision
 * (alerts.h) and only through the store's alert_rule_update, which
 * queues the deliveries in the transaction that moves the rule and only
 * when the rule was still in the state this pass read — a second pass, or
 * a second node, finds it moved and queues nothing.
 */
#include "model/alerts.h"
#include "model/trend.h"
#include "base/text.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

static const char *const METRICS[] = {"self_p50", "self_p95", "incl_p50",
				      "incl_p95", "captures", "jank_rate"};
static const char *const CONDS[] = {"above", "below", "up", "down"};

static int pick(const char *v, const char *const *names, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		if (!strcmp(v, names[i]))
			return (int)i;
	return -1;
}

/* Copies optional text field key of o into out ("" when absent). */
static int text_field(json_t *o, const char *key, char *out, int required, char *err, size_t cap)
{
	json_t *v = json_object_get(o, key);
	const char *s;

	out[0] = '\0';
	if (!v || json_is_null(v)) {
		if (required)
			snprintf(err, cap, "%s: required", key);
		return required ? -EINVAL : 0;
	}
	s = json_string_value(v);
	if (!s || !s[0] || strlen(s) >= RVS_ALERT_FIELD || !rvs_field_ok(s, RVS_ALERT_FIELD - 1)) {
		snprintf(err, cap,
			 "%s: a non-empty string of at most %d bytes, no control characters", key,
			 RVS_ALERT_FIELD - 1);
		return -EINVAL;
	}
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

int rvs_alert_spec_parse(json_t *o, enum rvs_alert_origin from, struct rvs_alert_spec *s, char *err,
			 size_t cap)
{
	static const char *const KNOWN[] = {"name", "metric", "condition", "threshold", "method",
					    "app",  "model",  "kind",	   "days",	"weighted"};
	const char *key;
	json_t *v;
	int m, c;

	memset(s, 0, sizeof *s);
	if (!json_is_object(o)) {
		snprintf(err, cap, "body: a JSON object");
		return -EINVAL;
	}
	json_object_foreach(o, key, v)
	{
		if (pick(key, KNOWN, sizeof KNOWN / sizeof *KNOWN) < 0) {
			snprintf(err, cap, "%.64s: not a rule field", key);
			return -EINVAL;
		}
	}
	if (text_field(o, "name", s->name, 1, err, cap) ||
	    text_field(o, "method", s->method, 0, err, cap) ||
	    text_field(o, "app", s->app, 0, err, cap) ||
	    text_field(o, "model", s->model, 0, err, cap))
		return -EINVAL;
	m = pick(json_string_value(json_object_get(o, "metric")), METRICS,
		 sizeof METRICS / sizeof *METRICS);
	c = pick(json_string_value(json_object_get(o, "condition")), CONDS,
		 sizeof CONDS / sizeof *CONDS);
	if (m < 0) {
		snprintf(err, cap,
			 "metric: one of self_p50, self_p95, incl_p50, incl_p95, captures, "
			 "jank_rate");
		return -EINVAL;
	}
	if (c < 0) {
		snprintf(err, cap, "condition: one of above, below, up, down");
		return -EINVAL;
	}
	s->metric = (enum rvs_alert_metric)m;
	s->cond = (enum rvs_alert_cond)c;
	if (s->metric == RVS_ALERT_JANK_RATE) {
		/* Counted per app and day on the devices: no method, model or
		 * anomaly kind in them. */
		if (!s->app[0] || s->method[0] || s->model[0] ||
		    (json_object_get(o, "kind") && !json_is_null(json_object_get(o, "kind")))) {
			snprintf(err, cap,
				 "jank_rate: an app's (app required; no method, model "
				 "or kind: the counts have none)");
			return -EINVAL;
		}
	} else if (s->metric != RVS_ALERT_CAPTURES && !s->method[0]) {
		snprintf(err, cap, "method: required for %s", METRICS[m]);
		return -EINVAL;
	}
	if (s->metric == RVS_ALERT_CAPTURES && s->method[0]) {
		snprintf(err, cap, "method: captures count traces, not a method's");
		return -EINVAL;
	}
	v = json_object_get(o, "threshold");
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0 ||
	    json_number_value(v) > 1e12) {
		snprintf(err, cap, "threshold: a number from 0 to 1e12");
		return -EINVAL;
	}
	s->threshold = json_number_value(v);
	v = json_object_get(o, "kind");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			snprintf(err, cap, "kind: an anomaly kind (an integer >= 0)");
			return -EINVAL;
		}
		s->has_kind = 1;
		s->kind = json_integer_value(v);
	}
	v = json_object_get(o, "days");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > RVS_ALERT_DAYS_MAX) {
			snprintf(err, cap, "days: an integer from 1 to %d", RVS_ALERT_DAYS_MAX);
			return -EINVAL;
		}
		s->days = (unsigned)json_integer_value(v);
	} else {
		s->days = s->cond == RVS_ALERT_ABOVE || s->cond == RVS_ALERT_BELOW ? 2 : 7;
	}
	v = json_object_get(o, "weighted");
	if (v && !json_is_null(v)) {
		if (!json_is_boolean(v)) {
			snprintf(err, cap, "weighted: true or false");
			return -EINVAL;
		}
		s->weighted = json_is_true(v);
	} else {
		s->weighted = from == RVS_ALERT_NEW && s->metric != RVS_ALERT_JANK_RATE;
	}
	if (s->weighted && s->metric == RVS_ALERT_JANK_RATE) {
		snprintf(err, cap,
			 "weighted: jank_rate counts every frame, not sampled captures: no weight "
			 "applies");
		return -EINVAL;
	}
	return 0;
}

json_t *rvs_alert_spec_json(const struct rvs_alert_spec *s)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:f,s:i,s:b}", "name", s->name, "metric",
			      METRICS[s->metric], "condition", CONDS[s->cond], "threshold",
			      s->threshold, "days", (int)s->days, "weighted", s->weighted);
	const char *keys[] = {"method", "app", "model"};
	const char *vals[] = {s->method, s->app, s->model};

	for (int i = 0; o && i < 3; i++)
		if (vals[i][0] && json_object_set_new(o, keys[i], json_string(vals[i]))) {
			json_decref(o);
			return NULL;
		}
	if (o && s->has_kind && json_object_set_new(o, "kind", json_integer(s->kind))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- evaluation --------------------------------------------------------------- */

/* The traces of the span [lo, hi] (days): the measure's ns per trace with
 * its selection weight; how many weights are estimates or unknown. */
struct sample {
	int64_t day, ns;
	double w;
};
struct samples {
	struct sample *v;
	size_t n, cap;
	int64_t lo, hi;
	int incl;
	int64_t n_estimated, n_unknown;
};

static int take_row(void *arg, const struct rvs_trend_row *r)
{
	struct samples *s = arg;
	int wflag = r->wflag;

	if (r->day < s->lo || r->day > s->hi)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct sample *v = realloc(s->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n].day = r->day;
	s->v[s->n].ns = s->incl ? r->incl_ns : r->self_ns;
	s->v[s->n].w = rvs_trend_weight(r->weight, &wflag);
	s->n_estimated += wflag == RVS_TREND_W_ESTIMATED;
	s->n_unknown += wflag == RVS_TREND_W_UNKNOWN;
	s->n++;
	return 0;
}

struct counts {
	int64_t lo;
	int64_t n[2 * RVS_ALERT_DAYS_MAX];
	int64_t late[2 * RVS_ALERT_DAYS_MAX]; /* jank_rate: n holds the frames */
	double w[2 * RVS_ALERT_DAYS_MAX];     /* captures: the summed weights */
	int64_t n_estimated, n_unknown;
};

static int take_jank(void *arg, int64_t day, int64_t frames, int64_t late)
{
	struct counts *c = arg;

	if (day >= c->lo && day < c->lo + 2 * RVS_ALERT_DAYS_MAX) {
		c->n[day - c->lo] = frames;
		c->late[day - c->lo] = late;
	}
	return 0;
}

static int take_count(void *arg, const struct rvs_alert_count_row *r)
{
	struct counts *c = arg;

	if (r->day >= c->lo && r->day < c->lo + 2 * RVS_ALERT_DAYS_MAX) {
		c->n[r->day - c->lo] = r->n;
		c->w[r->day - c->lo] = r->weight;
		c->n_estimated += r->n_estimated;
		c->n_unknown += r->n_unknown;
	}
	return 0;
}

/* Room for one window's values, each way. */
struct scratch {
	int64_t *v;
	struct rvs_trend_wv *wv;
};

/* The percentile of the samples with day in [a, b] in ms, weighted
 * (rvs_trend_wpct) or not (rvs_trend_pct); 0 when none. */
static int window_pct(const struct samples *s, int weighted, int64_t a, int64_t b, int p,
		      struct scratch *t, double *out)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].day >= a && s->v[i].day <= b) {
			t->v[k] = s->v[i].ns;
			t->wv[k].v = s->v[i].ns;
			t->wv[k].w = s->v[i].w;
			k++;
		}
	if (!k)
		return 0;
	*out = (double)(weighted ? rvs_trend_wpct(t->wv, k, p) : rvs_trend_pct(t->v, k, p)) / 1e6;
	return 1;
}

/* The figure over days [a, b], weighted or not: 1 and *out, or 0 when
 * there is none.  jank_rate has no weights: weighted is ignored. */
static int figure(const struct rvs_alert_spec *s, int weighted, const struct samples *x,
		  const struct counts *c, int64_t a, int64_t b, struct scratch *t, double *out)
{
	if (s->metric == RVS_ALERT_CAPTURES) {
		int64_t sum = 0;
		double wsum = 0;
		for (int64_t d = a; d <= b; d++) {
			sum += c->n[d - c->lo];
			wsum += c->w[d - c->lo];
		}
		*out = weighted ? wsum : (double)sum;
		return 1;
	}
	if (s->metric == RVS_ALERT_JANK_RATE) {
		int64_t frames = 0, late = 0;
		for (int64_t d = a; d <= b; d++) {
			frames += c->n[d - c->lo];
			late += c->late[d - c->lo];
		}
		if (!frames)
			return 0; /* no frames counted: no rate */
		*out = 100.0 * (double)late / (double)frames;
		return 1;
	}
	return window_pct(x, weighted, a, b,
			  s->metric == RVS_ALERT_SELF_P50 || s->metric == RVS_ALERT_INCL_P50 ? 50
											     : 95,
			  t, out);
}

/* One reading of the rule: its decision and figures, weighted or not. */
struct reading {
	int decided, firing, has_value;
	double value, current, previous;
};

static void read_rule(const struct rvs_alert_spec *s, int weighted, const struct samples *x,
		      const struct counts *c, int64_t today, struct scratch *t, struct reading *r)
{
	memset(r, 0, sizeof *r);
	if (s->cond == RVS_ALERT_ABOVE || s->cond == RVS_ALERT_BELOW) {
		int missing = 0, against = 0;
		for (int64_t day = x->lo; day <= today; day++) {
			double v;
			if (!figure(s, weighted, x, c, day, day, t, &v)) {
				missing = 1;
				continue;
			}
			if (day == today) {
				r->has_value = 1;
				r->value = v;
			}
			against |= s->cond == RVS_ALERT_ABOVE ? !(v > s->threshold)
							      : !(v < s->threshold);
		}
		r->decided = against || !missing;
		r->firing = r->decided && !against;
	} else {
		int64_t w = (int64_t)s->days;
		if (figure(s, weighted, x, c, today - w + 1, today, t, &r->current) &&
		    figure(s, weighted, x, c, today - 2 * w + 1, today - w, t, &r->previous) &&
		    r->previous > 0) {
			r->has_value = r->decided = 1;
			r->value = (r->current / r->previous - 1) * 100;
			r->firing = s->cond == RVS_ALERT_UP ? r->value >= s->threshold
							    : r->value <= -s->threshold;
		}
	}
}

int rvs_alert_evaluate(const struct rvs_store_ops *ops, struct rvs_store *st,
		       struct rvs_regress_db *d, const struct rvs_alert_spec *s, int64_t now,
		       struct rvs_alert_eval *e)
{
	int64_t today = now / 86400, span = s->cond == RVS_ALERT_UP || s->cond == RVS_ALERT_DOWN
						    ? 2 * (int64_t)s->days
						    : (int64_t)s->days;
	struct rvs_trend_filter f = {.method = s->method,
				     .app = s->app[0] ? s->app : NULL,
				     .model = s->model[0] ? s->model : NULL,
				     .kind = s->kind,
				     .has_kind = s->has_kind,
				     .max_rows = RVS_ALERT_MAX_ROWS};
	struct samples x = {.lo = today - span + 1,
			    .hi = today,
			    .incl = s->metric == RVS_ALERT_INCL_P50 ||
				    s->metric == RVS_ALERT_INCL_P95};
	struct counts *c = NULL;
	struct scratch t = {NULL, NULL};
	struct reading r, u;
	int rc;

	assert(s->days >= 1 && s->days <= RVS_ALERT_DAYS_MAX);
	assert(!(s->weighted && s->metric == RVS_ALERT_JANK_RATE));
	memset(e, 0, sizeof *e);
	e->day = today;
	if (!(c = calloc(1, sizeof *c)))
		return -ENOMEM;
	c->lo = x.lo;
	if (s->metric == RVS_ALERT_CAPTURES)
		rc = ops->alert_counts(d, &f, x.lo, x.hi, take_count, c);
	else if (s->metric == RVS_ALERT_JANK_RATE)
		rc = ops->jank_app_days(st, s->app, x.lo, x.hi, take_jank, c);
	else
		rc = ops->trend_read(st, &f, take_row, &x, &e->cut);
	if (rc)
		goto out;
	if (!(t.v = malloc((x.n ? x.n : 1) * sizeof *t.v)) ||
	    !(t.wv = malloc((x.n ? x.n : 1) * sizeof *t.wv))) {
		rc = -ENOMEM;
		goto out;
	}
	read_rule(s, s->weighted, &x, c, today, &t, &r);
	read_rule(s, 0, &x, c, today, &t, &u);
	e->decided = r.decided;
	e->firing = r.firing;
	e->has_value = r.has_value;
	e->value = r.value;
	e->current = r.current;
	e->previous = r.previous;
	e->has_value_unweighted = u.has_value;
	e->value_unweighted = u.value;
	e->current_unweighted = u.current;
	e->previous_unweighted = u.previous;
	e->n_estimated = x.n_estimated + c->n_estimated;
	e->n_unknown = x.n_unknown + c->n_unknown;
out:
	free(t.v);
	free(t.wv);
	free(x.v);
	free(c);
	return rc;
}

/* ---- the pass ------------------------------------------------------------------ */

struct rule {
	int64_t id;
	char *spec, *state;
	int64_t since;
};
struct rules {
	struct rule *r;
	size_t n;
};

static int take_rule(void *arg, const struct rvs_alert_rule_row *row)
{
	struct rules *l = arg;
	struct rule *x;

	if (l->n == RVS_ALERT_RULES_MAX)
		return 0;
	x = &l->r[l->n];
	x->id = row->id;
	x->since = row->since;
	x->spec = strdup(row->spec ? row->spec : "");
	x->state = strdup(row->state ? row->state : "ok");
	l->n++;
	return x->spec && x->state ? 0 : -ENOMEM;
}

static const char *unit_of(const struct rvs_alert_spec *s)
{
	if (s->cond == RVS_ALERT_UP || s->cond == RVS_ALERT_DOWN)
		return "%";
	if (s->metric == RVS_ALERT_JANK_RATE)
		return "% of frames late";
	return s->metric == RVS_ALERT_CAPTURES ? "captures/day" : "ms";
}

/* base_url's page of the rule's trend (the method's; the app's captures
 * for the captures metric; the fleet page's jank ranking for jank_rate):
 * every device string percent-encoded. */
static int rule_link(const char *base_url, const struct rvs_alert_spec *s, char *out, size_t cap)
{
	char *m = curl_easy_escape(NULL, s->method, 0), *a = curl_easy_escape(NULL, s->app, 0);
	int rc = m && a ? 0 : -ENOMEM;

	if (!rc && s->metric == RVS_ALERT_JANK_RATE)
		snprintf(out, cap, "%s/fleet", base_url ? base_url : "");
	else if (!rc && s->metric == RVS_ALERT_CAPTURES)
		snprintf(out, cap, "%s/traces?app=%s", base_url ? base_url : "", a);
	else if (!rc)
		snprintf(out, cap, "%s/trend?method=%s%s%s&by=day", base_url ? base_url : "", m,
			 s->app[0] ? "&app=" : "", a);
	curl_free(m);
	curl_free(a);
	return rc;
}

/* Why e's weighted value is not exact (NULL: it is, or s is unweighted);
 * the trend's wording (api/trend.c). */
static const char *weight_note(const struct rvs_alert_spec *s, const struct rvs_alert_eval *e)
{
	if (!s->weighted)
		return NULL;
	return e->n_estimated ? "estimated: quota selection (most severe or first N) censors"
	       : e->n_unknown ? "partly unweighted: uploads without a selection count as 1"
			      : NULL;
}

/* The alert's JSON text (malloc'd), NULL on -ENOMEM. */
static char *alert_body(const char *base_url, int64_t id, const struct rvs_alert_spec *s,
			const struct rvs_alert_eval *e, int64_t now)
{
	char link[2048], day[16];
	time_t t = (time_t)(e->day * 86400);
	struct tm tm;
	json_t *o, *spec = rvs_alert_spec_json(s);
	char *text = NULL;

	if (!spec || rule_link(base_url, s, link, sizeof link)) {
		json_decref(spec);
		return NULL;
	}
	gmtime_r(&t, &tm);
	strftime(day, sizeof day, "%Y-%m-%d", &tm);
	if (json_object_set_new(spec, "id", json_integer(id)))
		goto out;
	o = json_pack("{s:s,s:O,s:s,s:o,s:b,s:o,s:b,s:o,s:f,s:s,s:s,s:I,s:s}", "event",
		      e->firing ? "alert.firing" : "alert.resolved", "rule", spec, "state",
		      e->firing ? "firing" : "ok", "value",
		      e->has_value ? json_real(e->value) : json_null(), "weighted", s->weighted,
		      "value_unweighted",
		      e->has_value_unweighted ? json_real(e->value_unweighted) : json_null(),
		      "exact", !weight_note(s, e), "note",
		      weight_note(s, e) ? json_string(weight_note(s, e)) : json_null(), "threshold",
		      s->threshold, "unit", unit_of(s), "day", day, "since", (json_int_t)now,
		      "link", link);
	if (o && (s->cond == RVS_ALERT_UP || s->cond == RVS_ALERT_DOWN) &&
	    (json_object_set_new(o, "current", json_real(e->current)) ||
	     json_object_set_new(o, "previous", json_real(e->previous)) ||
	     json_object_set_new(o, "current_unweighted",
				 e->has_value_unweighted ? json_real(e->current_unweighted)
							 : json_null()) ||
	     json_object_set_new(o, "previous_unweighted",
				 e->has_value_unweighted ? json_real(e->previous_unweighted)
							 : json_null()))) {
		json_decref(o);
		o = NULL;
	}
	if (o)
		text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
out:
	json_decref(spec);
	return text;
}

/* Evaluates rule x and records the outcome.  0 or -errno. */
static int one_rule(const struct rvs_store_ops *ops, struct rvs_store *st, struct rvs_regress_db *d,
		    const struct rule *x, int64_t now, const char *base_url,
		    const char *const *urls, size_t nurls, struct rvs_alert_pass_stats *ps)
{
	struct rvs_alert_spec s;
	struct rvs_alert_eval e;
	struct rvs_webhook_new w[16];
	char err[160], *body = NULL;
	json_error_t je;
	json_t *o = json_loads(x->spec, 0, &je);
	int rc = o ? rvs_alert_spec_parse(o, RVS_ALERT_STORED, &s, err, sizeof err) : -EINVAL;
	int moved = 0;
	const char *state;

	json_decref(o);
	if (rc)
		return rc;
	if ((rc = rvs_alert_evaluate(ops, st, d, &s, now, &e)))
		return rc;
	ps->decided += (unsigned)e.decided;
	state = e.decided ? (e.firing ? "firing" : "ok") : x->state;
	if (nurls > sizeof w / sizeof *w)
		nurls = sizeof w / sizeof *w;
	if (strcmp(state, x->state) && nurls && !(body = alert_body(base_url, x->id, &s, &e, now)))
		return -ENOMEM;
	for (size_t i = 0; i < nurls; i++)
		w[i] = (struct rvs_webhook_new){.url = urls[i],
						.event = e.firing ? "alert.firing"
								  : "alert.resolved",
						.body = body,
						.now_ms = now * 1000};
	rc = ops->alert_rule_update(d,
				    &(struct rvs_alert_rule_row){.id = x->id,
								 .state = state,
								 .since = now,
								 .has_value = e.has_value,
								 .value = e.value,
								 .evaluated_at = now},
				    x->state, w, body ? nurls : 0, &moved);
	free(body);
	if (!rc && moved) {
		ps->fired += e.firing;
		ps->resolved += !e.firing;
	}
	return rc == -ENOENT ? 0 : rc; /* deleted meanwhile */
}

int rvs_alerts_pass(const char *database, int64_t now, const char *base_url,
		    const char *const *urls, size_t nurls, struct rvs_alert_pass_stats *out)
{
	struct rvs_alert_pass_stats ps = {0};
	struct rules l = {.n = 0};
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *d;
	int rc, first = 0;

	if (!(l.r = calloc(RVS_ALERT_RULES_MAX, sizeof *l.r)))
		return -ENOMEM;
	if ((rc = rvs_store_regress_open(database, &ops, &st, &d))) {
		free(l.r);
		return rc;
	}
	/* The rules first: the evaluations write, which a live read blocks. */
	rc = ops->alert_rules_list(d, take_rule, &l);
	ps.rules = (unsigned)l.n;
	for (size_t i = 0; !rc && i < l.n; i++) {
		int r = one_rule(ops, st, d, &l.r[i], now, base_url, urls, nurls, &ps);
		if (r) {
			ps.errors++;
			if (!first)
				first = r;
		}
	}
	rvs_store_regress_close(ops, st, d);
	for (size_t i = 0; i < l.n; i++) {
		free(l.r[i].spec);
		free(l.r[i].state);
	}
	free(l.r);
	if (out)
		*out = ps;
	return rc ? rc : first;
}

/* ---- listing --------------------------------------------------------------------- */

static int rule_json(void *arg, const struct rvs_alert_rule_row *r)
{
	json_error_t je;
	json_t *o = json_loads(r->spec ? r->spec : "", 0, &je), *last;

	if (!json_is_object(o))
		o = json_object(); /* not expected: the spec was validated before storing */
	if (!o)
		return -ENOMEM;
	/* A rule stored before rules had the field is evaluated unweighted
	 * (rvs_alert_spec_parse's RVS_ALERT_STORED): say so. */
	if (!json_object_get(o, "weighted") && json_object_set_new(o, "weighted", json_false())) {
		json_decref(o);
		return -ENOMEM;
	}
	last = r->delivery_id < 0
		       ? json_null()
		       : json_pack("{s:I,s:s,s:o,s:o}", "id", (json_int_t)r->delivery_id, "state",
				   r->delivery_state ? r->delivery_state : "", "last_status",
				   r->delivery_status ? json_integer(r->delivery_status)
						      : json_null(),
				   "delivered_at",
				   r->delivered_at >= 0 ? json_integer(r->delivered_at)
							: json_null());
	if (!last || json_object_set_new(o, "id", json_integer(r->id)) ||
	    json_object_set_new(o, "created_at", json_integer(r->created_at)) ||
	    json_object_set_new(o, "created_by", json_string(r->created_by ? r->created_by : "")) ||
	    json_object_set_new(o, "state", json_string(r->state ? r->state : "ok")) ||
	    json_object_set_new(o, "since", r->since >= 0 ? json_integer(r->since) : json_null()) ||
	    json_object_set_new(o, "value", r->has_value ? json_real(r->value) : json_null()) ||
	    json_object_set_new(o, "evaluated_at",
				r->evaluated_at >= 0 ? json_integer(r->evaluated_at)
						     : json_null()) ||
	    json_object_set_new(o, "last_delivery", last) || json_array_append_new(arg, o)) {
		json_decref(o);
		return -ENOMEM;
	}
	return 0;
}

int rvs_alert_rules_json(const char *database, json_t **out)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *d;
	json_t *a = json_array();
	int rc;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	if ((rc = rvs_store_regress_open(database, &ops, &st, &d))) {
		json_decref(a);
		return rc;
	}
	rc = ops->alert_rules_list(d, rule_json, a);
	rvs_store_regress_close(ops, st, d);
	if (rc) {
		json_decref(a);
		return rc;
	}
	*out = a;
	return 0;
}
