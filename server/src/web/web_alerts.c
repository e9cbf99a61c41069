/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_alerts.c — the web UI's /alerts page (server/WEB.md): every alert
 * rule on a trend (model/alerts.h) from the JSON API's
 * /api/v1/alert-rules reply, one table row each with its condition,
 * whether it decides on the selection-weighted figures, its current
 * value, its state (ok, or firing since when) and its last delivery.  Rules are added and deleted
 * through the JSON API (an admin's; server/OPERATIONS.md shows how).  Every string from the reply
 * reaches the page through rvs_web_esc / rvs_web_urlenc.
 */
#include "http/route.h"
#include "web/web.h"
#include "web/web_int.h"

#include <string.h>
#include <time.h>

static const char *sval(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* A unix time as UTC "YYYY-MM-DD HH:MM", or "—" for null. */
static void when(FILE *f, json_t *v)
{
	char buf[32];
	time_t t;
	struct tm tm;

	if (!json_is_integer(v)) {
		fputs("—", f);
		return;
	}
	t = (time_t)json_integer_value(v);
	gmtime_r(&t, &tm);
	strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
	fputs(buf, f);
}

/* The unit of rule r's threshold and value (the API's alert body's). */
static const char *unit(json_t *r)
{
	const char *cond = sval(r, "condition"), *metric = sval(r, "metric");

	if (!strcmp(cond, "up") || !strcmp(cond, "down"))
		return " %";
	if (!strcmp(metric, "jank_rate"))
		return " % of frames late";
	return !strcmp(metric, "captures") ? " /day" : " ms";
}

/* The rule's condition in words: "self_p95 of X in app A above 5 ms for 2 days". */
static void condition(FILE *f, json_t *r)
{
	const char *cond = sval(r, "condition"), *metric = sval(r, "metric");
	int change = !strcmp(cond, "up") || !strcmp(cond, "down");
	json_int_t days = json_integer_value(json_object_get(r, "days"));

	rvs_web_esc(f, metric);
	if (sval(r, "method")[0]) {
		fputs(" of <a href=\"/trend?method=", f);
		rvs_web_urlenc(f, sval(r, "method"));
		if (sval(r, "app")[0]) {
			fputs("&amp;app=", f);
			rvs_web_urlenc(f, sval(r, "app"));
		}
		fputs("&amp;by=day\">", f);
		rvs_web_esc(f, sval(r, "method"));
		fputs("</a>", f);
	}
	if (sval(r, "app")[0]) {
		fputs(" in app ", f);
		rvs_web_esc(f, sval(r, "app"));
	}
	if (sval(r, "model")[0]) {
		fputs(" on ", f);
		rvs_web_esc(f, sval(r, "model"));
	}
	if (json_is_integer(json_object_get(r, "kind")))
		fprintf(f, " (kind %lld)",
			(long long)json_integer_value(json_object_get(r, "kind")));
	fprintf(f, " %s %g%s", cond, json_number_value(json_object_get(r, "threshold")), unit(r));
	if (change)
		fprintf(f, " over %lld days against the %lld before", (long long)days,
			(long long)days);
	else
		fprintf(f, " for %lld day%s", (long long)days, days == 1 ? "" : "s");
}

void rvs_web_alerts(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	json_t *doc, *r, *rules;
	int status = 0;
	size_t i;

	doc = web_api(c, "/api/v1/alert-rules", "", &status);
	if (!doc || status != 200) {
		json_decref(doc);
		return web_error(c, 500, "the alert rules could not be read");
	}
	rules = json_object_get(doc, "rules");
	web_page_begin(c, "Alerts");
	fputs("<h1>Alerts</h1><p>Rules on trends, evaluated on the server's timer; each move"
	      " from ok to firing, and back, is delivered once to the webhooks.  An admin"
	      " adds and deletes rules through the JSON API (<code>POST"
	      " /api/v1/alert-rules</code>, <code>\"weighted\": true</code> or"
	      " <code>false</code>).</p><p class=\"legend\">A <b>weighted</b> rule decides on"
	      " each capture counted with its selection weight (1/p of the campaign that took"
	      " it: a model sampled at 10 % weighs as much as the fleet it stands for); one"
	      " <b>as sampled</b> on the uploads as they came (rules stored before rules had"
	      " the choice, and every jank rate, which counts frames).  The value is the"
	      " figure the rule decided on, as its weighting says; the unweighted figure"
	      " beside a weighted one is in each alert's webhook body"
	      " (<code>value_unweighted</code>), not kept here.</p>",
	      c->f);
	if (!json_array_size(rules)) {
		fputs("<p id=\"alerts-none\">No alert rule yet.</p>", c->f);
		json_decref(doc);
		return web_page_end(c, 200);
	}
	fputs("<table id=\"alert-rules\"><thead><tr><th>rule</th><th>condition</th>"
	      "<th>value</th><th>state</th><th>evaluated</th><th>last delivery</th></tr>"
	      "</thead><tbody>",
	      c->f);
	json_array_foreach(rules, i, r)
	{
		json_t *v = json_object_get(r, "value"),
		       *last = json_object_get(r, "last_delivery");
		const char *state = sval(r, "state");
		int firing = !strcmp(state, "firing");
		/* The listing always has the field (a stored rule without it
		 * reads false, as it is evaluated). */
		int weighted = json_is_true(json_object_get(r, "weighted"));

		fprintf(c->f, "<tr id=\"rule-%lld\" data-state=\"%s\" data-weighted=\"%s\"><td>",
			(long long)json_integer_value(json_object_get(r, "id")),
			firing ? "firing" : "ok", weighted ? "true" : "false");
		rvs_web_esc(c->f, sval(r, "name"));
		fputs("</td><td>", c->f);
		condition(c->f, r);
		fprintf(c->f, "</td><td class=\"weighting\">%s</td><td class=\"num\">",
			weighted ? "weighted" : "as sampled");
		if (json_is_number(v))
			fprintf(c->f, "%.3f%s%s", json_number_value(v), unit(r),
				weighted ? " (weighted)" : "");
		else
			fputs("no data", c->f);
		fprintf(c->f, "</td><td class=\"%s\">%s", firing ? "alert" : "",
			firing ? "firing since " : "ok");
		if (firing)
			when(c->f, json_object_get(r, "since"));
		fputs("</td><td>", c->f);
		when(c->f, json_object_get(r, "evaluated_at"));
		fputs("</td><td>", c->f);
		if (json_is_object(last)) {
			rvs_web_esc(c->f, sval(last, "state"));
			if (json_is_integer(json_object_get(last, "last_status")))
				fprintf(c->f, " (HTTP %lld)",
					(long long)json_integer_value(
						json_object_get(last, "last_status")));
			if (json_is_integer(json_object_get(last, "delivered_at"))) {
				fputs(" at ", c->f);
				when(c->f, json_object_get(last, "delivered_at"));
			}
		} else {
			fputs("none", c->f);
		}
		fputs("</td></tr>", c->f);
	}
	fputs("</tbody></table>", c->f);
	json_decref(doc);
	web_page_end(c, 200);
}
