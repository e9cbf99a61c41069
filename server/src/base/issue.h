/* SPDX-License-Identifier: Apache-2.0 */
/*
 * issue.h — issues: anomaly signatures folded so that chains differing only
 * by leading "(unknown caller)" frames (a capture whose ring began inside
 * those calls, tracer/FORMAT.md §1) count as one issue (server/SCHEMA.md,
 * traces.issue).  Pure functions; any thread.  (Its SQL face, rvs_issue(),
 * is the sqlite store's: store_sqlite_search.c.)
 */
#ifndef RVS_ISSUE_H
#define RVS_ISSUE_H

/* The issue of an anomaly chain stored as `chain` ("name;name;…;", root
 * first, decode.c's form) with signature `signature` (16 hex digits): when
 * the chain starts with "(unknown caller);" frames, the rva_signature
 * (FNV-1a over normalized names) of the chain without them, else
 * `signature` itself.  A chain of nothing but unknown callers keeps its
 * signature.  Writes 16 lowercase hex digits and a NUL into out.  0, or
 * -EINVAL when signature is not 16 hex digits, -ENOMEM. */
int rvs_issue_fold(const char *chain, const char *signature, char out[17]);

/* 1 when s is an issue id (16 lowercase hex digits, nothing else), else 0. */
int rvs_issue_id_ok(const char *s);

#endif
