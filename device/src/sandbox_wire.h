/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox_wire.h — the request and answer between rearviewd and its
 * capture-parsing worker (sandbox.c, sandbox_worker.c).  Both ends are the
 * same executable, so the structs go as they are.  Private to the two.
 */
#ifndef RVD_SANDBOX_WIRE_H
#define RVD_SANDBOX_WIRE_H

#include <stdint.h>

/* The worker's end of its channel. */
#define RVD_SANDBOX_FD 3

#define SB_MAGIC      0x52564453u /* "SDVR" */
#define SB_OP_CHECK   1u
#define SB_OP_SUMMARY 2u
/* Longest reason text a failed request carries. */
#define SB_WHY_MAX 256u

struct sb_req {
	uint32_t magic;
	uint32_t op;
	uint64_t len;	  /* bytes of the capture (first descriptor) */
	uint64_t aux_len; /* bytes of the packed PolicyBody (second one), 0: none */
	uint64_t reserved;
};

struct sb_ans {
	uint32_t magic;
	int32_t status; /* 0, or a negative errno with the reason as text */
	uint64_t len;	/* bytes that follow */
};

/* The worker's first message, once it has confined itself and before it
 * reads a request: an sb_ans with this status and no bytes.  Never an
 * answer's status (0 or a negative errno). */
#define SB_HELLO 1

#endif
