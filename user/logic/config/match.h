/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Matches: which destinations a [dependency] covers, CIDR[:PORT[-PORT]].
 * The one home of "the most specific match wins": the longest prefix, and
 * among equal prefixes the narrowest port range. The config parser checks
 * that every destination has a unique winner (dw_match_check), user space
 * looks winners up (dw_config_lookup), and the kernel finds the same one
 * in its LPM trie, whose entries dw_match_entries builds.
 *
 * Pure: no I/O; what allocates says so.
 */
#ifndef DW_MATCH_H
#define DW_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logic/base/dwtypes.h"

/* Room for dw_match_format() of any match, NUL included. */
#define DW_MATCH_STRLEN 64

struct dw_config;

struct dw_match {
	uint8_t family;		/* AF_INET or AF_INET6; IPv4-mapped IPv6 becomes AF_INET */
	uint8_t prefix_len;
	uint8_t addr[16];	/* network byte order, host bits zero; IPv4 in the first 4 */
	uint16_t port_lo, port_hi;	/* inclusive; 0-65535 when the match names no port */
	int line;
};

/*
 * text as CIDR[:PORT[-PORT]], IPv6 as [CIDR][:PORT[-PORT]], into *m (line
 * 0). 0, -EINVAL with why = "match 'TEXT': what is wrong" (cut to len),
 * or -ENOMEM (it works on a copy of text).
 */
int dw_match_parse(const char *text, struct dw_match *m, char *why, size_t len);

/* m as config text: "10.0.3.0/24:443", "[2001:db8::/32]:80-90", "0.0.0.0/0". */
void dw_match_format(const struct dw_match *m, char *buf, size_t len);

/* Whether outer's prefix holds inner's (same family, shorter or equal prefix); ports aside. */
bool dw_match_covers(const struct dw_match *outer, const struct dw_match *inner);

/*
 * (family, addr) as matches see it: IPv4-mapped IPv6 becomes IPv4, as the
 * kernel's dest_of does. addr is 4 bytes for AF_INET, 16 for AF_INET6;
 * out gets 16, zero after an IPv4 address. The family, or -1 for others.
 */
int dw_match_addr(int family, const uint8_t *addr, uint8_t out[16]);

/* One match of the config, named by its dependency, for dw_match_check. */
struct dw_match_ref {
	const struct dw_match *m;
	const char *dep;
	unsigned group_end;	/* dw_match_check's own */
};

/* A problem dw_match_check found: at line (sub orders several on one line). */
typedef void (*dw_match_report_fn)(void *ctx, int line, int sub, const char *msg);

/*
 * The checks that need every match: two that overlap with no more
 * specific winner, and a prefix covered by more than DW_MATCH_RULES
 * matches (the kernel's trie has that many slots). Each problem goes to
 * report; src names the file in the messages. Sorts r. 0 or -ENOMEM.
 */
int dw_match_check(struct dw_match_ref *r, unsigned n, const char *src,
		   dw_match_report_fn report, void *ctx);

/*
 * The most specific match covering (family, addr, port): the dependency
 * index, or -1. addr is 4 bytes for AF_INET, 16 for AF_INET6; IPv4-mapped
 * IPv6 is looked up as IPv4. The config guarantees a unique winner.
 */
int dw_config_lookup(const struct dw_config *cfg, int family, const uint8_t *addr, uint16_t port);

/* One entry of the kernel's dep_match trie. */
struct dw_match_entry {
	struct dw_match_key key;
	struct dw_match_rules rules;
};

/* The trie key of a prefix: the family as a big-endian __u32, then the address. */
void dw_match_key_of(int family, const uint8_t *addr, unsigned prefix_len,
		     struct dw_match_key *key);

/*
 * The entries of the kernel's dep_match trie for cfg: one per distinct
 * prefix, holding every match that covers it (ports aside), most specific
 * first (longer prefix, then narrower port range, then file order). So the
 * trie's longest prefix, then its first rule holding the port, is
 * dw_config_lookup's answer.
 *
 * dep_ids[i] is the kernel's id of cfg->deps[i] (NULL: i + 1). *out is
 * malloc'd (NULL with no matches), *n entries, sorted by key. 0, -ENOMEM,
 * or -E2BIG when more than DW_MATCH_RULES matches cover a prefix (a parsed
 * config never has that), *over (if not NULL) then set to one of them.
 */
int dw_match_entries(const struct dw_config *cfg, const unsigned *dep_ids,
		     struct dw_match_entry **out, unsigned *n, const struct dw_match **over);

#endif /* DW_MATCH_H */
