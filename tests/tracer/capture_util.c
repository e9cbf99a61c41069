/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capture_util.c — test-only capture reader (see capture_util.h).
 * Decodes the slots backwards (FORMAT.md §1) and reconstructs timestamps.
 */
#include "capture_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * Backwards, records split into events and markers; then each event's high
 * word: that of the last CLOCK record before it (FORMAT.md §1: every slot
 * after a CLOCK shares its high word), else — before the oldest CLOCK, or
 * with none — Hubble's rule walking back from the oldest CLOCK, or from the
 * reference counter.
 */
static int decode(struct cu_capture *c)
{
	size_t n = c->slot_count;
	struct cu_event *ev = calloc(n ? n : 1, sizeof(*ev));
	int64_t *clock = calloc(n ? n : 1, sizeof(*clock)); /* per event: hi or -1 */
	if (!ev || !clock) {
		free(ev);
		free(clock);
		return -ENOMEM;
	}
	size_t k = n; /* fill from the back */
	for (size_t i = n; i-- > 0;) {
		uint64_t s = c->slots[i];
		uint32_t low = (uint32_t)s;
		struct cu_event e = {0};
		e.ts = s >> 32;
		if (low >= 1 && low <= 15) {
			if (i == 0) {
				/* only legal as the damaged oldest slot of a wrapped ring */
				if (!(c->flags & 1))
					goto bad;
				break;
			}
			uint64_t v = c->slots[--i];
			if (low == 2) { /* CLOCK: the full shifted counter */
				if ((uint32_t)v != (uint32_t)e.ts)
					goto bad;
				c->nclocks++;
				/* The newer events up to the next CLOCK share v's high word. */
				for (size_t j = k; j < n && clock[j] == -2; j++)
					clock[j] = (int64_t)(v >> 32);
				continue;
			}
			if (low == 3) { /* LOSS: from v to this slot's time */
				c->nlosses++;
				c->loss_from = v;
				c->loss_to_low = (uint32_t)e.ts;
				continue;
			}
			if (low == 5) { /* STACK: its FRAME pairs come before it */
				c->nstacks++;
				continue;
			}
			if (low == 6) { /* EXIT_OF: names the exit just after it */
				if (k == n || ev[k].entry)
					goto bad;
				ev[k].value = v;
				c->nexit_of++;
				continue;
			}
			if (low != 1)
				continue; /* FRAME, reserved marker: skipped */
			e.entry = 1;
			e.value = v;
			if ((e.value >> 32) == 0) /* would have been one slot */
				goto bad;
		} else if (low == 0) {
			e.entry = 0;
		} else {
			e.entry = 1;
			e.value = low;
		}
		ev[--k] = e;
		clock[k] = -2; /* not yet known */
	}
	/* Events never claimed by a CLOCK: Hubble's rule backwards from the
	 * oldest CLOCK's (hi, ts), or from the reference counter. */
	size_t m = n - k;
	memmove(ev, ev + k, m * sizeof(*ev));
	memmove(clock, clock + k, m * sizeof(*clock));
	uint64_t ref = c->ref_counter >> c->shift;
	uint64_t hi = ref >> 32, prev = ref & 0xffffffffu;
	size_t first_known = m;
	for (size_t j = 0; j < m; j++)
		if (clock[j] >= 0) {
			first_known = j;
			break;
		}
	if (first_known < m) {
		hi = (uint64_t)clock[first_known];
		prev = ev[first_known].ts;
	}
	for (size_t j = first_known; j-- > 0;) {
		if (ev[j].ts > prev)
			hi--;
		prev = ev[j].ts;
		ev[j].ts = hi << 32 | ev[j].ts;
	}
	for (size_t j = first_known; j < m; j++) {
		if (clock[j] >= 0)
			hi = (uint64_t)clock[j];
		ev[j].ts = hi << 32 | ev[j].ts;
	}
	free(clock);
	c->events = ev;
	c->nevents = m;
	return 0;
bad:
	free(ev);
	free(clock);
	return -EBADMSG;
}

int cu_parse(const uint8_t *b, size_t len, struct cu_capture *c)
{
	memset(c, 0, sizeof(*c));
	static const uint8_t magic[8] = {0x52, 0x56, 0x43, 0x41, 0x50, 0x00, 0x0d, 0x0a};
	if (len < 128 || memcmp(b, magic, 8) != 0 || le(b + 8, 2) < 1 || le(b + 8, 2) > 2 ||
	    le(b + 10, 2) < 128)
		return -EBADMSG;
	c->flags = (uint32_t)le(b + 12, 4);
	c->ref_counter = le(b + 16, 8);
	c->counter_hz = le(b + 40, 8);
	c->shift = b[48];
	c->arch = b[49];
	c->pid = (uint32_t)le(b + 52, 4);
	c->tid = (uint32_t)le(b + 56, 4);
	c->method_base = le(b + 64, 8);
	c->ring_slots = le(b + 72, 8);
	c->start_pos = le(b + 80, 8);
	c->end_pos = le(b + 88, 8);
	c->slot_count = le(b + 96, 8);
	uint64_t so = le(b + 104, 8), mo = le(b + 112, 8), fs = le(b + 120, 8);
	if (fs != len || so % 8 || so < 128 || c->slot_count > c->ring_slots ||
	    c->ring_slots > (1ull << 32) || mo != so + 8 * c->slot_count || mo > len ||
	    c->shift > 31 || c->start_pos >= c->ring_slots || c->end_pos >= c->ring_slots)
		return -EBADMSG;
	c->slots = malloc(c->slot_count * 8 + 8);
	if (!c->slots)
		return -ENOMEM;
	for (uint64_t i = 0; i < c->slot_count; i++)
		c->slots[i] = le(b + so + 8 * i, 8);
	c->symbols = calloc(len / 32 + 1, sizeof(*c->symbols));
	if (!c->symbols)
		return -ENOMEM;
	size_t off = mo;
	int end = 0;
	while (off + 8 <= len) {
		uint16_t type = (uint16_t)le(b + off, 2);
		uint32_t l = (uint32_t)le(b + off + 4, 4);
		const uint8_t *v = b + off + 8;
		size_t next = off + 8 + ((l + 7u) & ~7u);
		if (next > len)
			return -EBADMSG;
		if (type == 0xffff) {
			end = next == len && l == 0;
			break;
		}
		if (type == 1 && l < sizeof(c->exe)) {
			memcpy(c->exe, v, l);
			c->exe[l] = 0;
		} else if (type == 2) {
			c->has_cmdline = l > 0 && v[l - 1] == 0;
		} else if (type == 3 && l < sizeof(c->thread_name)) {
			memcpy(c->thread_name, v, l);
			c->thread_name[l] = 0;
		} else if (type == 4) {
			if (l < 32 || le(v + 4, 4) > l - 32 || le(v, 4) != c->nmodules)
				return -EBADMSG;
			c->nmodules++;
		} else if (type == 8) {
			/* CHECKSUM: XXH3-64 of every byte before this record. */
			if (l != 16 || le(v, 4) != 1 || le(v + 8, 8) != XXH3_64bits(b, off))
				return -EBADMSG;
			c->checksummed = 1;
		} else if (type == 6) {
			if (l < 16)
				return -EBADMSG;
			c->has_anomaly = 1;
			c->anomaly_kind = (uint32_t)le(v, 4);
			c->anomaly_severity = (uint32_t)le(v + 4, 4);
			c->anomaly_monotonic_ns = le(v + 8, 8);
			size_t nl = l - 16 < sizeof(c->anomaly_name) - 1
					    ? l - 16
					    : sizeof(c->anomaly_name) - 1;
			memcpy(c->anomaly_name, v + 16, nl);
			c->anomaly_name[nl] = 0;
		} else if (type == 5) {
			if (l < 24 || le(v + 20, 4) != l - 24)
				return -EBADMSG;
			uint32_t mod = (uint32_t)le(v + 16, 4);
			if (mod != 0xffffffffu && mod >= c->nmodules)
				return -EBADMSG;
			struct cu_symbol *s = &c->symbols[c->nsymbols++];
			s->value = le(v, 8);
			size_t nl = l - 24 < sizeof(s->name) - 1 ? l - 24 : sizeof(s->name) - 1;
			memcpy(s->name, v + 24, nl);
			s->name[nl] = 0;
		}
		off = next;
	}
	/* Every capture this library writes says it is checksummed (flags bit 2),
	 * and then carries a CHECKSUM that matched above. */
	if (!end || !(le(b + 12, 4) & 4u) || !c->checksummed)
		return -EBADMSG;
	return decode(c);
}

int cu_parse_fd(int fd, struct cu_capture *c)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	uint8_t *b = malloc((size_t)st.st_size + 1);
	if (!b)
		return -ENOMEM;
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = pread(fd, b + got, (size_t)st.st_size - got, (off_t)got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	int rc = got == (size_t)st.st_size ? cu_parse(b, got, c) : -EIO;
	free(b);
	return rc;
}

int cu_parse_file(const char *path, struct cu_capture *c)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = cu_parse_fd(fd, c);
	close(fd);
	return rc;
}

void cu_release(struct cu_capture *c)
{
	free(c->slots);
	free(c->events);
	free(c->symbols);
	memset(c, 0, sizeof(*c));
}

const char *cu_name(const struct cu_capture *c, uint64_t value)
{
	for (size_t i = 0; i < c->nsymbols; i++)
		if (c->symbols[i].value == value)
			return c->symbols[i].name;
	return NULL;
}

long cu_find_entry(const struct cu_capture *c, const char *name, size_t from)
{
	for (size_t i = from; i < c->nevents; i++) {
		if (!c->events[i].entry)
			continue;
		const char *n = cu_name(c, c->events[i].value);
		if (n && strcmp(n, name) == 0)
			return (long)i;
	}
	return -1;
}

char *cu_render_tree(const struct cu_capture *c, const char *prefix)
{
	size_t cap = 4096, len = 0, depth = 0;
	char *out = malloc(cap);
	unsigned char *keep = calloc(c->nevents + 1, 1);
	if (!out || !keep)
		goto fail;
	out[0] = '\0';
	for (size_t i = 0; i < c->nevents; i++) {
		const char *s = ")", *open = "";
		if (c->events[i].entry) {
			const char *n = cu_name(c, c->events[i].value);
			s = n ? n : "?";
			open = "(";
			keep[depth++] = strncmp(s, prefix, strlen(prefix)) == 0;
			if (!keep[depth - 1])
				continue;
		} else if (depth == 0 || !keep[--depth]) {
			continue;
		}
		size_t n = strlen(s) + 2;
		if (len + n >= cap) {
			char *bigger = realloc(out, cap = 2 * (len + n));
			if (!bigger)
				goto fail;
			out = bigger;
		}
		len += (size_t)snprintf(out + len, cap - len, "%s%s", s, open);
	}
	free(keep);
	return out;
fail:
	free(out);
	free(keep);
	return NULL;
}
