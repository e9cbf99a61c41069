/* SPDX-License-Identifier: Apache-2.0 */
/*
 * detect.h — rearviewd's anomaly detectors (Hubble §4.2.1) as pure modules:
 * they take reports and state, and return whether an anomaly fired.  No I/O,
 * no clock reads, no allocation — the daemon feeds them and the unit tests
 * drive them directly.  Thermal sysfs reading is separate (rvd_thermal_read)
 * because it blocks and runs on the work queue.
 */
#ifndef RVD_DETECT_H
#define RVD_DETECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Anomaly kinds: the values of rearview.AnomalyKind. */
enum rvd_anomaly_kind {
	RVD_ANOMALY_JANK = 1,
	RVD_ANOMALY_TOUCH = 2,
	RVD_ANOMALY_THERMAL = 3,
	RVD_ANOMALY_GENERIC = 4,
	RVD_ANOMALY_MANUAL = 5,
};

/* Touch attribution: the values of rearview.TouchAttribution. */
enum rvd_touch_attr {
	RVD_TOUCH_NONE = 0,
	RVD_TOUCH_DELIVERY = 1,
	RVD_TOUCH_APP = 2,
};

struct rvd_anomaly {
	int kind;	   /* enum rvd_anomaly_kind */
	uint32_t severity; /* 0..100 */
	pid_t pid;	   /* 0: system-wide (thermal) */
	pid_t tid;
	uint64_t monotonic_ns; /* when it fired, CLOCK_MONOTONIC */
	uint64_t focus_ns;     /* the instant it is about (Anomaly.focus_monotonic_ns), 0: fired */
	int attribution;       /* enum rvd_touch_attr, touch only */
	char name[48];	       /* generic/correlated anomaly name */
	char detail[96];       /* short human text, never user data */
};

/*
 * How the policy chose a capture (rearview.Selection): the campaign, the
 * kind (rearview.SelectionKind: 0 unknown, 1 sampled, 2 first-N, 3 most
 * severe, 4 manual), the campaign's sampling probability and the week's
 * candidates seen and taken as of the decision.
 */
struct rvd_selection {
	char campaign[129]; /* at most the 128 bytes the server takes */
	int kind;
	double probability;
	uint32_t seen, taken;
};

/* --- jank: K consecutive frames over the budget ------------------------- */
struct rvd_jank_config {
	uint32_t frames;    /* K >= 1 */
	uint64_t budget_ns; /* a frame longer than this is late */
};

struct rvd_jank_state {
	uint32_t late; /* consecutive late frames so far */
	uint64_t worst_ns;
	uint64_t worst_mid_ns; /* the middle of the worst late frame: the focus */
};

/*
 * Feeds one frame.  Returns 1 and fills *out when this frame is the K-th
 * consecutive late one (the count then restarts, so K more late frames fire
 * again), 0 otherwise, -EINVAL for a frame that ends before it starts.
 */
int rvd_jank_feed(const struct rvd_jank_config *cfg, struct rvd_jank_state *st, pid_t pid,
		  pid_t tid, uint64_t start_ns, uint64_t end_ns, struct rvd_anomaly *out);

/* --- touch latency: detected → delivered → responded --------------------- */
/*
 * Returns 1 and fills *out when responded − detected exceeds threshold_ns,
 * attributing the delay to whichever leg is longer; 0 when within the
 * threshold; -EINVAL when the timestamps are not in order.
 */
int rvd_touch_eval(uint64_t threshold_ns, pid_t pid, pid_t tid, uint64_t detected_ns,
		   uint64_t delivered_ns, uint64_t responded_ns, struct rvd_anomaly *out);

/* --- reports whose times cannot happen ----------------------------------- */
/* How far past the daemon's now a reported time may lie (clock reads on
 * different CPUs, a predicted presentation); librvevents uses the same. */
#define RVD_MAX_AHEAD_NS 1000000000ull

/*
 * NULL when a FrameReport's times can happen, else why not (static text):
 * it ends before it starts, its deadline (0: none) precedes its start, or
 * its end lies more than RVD_MAX_AHEAD_NS past `now_ns` (CLOCK_MONOTONIC).
 */
const char *rvd_frame_impossible(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns,
				 uint64_t now_ns);

/*
 * The same for a TouchReport: detected ≤ delivered ≤ handled ≤ responded
 * (handled 0: unknown, not checked), responded not more than
 * RVD_MAX_AHEAD_NS past `now_ns`.
 */
const char *rvd_touch_impossible(uint64_t detected_ns, uint64_t delivered_ns, uint64_t handled_ns,
				 uint64_t responded_ns, uint64_t now_ns);

/* --- thermal: throttling from zones and cooling devices ------------------- */
#define RVD_THERMAL_MAX 32

struct rvd_thermal_snapshot {
	unsigned nzones;
	long temp_mc[RVD_THERMAL_MAX];	  /* millidegrees C */
	long passive_mc[RVD_THERMAL_MAX]; /* lowest passive/hot trip, LONG_MAX if none */
	unsigned ncooling;
	long cooling_state[RVD_THERMAL_MAX];
	/* The policy's thermal trip (DetectorThresholds.thermal_trip_mc), set
	 * by the daemon after reading: > 0 replaces every zone's own trip
	 * points; 0 keeps them.  rvd_thermal_read sets it to 0. */
	long trip_mc;
};

/* True when any zone is at or over its trip (the policy's trip_mc when set,
 * else its lowest passive/hot trip point) or any cooling device is active. */
bool rvd_thermal_is_throttling(const struct rvd_thermal_snapshot *s);

/*
 * Feeds a snapshot; *throttling carries the previous verdict.  Returns 1
 * and fills *out on entering throttling, 0 otherwise.
 */
int rvd_thermal_feed(bool *throttling, const struct rvd_thermal_snapshot *s, uint64_t now_ns,
		     struct rvd_anomaly *out);

/*
 * Reads thermal_zone* and cooling_device* under `root` (a sysfs
 * /sys/class/thermal or a fake tree).  Blocking file I/O: work queue only.
 * Returns 0 (a missing root is an empty snapshot) or a negative errno.
 */
int rvd_thermal_read(const char *root, struct rvd_thermal_snapshot *s);

/* --- correlation: jank while a metric (e.g. gpu_busy) is high ----------- */
struct rvd_corr_config {
	const char *metric; /* borrowed */
	double threshold;
	uint64_t window_ns; /* a sample older than this no longer counts */
};

struct rvd_corr_state {
	bool have;
	double value;
	uint64_t at_ns;
};

/* Records a metric sample; samples of other metrics are ignored. */
void rvd_corr_sample(const struct rvd_corr_config *cfg, struct rvd_corr_state *st, const char *name,
		     double value, uint64_t at_ns);

/*
 * Given a jank anomaly, returns 1 and fills *out with the correlated
 * anomaly (GENERIC, name "<metric>_jank") when the metric was high within
 * the window before the jank; 0 otherwise.
 */
int rvd_corr_check(const struct rvd_corr_config *cfg, const struct rvd_corr_state *st,
		   const struct rvd_anomaly *jank, struct rvd_anomaly *out);

#endif
