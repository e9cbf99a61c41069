/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capture_util.h — a small, test-only reader of capture files (FORMAT.md),
 * strict enough to reject anything the writer must never produce.  The full
 * decoder is rvtrace's; this one only serves librvtrace's tests.
 */
#ifndef RVT_TEST_CAPTURE_UTIL_H
#define RVT_TEST_CAPTURE_UTIL_H

#include <stddef.h>
#include <stdint.h>

struct cu_event {
	int entry;	/* 1 entry, 0 exit */
	uint64_t value; /* method value (entries; an exit named by EXIT_OF) */
	uint64_t ts;	/* reconstructed shifted counter */
};

struct cu_symbol {
	uint64_t value;
	char name[256];
};

struct cu_capture {
	uint32_t flags;
	uint64_t ref_counter, counter_hz, method_base, ring_slots, start_pos, end_pos;
	uint64_t slot_count;
	uint8_t shift;
	uint8_t arch; /* 1 x86-64, 2 aarch64, 3 other */
	uint32_t pid, tid;
	uint64_t *slots;
	struct cu_event *events; /* oldest first */
	size_t nevents;
	size_t nclocks;	      /* CLOCK records */
	size_t nstacks;	      /* STACK records */
	size_t nexit_of;      /* EXIT_OF records */
	size_t nlosses;	      /* LOSS records; the last one's span: */
	uint64_t loss_from;   /* full shifted counter where the loss began */
	uint32_t loss_to_low; /* low word of where it ended */
	struct cu_symbol *symbols;
	size_t nsymbols;
	size_t nmodules;
	char exe[512];
	char thread_name[64];
	int has_cmdline;
	/* A CHECKSUM record verified (required: cu_parse fails without). */
	int checksummed;
	/* The ANOMALY record, if any (has_anomaly). */
	int has_anomaly;
	uint32_t anomaly_kind, anomaly_severity;
	uint64_t anomaly_monotonic_ns;
	char anomaly_name[128];
};

/* Parses and decodes `buf`; returns 0 or a negative errno (-EBADMSG when a
 * slot or record is malformed). */
int cu_parse(const uint8_t *buf, size_t len, struct cu_capture *c);
int cu_parse_fd(int fd, struct cu_capture *c);
int cu_parse_file(const char *path, struct cu_capture *c);
void cu_release(struct cu_capture *c);
/* The symbol name of a value, or NULL. */
const char *cu_name(const struct cu_capture *c, uint64_t value);
/* Index of the first event at or after `from` that enters `name`, or -1. */
long cu_find_entry(const struct cu_capture *c, const char *name, size_t from);
/* Renders the frames of `c` whose names start with `prefix` ("" all) as a
 * tree, an entry "name(" and its exit ")", into a new string (caller frees;
 * NULL when out of memory).  Unknown names are "?"; the frames of other
 * names are left out, their children kept. */
char *cu_render_tree(const struct cu_capture *c, const char *prefix);

#endif
