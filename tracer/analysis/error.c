/* SPDX-License-Identifier: Apache-2.0 */
/*
 * error.c — rva_fail(), the one way librvanalysis fills an rva_error
 * (analysis-int.h).
 *
 * Invariant: rc is a negative errno; the message never overflows err->msg.
 */
#include "analysis-int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>

int rva_fail(rva_error *err, int rc, const char *fmt, ...)
{
	assert(rc < 0);
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return rc;
}
