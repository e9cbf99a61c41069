/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules.c — the pure parts of librvpolicy: reason names, consent, version
 * ranges, deterministic sampling, campaign matching, the built-in default
 * policy and structural validation of decoded bodies.
 *
 * Invariants: nothing here allocates, touches files or reads clocks except
 * rvp_time_now(); every function is total on hostile input (NULL strings,
 * empty lists, NaN probabilities).
 */
#include "rearview/policy.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const reason_names[RVP_REASON_COUNT_] = {
	[RVP_ACCEPTED] = "accepted",
	[RVP_CONSENT_OFF] = "consent_off",
	[RVP_CONSENT_LOCAL_ONLY] = "consent_local_only",
	[RVP_CONSENT_SUMMARY_ONLY] = "consent_summary_only",
	[RVP_QUOTA_EXHAUSTED] = "quota_exhausted",
	[RVP_CAMPAIGN_QUOTA_EXHAUSTED] = "campaign_quota_exhausted",
	[RVP_NOT_TARGETED] = "not_targeted",
	[RVP_SAMPLED_OUT] = "sampled_out",
	[RVP_DEBOUNCED] = "debounced",
	[RVP_TOO_LARGE] = "too_large",
	[RVP_EXPIRED_POLICY] = "expired_policy",
	[RVP_LESS_SEVERE] = "less_severe",
	[RVP_REPLACED_LESS_SEVERE] = "replaced_less_severe",
	[RVP_CAMPAIGN_NOT_ACTIVE] = "campaign_not_active",
	[RVP_KIND_NOT_TARGETED] = "kind_not_targeted",
	[RVP_BELOW_MIN_SEVERITY] = "below_min_severity",
	[RVP_APP_NOT_TARGETED] = "app_not_targeted",
	[RVP_VERSION_NOT_TARGETED] = "version_not_targeted",
	[RVP_DEVICE_NOT_TARGETED] = "device_not_targeted",
	[RVP_OS_NOT_TARGETED] = "os_not_targeted",
	[RVP_WAITING_UNMETERED] = "waiting_unmetered",
	[RVP_APP_BUDGET_EXHAUSTED] = "app_budget_exhausted",
	[RVP_DEVICE_BUDGET_EXHAUSTED] = "device_budget_exhausted",
};

const char *rvp_reason_name(enum rvp_reason r)
{
	if ((unsigned)r >= RVP_REASON_COUNT_ || !reason_names[r])
		return "unknown";
	return reason_names[r];
}

/* ------------------------------------------------------------------ time */

int rvp_time_now(struct rvp_time *t)
{
	struct timespec ts;
	int fd;
	ssize_t n;

	memset(t, 0, sizeof(*t));
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -errno;
	t->wall_s = ts.tv_sec;
	if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
		return -errno;
	t->boot_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* no boot id: every pair counts as cross-boot */
	n = read(fd, t->boot_id, sizeof(t->boot_id) - 1);
	close(fd);
	if (n < 0)
		n = 0;
	t->boot_id[n] = '\0';
	t->boot_id[strcspn(t->boot_id, "\n")] = '\0';
	return 0;
}

int64_t rvp_elapsed_s(const struct rvp_time *then, const struct rvp_time *now)
{
	/*
	 * Same boot: CLOCK_BOOTTIME is the truth, whatever the wall clock did.
	 * Different boots (or unknown boot id): only the wall clock relates
	 * the two; a backward jump is clamped to 0 so an old upload never
	 * looks older than it is.  A forward jump across a reboot cannot be
	 * told apart from real time passing (README.md).
	 */
	if (then->boot_id[0] && strcmp(then->boot_id, now->boot_id) == 0) {
		if (now->boot_ns <= then->boot_ns)
			return 0;
		return (int64_t)((now->boot_ns - then->boot_ns) / 1000000000ull);
	}
	if (now->wall_s <= then->wall_s)
		return 0;
	return now->wall_s - then->wall_s;
}

/* --------------------------------------------------------------- consent */

static int level_rank(rvp_consent level)
{
	switch (level) {
	case REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL:
		return 1;
	case REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY:
		return 2;
	case REARVIEW__CONSENT_LEVEL__CONSENT_FULL:
		return 3;
	default: /* OFF, UNSPECIFIED and anything unknown: the safe side */
		return 0;
	}
}

int rvp_consent_allows(rvp_consent level, enum rvp_action action, enum rvp_reason *why)
{
	int rank = level_rank(level);
	enum rvp_reason r = RVP_ACCEPTED;

	if (rank == 0)
		r = RVP_CONSENT_OFF;
	else if (action == RVP_ACT_CAPTURE)
		r = RVP_ACCEPTED;
	else if (rank == 1)
		r = RVP_CONSENT_LOCAL_ONLY;
	else if (action == RVP_ACT_UPLOAD_FULL && rank < 3)
		r = RVP_CONSENT_SUMMARY_ONLY;
	else if (action != RVP_ACT_UPLOAD_SUMMARY && action != RVP_ACT_UPLOAD_FULL)
		r = RVP_CONSENT_OFF; /* unknown action: refuse */
	if (why)
		*why = r;
	return r == RVP_ACCEPTED;
}

size_t rvp_consent_purge(rvp_consent level, const struct rvp_pending *items, size_t n,
			 size_t *purge)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!rvp_consent_allows(level, items[i].action, NULL))
			purge[k++] = i;
	return k;
}

/* ----------------------------------------------------------------- rules */

int rvp_version_cmp(const char *a, const char *b)
{
	if (!a)
		a = "";
	if (!b)
		b = "";
	while (*a || *b) {
		size_t la = strcspn(a, "."), lb = strcspn(b, ".");
		int num_a = la > 0, num_b = lb > 0;

		for (size_t i = 0; i < la; i++)
			num_a &= isdigit((unsigned char)a[i]) != 0;
		for (size_t i = 0; i < lb; i++)
			num_b &= isdigit((unsigned char)b[i]) != 0;
		if ((num_a || la == 0) && (num_b || lb == 0)) {
			/* Numeric: skip leading zeros, then longer is bigger. */
			const char *pa = a, *pb = b;
			size_t za = la, zb = lb;
			while (za > 0 && *pa == '0')
				pa++, za--;
			while (zb > 0 && *pb == '0')
				pb++, zb--;
			if (za != zb)
				return za < zb ? -1 : 1;
			int c = memcmp(pa, pb, za);
			if (c)
				return c < 0 ? -1 : 1;
		} else {
			size_t m = la < lb ? la : lb;
			int c = memcmp(a, b, m);
			if (c)
				return c < 0 ? -1 : 1;
			if (la != lb)
				return la < lb ? -1 : 1;
		}
		a += la;
		b += lb;
		if (*a == '.')
			a++;
		if (*b == '.')
			b++;
	}
	return 0;
}

/* FNV-1a over the inputs, then a splitmix64 finaliser for uniform bits. */
static uint64_t mix_str(uint64_t h, const char *s)
{
	if (s)
		for (; *s; s++)
			h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull; /* separator */
}

int rvp_sample(double p, uint64_t seed, const char *campaign_id, const char *item_id)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (isnan(p))
		return 0;
	if (p <= 0.0 || p >= 1.0)
		return 1;
	for (int i = 0; i < 8; i++)
		h = (h ^ ((seed >> (8 * i)) & 0xff)) * 0x100000001b3ull;
	h = mix_str(h, campaign_id);
	h = mix_str(h, item_id);
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (double)(h >> 11) * 0x1.0p-53 < p;
}

static int list_has(char **list, size_t n, const char *s, int glob)
{
	if (n == 0)
		return 1;
	if (!s)
		s = "";
	for (size_t i = 0; i < n; i++) {
		if (!list[i])
			continue;
		if (glob ? fnmatch(list[i], s, 0) == 0 : strcmp(list[i], s) == 0)
			return 1;
	}
	return 0;
}

static int version_in(Rearview__VersionRange **r, size_t n, const char *v)
{
	if (n == 0)
		return 1;
	if (!v || !*v)
		return 0; /* a range was asked for and the version is unknown */
	for (size_t i = 0; i < n; i++) {
		if (!r[i])
			continue;
		if (r[i]->min && *r[i]->min && rvp_version_cmp(v, r[i]->min) < 0)
			continue;
		if (r[i]->max && *r[i]->max && rvp_version_cmp(v, r[i]->max) > 0)
			continue;
		return 1;
	}
	return 0;
}

enum rvp_reason rvp_campaign_match(const Rearview__Campaign *c, const struct rvp_event *ev,
				   int64_t now_s, uint64_t seed)
{
	int kind_ok = c->n_kinds == 0;

	if ((c->valid_from_s && now_s < (int64_t)c->valid_from_s) ||
	    (c->valid_until_s && now_s > (int64_t)c->valid_until_s) || now_s < 0)
		return RVP_CAMPAIGN_NOT_ACTIVE;
	for (size_t i = 0; i < c->n_kinds; i++)
		kind_ok |= c->kinds[i] == ev->kind;
	if (!kind_ok)
		return RVP_KIND_NOT_TARGETED;
	if (ev->severity < c->min_severity)
		return RVP_BELOW_MIN_SEVERITY;
	if (!list_has(c->app_patterns, c->n_app_patterns, ev->app_id, 1))
		return RVP_APP_NOT_TARGETED;
	if (!version_in(c->app_versions, c->n_app_versions, ev->app_version))
		return RVP_VERSION_NOT_TARGETED;
	if (!list_has(c->device_models, c->n_device_models, ev->device_model, 1))
		return RVP_DEVICE_NOT_TARGETED;
	if (!list_has(c->os_builds, c->n_os_builds, ev->os_build, 1))
		return RVP_OS_NOT_TARGETED;
	if (!rvp_sample(c->sample_probability, seed, c->id, ev->item_id))
		return RVP_SAMPLED_OUT;
	return RVP_ACCEPTED;
}

int rvp_upload_conditions_ok(const Rearview__PolicyBody *b, int metered, enum rvp_reason *why)
{
	int ok = !(b && b->unmetered_only && metered);

	if (why)
		*why = ok ? RVP_ACCEPTED : RVP_WAITING_UNMETERED;
	return ok;
}

int rvp_signature_match(const Rearview__SignatureModel *m, const char *const *chain, size_t n,
			uint64_t duration_ns)
{
	size_t want = 0;

	if (!m || m->n_methods == 0 || duration_ns < m->min_duration_ns)
		return 0;
	/* Greedy in-order matching is exact for "subsequence" patterns: taking
	 * the earliest frame for each method never hurts the later ones. */
	for (size_t i = 0; i < n && want < m->n_methods; i++)
		if (chain[i] && m->methods[want] && fnmatch(m->methods[want], chain[i], 0) == 0)
			want++;
	return want == m->n_methods;
}

/* ---------------------------------------------------------------- policy */

static Rearview__DetectorThresholds default_thresholds = {
	PROTOBUF_C_MESSAGE_INIT(&rearview__detector_thresholds__descriptor),
	RVP_DEFAULT_JANK_FRAMES,
	RVP_DEFAULT_FRAME_BUDGET_US,
	RVP_DEFAULT_TOUCH_LATENCY_MS,
	RVP_DEFAULT_THERMAL_TRIP_MC,
};

static const Rearview__PolicyBody default_body = {
	.base = PROTOBUF_C_MESSAGE_INIT(&rearview__policy_body__descriptor),
	.version = 0,
	.thresholds = &default_thresholds,
	.weekly_quota = RVP_DEFAULT_WEEKLY_QUOTA,
	.selection = REARVIEW__SELECTION_MODE__SELECT_FIRST_N,
	.debounce_captures = RVP_DEFAULT_DEBOUNCE_CAPTURES,
	.debounce_window_s = RVP_DEFAULT_DEBOUNCE_WINDOW_S,
	.max_upload_bytes = RVP_DEFAULT_MAX_UPLOAD_BYTES,
};

const Rearview__PolicyBody *rvp_policy_default(void)
{
	return &default_body;
}

uint32_t rvp_policy_weekly_quota(const Rearview__PolicyBody *b)
{
	return b->weekly_quota ? b->weekly_quota : RVP_DEFAULT_WEEKLY_QUOTA;
}

Rearview__SelectionMode rvp_policy_selection(const Rearview__PolicyBody *b)
{
	switch (b->selection) {
	case REARVIEW__SELECTION_MODE__SELECT_MOST_SEVERE:
	case REARVIEW__SELECTION_MODE__SELECT_TARGETED:
		return b->selection;
	default:
		return REARVIEW__SELECTION_MODE__SELECT_FIRST_N;
	}
}

uint32_t rvp_policy_debounce_captures(const Rearview__PolicyBody *b)
{
	return b->debounce_captures ? b->debounce_captures : RVP_DEFAULT_DEBOUNCE_CAPTURES;
}

uint32_t rvp_policy_debounce_window_s(const Rearview__PolicyBody *b)
{
	return b->debounce_window_s ? b->debounce_window_s : RVP_DEFAULT_DEBOUNCE_WINDOW_S;
}

uint64_t rvp_policy_max_upload_bytes(const Rearview__PolicyBody *b)
{
	return b->max_upload_bytes ? b->max_upload_bytes : RVP_DEFAULT_MAX_UPLOAD_BYTES;
}

static int str_ok(const char *s)
{
	return !s || strlen(s) <= RVP_MAX_STRING;
}

static int strs_ok(char **v, size_t n)
{
	if (n > RVP_MAX_LIST)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!str_ok(v[i]))
			return 0;
	return 1;
}

int rvp_policy_validate(const Rearview__PolicyBody *b)
{
	if (!b || b->n_campaigns > RVP_MAX_CAMPAIGNS)
		return -EINVAL;
	if (b->expires_at_s && b->issued_at_s && b->expires_at_s < b->issued_at_s)
		return -EINVAL;
	for (size_t i = 0; i < b->n_campaigns; i++) {
		const Rearview__Campaign *c = b->campaigns[i];
		if (!c || !c->id || !*c->id || !str_ok(c->id))
			return -EINVAL;
		if (isnan(c->sample_probability) || c->sample_probability < 0 ||
		    c->sample_probability > 1)
			return -EINVAL;
		if (c->valid_until_s && c->valid_from_s > c->valid_until_s)
			return -EINVAL;
		if (!strs_ok(c->app_patterns, c->n_app_patterns) ||
		    !strs_ok(c->device_models, c->n_device_models) ||
		    !strs_ok(c->os_builds, c->n_os_builds) || c->n_kinds > RVP_MAX_LIST ||
		    c->n_app_versions > RVP_MAX_LIST || c->n_signatures > RVP_MAX_LIST)
			return -EINVAL;
		for (size_t j = 0; j < c->n_app_versions; j++)
			if (!c->app_versions[j] || !str_ok(c->app_versions[j]->min) ||
			    !str_ok(c->app_versions[j]->max))
				return -EINVAL;
		for (size_t j = 0; j < c->n_signatures; j++)
			if (!c->signatures[j] || !str_ok(c->signatures[j]->id) ||
			    !strs_ok(c->signatures[j]->methods, c->signatures[j]->n_methods))
				return -EINVAL;
	}
	return 0;
}
