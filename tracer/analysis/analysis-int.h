/*
 * analysis-int.h — private to librvanalysis: helpers its source files share.
 */
#ifndef RVANALYSIS_ANALYSIS_INT_H
#define RVANALYSIS_ANALYSIS_INT_H

#include "rearview/analysis.h"

/* Formats the message of a failure into err->msg (err may be NULL: the
 * message is dropped) and returns rc, a negative errno, so a decoder can
 * `return rva_fail(err, -EINVAL, "…", …);`.  The message is truncated to
 * fit; err->msg is always NUL-terminated. */
__attribute__((format(printf, 3, 4))) int rva_fail(rva_error *err, int rc, const char *fmt, ...);

#endif
