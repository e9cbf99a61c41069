/* SPDX-License-Identifier: Apache-2.0 */
/*
 * search.h — chain patterns (search.c), what chain search (the JSON API's
 * GET /api/v1/search, api/search.h) matches stored chains against.  Pure
 * functions of their arguments, safe on any thread.
 */
#ifndef RVS_SEARCH_H
#define RVS_SEARCH_H

#include <stddef.h>

/* A chain pattern: frames separated by " > " (a '>' with whitespace on
 * both sides, so "std::map<int>" stays one name); each element is a method
 * name matched whole, or "*": any run of frames, zero included.  The
 * pattern matches anywhere in a chain (unanchored at both ends). */
#define RVS_PAT_MAX	 16  /* elements */
#define RVS_PAT_NAME_MAX 512 /* bytes of one name */
struct rvs_chain_pat {
	size_t n;		     /* elements, consecutive stars merged */
	const char *el[RVS_PAT_MAX]; /* into buf; NULL for "*" */
	size_t len[RVS_PAT_MAX];     /* name lengths */
	char buf[RVS_PAT_MAX * (RVS_PAT_NAME_MAX + 1)];
};

/* Parses text into *p.  0, or -EINVAL: empty element, a name over
 * RVS_PAT_NAME_MAX, more than RVS_PAT_MAX elements, or no name at all
 * (a pattern of stars only). */
int rvs_chain_pattern_parse(const char *text, struct rvs_chain_pat *p);

/* Whether p matches frames[0..n) (names of lens[i] bytes, root first): 1
 * with [*from, *to) the frames matched (the leftmost match: each run of
 * names between stars at its earliest place after the previous one), else
 * 0.  Time O(n × elements): no backtracking beyond one run. */
int rvs_chain_match(const struct rvs_chain_pat *p, const char *const *frames, const size_t *lens,
		    size_t n, size_t *from, size_t *to);

/* The longest text every stored chain p matches must hold (a chain is its
 * names root first, each followed by ';'): p's run of adjacent names with
 * the most bytes, each followed by ';' ("a > b > * > c" gives "a;b;").  A
 * store's prefilter (strpos, instr) before rvs_chain_match.  Written to
 * buf (cap bytes, at least RVS_PAT_NEEDLE_MAX), NUL-terminated; returns
 * its length.  p has a name (rvs_chain_pattern_parse's promise). */
#define RVS_PAT_NEEDLE_MAX (RVS_PAT_MAX * (RVS_PAT_NAME_MAX + 1) + 1)
size_t rvs_chain_pattern_needle(const struct rvs_chain_pat *p, char *buf, size_t cap);

#endif
