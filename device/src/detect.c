/* SPDX-License-Identifier: Apache-2.0 */
/*
 * detect.c — the pure detectors declared in detect.h, plus the sysfs reader
 * for the thermal detector.  Invariant: the rvd_*_feed/eval functions touch
 * only their arguments, so they are deterministic and safe to unit-test.
 */
#include "detect.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t clamp_severity(uint64_t num, uint64_t den)
{
	/* Severity grows with how far past the limit we are: 2x → 50, ≥4x → 100. */
	uint64_t s = den ? (num * 25) / den : 100;

	return s > 100 ? 100 : (uint32_t)s;
}

int rvd_jank_feed(const struct rvd_jank_config *cfg, struct rvd_jank_state *st, pid_t pid,
		  pid_t tid, uint64_t start_ns, uint64_t end_ns, struct rvd_anomaly *out)
{
	uint64_t dur;

	if (end_ns < start_ns)
		return -EINVAL;
	dur = end_ns - start_ns;
	if (dur <= cfg->budget_ns) {
		st->late = 0;
		st->worst_ns = 0;
		return 0;
	}
	st->late++;
	if (dur > st->worst_ns) {
		st->worst_ns = dur;
		st->worst_mid_ns = start_ns + dur / 2;
	}
	if (st->late < cfg->frames)
		return 0;
	memset(out, 0, sizeof(*out));
	out->kind = RVD_ANOMALY_JANK;
	out->severity = clamp_severity(st->worst_ns, cfg->budget_ns);
	out->pid = pid;
	out->tid = tid;
	out->monotonic_ns = end_ns;
	out->focus_ns = st->worst_mid_ns;
	snprintf(out->detail, sizeof(out->detail), "%u frames over %llu us, worst %llu us",
		 st->late, (unsigned long long)(cfg->budget_ns / 1000),
		 (unsigned long long)(st->worst_ns / 1000));
	st->late = 0;
	st->worst_ns = 0;
	return 1;
}

int rvd_touch_eval(uint64_t threshold_ns, pid_t pid, pid_t tid, uint64_t detected_ns,
		   uint64_t delivered_ns, uint64_t responded_ns, struct rvd_anomaly *out)
{
	uint64_t total, delivery, app;

	if (delivered_ns < detected_ns || responded_ns < delivered_ns)
		return -EINVAL;
	total = responded_ns - detected_ns;
	if (total <= threshold_ns)
		return 0;
	delivery = delivered_ns - detected_ns;
	app = responded_ns - delivered_ns;
	memset(out, 0, sizeof(*out));
	out->kind = RVD_ANOMALY_TOUCH;
	out->severity = clamp_severity(total, threshold_ns);
	out->pid = pid;
	out->tid = tid;
	out->monotonic_ns = responded_ns;
	out->focus_ns = delivered_ns + app / 2;
	out->attribution = delivery > app ? RVD_TOUCH_DELIVERY : RVD_TOUCH_APP;
	snprintf(out->detail, sizeof(out->detail), "touch %llu ms (delivery %llu, app %llu)",
		 (unsigned long long)(total / 1000000), (unsigned long long)(delivery / 1000000),
		 (unsigned long long)(app / 1000000));
	return 1;
}

static bool too_far_ahead(uint64_t t, uint64_t now)
{
	return t > now && t - now > RVD_MAX_AHEAD_NS;
}

const char *rvd_frame_impossible(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns,
				 uint64_t now_ns)
{
	if (end_ns < start_ns)
		return "frame ends before it starts";
	if (deadline_ns && deadline_ns < start_ns)
		return "frame deadline before its start";
	if (too_far_ahead(end_ns, now_ns))
		return "frame end in the future";
	return NULL;
}

const char *rvd_touch_impossible(uint64_t detected_ns, uint64_t delivered_ns, uint64_t handled_ns,
				 uint64_t responded_ns, uint64_t now_ns)
{
	if (delivered_ns < detected_ns)
		return "input delivered before it happened";
	if (responded_ns < delivered_ns)
		return "input presented before it was delivered";
	if (handled_ns && (handled_ns < delivered_ns || handled_ns > responded_ns))
		return "input handled outside delivered..presented";
	if (too_far_ahead(responded_ns, now_ns))
		return "input presented in the future";
	return NULL;
}

bool rvd_thermal_is_throttling(const struct rvd_thermal_snapshot *s)
{
	for (unsigned i = 0; i < s->ncooling; i++)
		if (s->cooling_state[i] > 0)
			return true;
	for (unsigned i = 0; i < s->nzones; i++) {
		long trip = s->trip_mc > 0 ? s->trip_mc : s->passive_mc[i];

		if (trip != LONG_MAX && s->temp_mc[i] >= trip)
			return true;
	}
	return false;
}

int rvd_thermal_feed(bool *throttling, const struct rvd_thermal_snapshot *s, uint64_t now_ns,
		     struct rvd_anomaly *out)
{
	bool now = rvd_thermal_is_throttling(s);
	bool entered = now && !*throttling;
	long hottest = LONG_MIN;

	*throttling = now;
	if (!entered)
		return 0;
	for (unsigned i = 0; i < s->nzones; i++)
		if (s->temp_mc[i] > hottest)
			hottest = s->temp_mc[i];
	memset(out, 0, sizeof(*out));
	out->kind = RVD_ANOMALY_THERMAL;
	out->severity = 50;
	out->monotonic_ns = now_ns;
	snprintf(out->detail, sizeof(out->detail), "entered throttling, hottest %ld mC",
		 s->nzones ? hottest : 0);
	return 1;
}

/* Reads a small sysfs file holding one integer. */
static int read_long(int dirfd, const char *name, long *out)
{
	char buf[64], *end;
	ssize_t n;
	long v;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	buf[n] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || (*end != '\0' && *end != '\n'))
		return -EINVAL;
	*out = v;
	return 0;
}

static int read_word(int dirfd, const char *name, char *buf, size_t cap)
{
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The lowest passive/hot trip point of one zone, LONG_MAX if none. */
static long zone_passive(int zfd)
{
	long best = LONG_MAX;

	for (int i = 0; i < 16; i++) {
		char name[48], type[32];
		long t;

		snprintf(name, sizeof(name), "trip_point_%d_type", i);
		if (read_word(zfd, name, type, sizeof(type)) < 0)
			break;
		if (strcmp(type, "passive") && strcmp(type, "hot"))
			continue;
		snprintf(name, sizeof(name), "trip_point_%d_temp", i);
		if (read_long(zfd, name, &t) == 0 && t > 0 && t < best)
			best = t;
	}
	return best;
}

int rvd_thermal_read(const char *root, struct rvd_thermal_snapshot *s)
{
	struct dirent *de;
	DIR *dir;

	memset(s, 0, sizeof(*s));
	dir = opendir(root);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(dir)) != NULL) {
		bool zone = !strncmp(de->d_name, "thermal_zone", 12);
		bool cool = !strncmp(de->d_name, "cooling_device", 14);
		int fd;
		long v;

		if (!zone && !cool)
			continue;
		fd = openat(dirfd(dir), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (zone && s->nzones < RVD_THERMAL_MAX && read_long(fd, "temp", &v) == 0) {
			s->temp_mc[s->nzones] = v;
			s->passive_mc[s->nzones] = zone_passive(fd);
			s->nzones++;
		} else if (cool && s->ncooling < RVD_THERMAL_MAX &&
			   read_long(fd, "cur_state", &v) == 0) {
			s->cooling_state[s->ncooling++] = v;
		}
		close(fd);
	}
	closedir(dir);
	return 0;
}

void rvd_corr_sample(const struct rvd_corr_config *cfg, struct rvd_corr_state *st, const char *name,
		     double value, uint64_t at_ns)
{
	if (strcmp(name, cfg->metric))
		return;
	st->have = true;
	st->value = value;
	st->at_ns = at_ns;
}

int rvd_corr_check(const struct rvd_corr_config *cfg, const struct rvd_corr_state *st,
		   const struct rvd_anomaly *jank, struct rvd_anomaly *out)
{
	if (jank->kind != RVD_ANOMALY_JANK || !st->have || !(st->value >= cfg->threshold))
		return 0;
	/* The sample must describe the jank's moment: not too old, not from the future. */
	if (st->at_ns > jank->monotonic_ns + cfg->window_ns ||
	    jank->monotonic_ns > st->at_ns + cfg->window_ns)
		return 0;
	*out = *jank;
	out->kind = RVD_ANOMALY_GENERIC;
	out->severity = jank->severity < 75 ? jank->severity + 25 : 100;
	snprintf(out->name, sizeof(out->name), "%.40s_jank", cfg->metric);
	snprintf(out->detail, sizeof(out->detail), "jank while %.40s=%.2f", cfg->metric, st->value);
	return 1;
}
