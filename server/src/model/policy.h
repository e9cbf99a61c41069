/* SPDX-License-Identifier: Apache-2.0 */
/*
 * policy.h — publishing the signed policy GET /v1/policy serves
 * (policy_pub.c).
 */
#ifndef RVS_POLICY_H
#define RVS_POLICY_H

#include "base/config.h"

/* policy_pub.c: when cfg->policy_file is missing, publishes librvpolicy's
 * default policy as version 1, signed with DIR/policy-signing.key.  0 when
 * published or already present, else a negative errno (logged). */
int rvs_policy_publish_default(const struct rvs_config *cfg);
/* Signs body with DIR/policy-signing.key and writes it to policy_file
 * atomically (work thread).  0 or a negative errno (logged). */
struct Rearview__PolicyBody;
int rvs_policy_publish(const struct rvs_config *cfg, const struct Rearview__PolicyBody *body);

#endif
