/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_shuffle.c — what the shuffled transport form (tracer/FORMAT.md §3)
 * buys: a capture zstd-compressed as it is (COMPRESSION_ZSTD) against its
 * shuffled form (COMPRESSION_ZSTD_SHUFFLED), side by side in one run.
 *   bench_shuffle [capture.rvt] [level]
 * Without a file it builds bench_capture's synthetic 32 MiB capture
 * (capbuild.h's cb_program).  Each direction runs the
 * code path of its side: compression reads the capture from a memfd in
 * 64 KiB pieces through ZSTD_compressStream2 (rva_shuffler_read for the
 * shuffled form), as the daemon's uploader does; decompression is
 * ZSTD_decompressDCtx into a reused buffer (plain) or zstd's stream output
 * through an rva_unshuffler into that buffer (shuffled), as the server's
 * decoder does.  Thread CPU time, median of 7 runs each, alternating.
 * Results: server/BENCHMARKS.md, device/BENCHMARKS.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "../bench/bench_stat.h"
#include "capbuild.h"
#include "rearview/analysis.h"

#define RUNS 7

static void die(const char *what)
{
	fprintf(stderr, "bench_shuffle: %s\n", what);
	exit(1);
}

/* Compresses the memfd's capture like the uploader: 64 KiB pieces, read
 * plainly or through a shuffler.  Returns the compressed size. */
static size_t compress_fd(int fd, size_t len, int shuffled, int level, uint8_t *z, size_t zcap)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	rva_shuffler *sh = NULL;
	static uint8_t in[65536];
	ZSTD_outBuffer ob = {z, zcap, 0};
	size_t done = 0;

	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setPledgedSrcSize(cc, len);
	if (shuffled && rva_shuffler_new(fd, len, &sh))
		die("not a capture");
	for (;;) {
		ssize_t n = shuffled ? rva_shuffler_read(sh, in, sizeof in)
				     : pread(fd, in, sizeof in, (off_t)done);
		if (n < 0)
			die("read");
		done += (size_t)n;
		ZSTD_inBuffer ib = {in, (size_t)n, 0};
		ZSTD_EndDirective e = n == 0 ? ZSTD_e_end : ZSTD_e_continue;
		size_t r;
		do {
			r = ZSTD_compressStream2(cc, &ob, &ib, e);
			if (ZSTD_isError(r))
				die("zstd");
		} while (ib.pos < ib.size || (e == ZSTD_e_end && r));
		if (n == 0)
			break;
	}
	rva_shuffler_free(sh);
	ZSTD_freeCCtx(cc);
	return ob.pos;
}

/* Decompresses like the server's decoder; returns the capture length. */
static size_t decompress(ZSTD_DCtx *dc, const uint8_t *z, size_t zlen, int shuffled, uint8_t *out,
			 size_t cap)
{
	static uint8_t chunk[1 << 17];
	rva_unshuffler *u;
	size_t len = 0, r = 0;

	if (!shuffled) {
		len = ZSTD_decompressDCtx(dc, out, cap, z, zlen);
		if (ZSTD_isError(len))
			die("zstd");
		return len;
	}
	if (rva_unshuffler_new(out, cap, &u))
		die("memory");
	ZSTD_DCtx_reset(dc, ZSTD_reset_session_only);
	ZSTD_inBuffer ib = {z, zlen, 0};
	for (;;) {
		ZSTD_outBuffer ob = {chunk, sizeof chunk, 0};
		r = ZSTD_decompressStream(dc, &ob, &ib);
		if (ZSTD_isError(r) || rva_unshuffler_write(u, chunk, ob.pos))
			die("zstd");
		if (ib.pos == ib.size && ob.pos < ob.size)
			break;
	}
	if (r || rva_unshuffler_finish(u, &len))
		die("truncated");
	rva_unshuffler_free(u);
	return len;
}

int main(int argc, char **argv)
{
	int level = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 3,
	    fd = memfd_create("capture", MFD_CLOEXEC);
	double ct[2][RUNS], dt[2][RUNS];
	size_t zl[2] = {0, 0}, zcap;
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	uint8_t *z, *out;
	capbuf c = {0};

	if (argc > 1) {
		rva_error err;
		if (rva_file_read(argv[1], &c.b, &c.len, &err))
			die(err.msg);
	} else {
		cb_program(&c, 4u * 1024 * 1024, 0);
		cb_finish(&c);
	}
	if (fd < 0 || write(fd, c.b, c.len) != (ssize_t)c.len)
		die("memfd");
	zcap = ZSTD_compressBound(c.len);
	z = malloc(zcap);
	out = malloc(c.len);
	if (!z || !out)
		die("memory");
	for (int run = 0; run < RUNS; run++) {
		for (int s = 0; s < 2; s++) {
			double t0 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
			zl[s] = compress_fd(fd, c.len, s, level, z, zcap);
			double t1 = rvb_ms(CLOCK_THREAD_CPUTIME_ID);
			if (decompress(dc, z, zl[s], s, out, c.len) != c.len ||
			    memcmp(out, c.b, c.len) != 0)
				die("round trip differs");
			ct[s][run] = t1 - t0;
			dt[s][run] = rvb_ms(CLOCK_THREAD_CPUTIME_ID) - t1;
		}
	}
	printf("capture %zu bytes, zstd level %d, medians of %d (thread CPU ms)\n", c.len, level,
	       RUNS);
	printf("%-10s %12s %8s %12s %12s %14s\n", "form", "compressed", "ratio", "compress",
	       "inflate", "inflate MB/s");
	for (int s = 0; s < 2; s++) {
		double cm = rvb_sort_median(ct[s], RUNS), dm = rvb_sort_median(dt[s], RUNS);
		printf("%-10s %12zu %7.1fx %10.1f ms %10.1f ms %14.0f\n", s ? "shuffled" : "plain",
		       zl[s], (double)c.len / (double)zl[s], cm, dm, (double)c.len / 1e3 / dm);
	}
	free(z);
	free(out);
	free(c.b);
	ZSTD_freeDCtx(dc);
	close(fd);
	return 0;
}
