/* SPDX-License-Identifier: Apache-2.0 */
/* policy_int.h — private parts shared by the files of policy/src. */
#ifndef REARVIEW_POLICY_INT_H
#define REARVIEW_POLICY_INT_H

#include "rearview/policy.h"

/*
 * rvp_policy_verify() with the time checks optional: the store re-verifies
 * its own saved document at open without judging expiry (an expired saved
 * document is kept as "last good" and reported by rvp_store_current).
 */
int rvp_verify_doc(const uint8_t *doc, size_t len, const char *pub_pem, uint64_t min_version,
		   int64_t now_s, int check_time, Rearview__PolicyBody **body_out);

#endif
