// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logic/config/config.h"
#include "logic/config/match.h"
#include "logic/base/parse.h"

/* Longest message dw_match_check reports: two matches, a file and a dependency name. */
#define REPORT_MAX 1024

static int __attribute__((format(printf, 3, 4)))
bad(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || len == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- addresses and prefixes ---- */

static unsigned max_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* Zeroes the bits of a after the first len. */
static void mask_prefix(uint8_t *a, unsigned len)
{
	unsigned i;

	for (i = 0; i < 16; i++) {
		if (len >= 8 * (i + 1))
			continue;
		a[i] &= len > 8 * i ? (uint8_t)(0xff << (8 - (len - 8 * i))) : 0;
	}
}

/* Whether the first prefix_len bits of a are m's. */
static bool prefix_covers(const struct dw_match *m, const uint8_t *a)
{
	unsigned full = m->prefix_len / 8, rest = m->prefix_len % 8;
	uint8_t mask;

	if (memcmp(m->addr, a, full))
		return false;
	if (rest == 0)
		return true;
	mask = 0xff << (8 - rest);
	return ((m->addr[full] ^ a[full]) & mask) == 0;
}

bool dw_match_covers(const struct dw_match *outer, const struct dw_match *inner)
{
	return outer->family == inner->family && outer->prefix_len <= inner->prefix_len &&
	       prefix_covers(outer, inner->addr);
}

static bool is_v4_mapped(const uint8_t *a)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(a, pfx, sizeof(pfx)) == 0;
}

int dw_match_addr(int family, const uint8_t *addr, uint8_t out[16])
{
	memset(out, 0, 16);
	if (family == AF_INET6 && is_v4_mapped(addr)) {
		memcpy(out, addr + 12, 4);
		return AF_INET;
	}
	if (family != AF_INET && family != AF_INET6)
		return -1;
	memcpy(out, addr, family == AF_INET ? 4 : 16);
	return family;
}

/* The kernel side counts ::ffff:a.b.c.d as IPv4, so matches have to as well. */
static void normalise_mapped(struct dw_match *m)
{
	if (m->family != AF_INET6 || m->prefix_len < 96 || !is_v4_mapped(m->addr))
		return;
	m->family = AF_INET;
	m->prefix_len -= 96;
	memmove(m->addr, m->addr + 12, 4);
	memset(m->addr + 4, 0, 12);
}

/* ---- text ---- */

void dw_match_format(const struct dw_match *m, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN], ports[16] = "";

	if (len == 0)
		return;
	if ((m->family != AF_INET && m->family != AF_INET6) ||
	    !inet_ntop(m->family, m->addr, a, sizeof(a))) {
		snprintf(buf, len, "?");
		return;
	}
	if (m->port_lo == m->port_hi)
		snprintf(ports, sizeof(ports), ":%u", m->port_lo);
	else if (m->port_lo != 0 || m->port_hi != 65535)
		snprintf(ports, sizeof(ports), ":%u-%u", m->port_lo, m->port_hi);
	if (m->family == AF_INET)
		snprintf(buf, len, "%s/%u%s", a, m->prefix_len, ports);
	else
		snprintf(buf, len, "[%s/%u]%s", a, m->prefix_len, ports);
}

/* "PORT" or "LOW-HIGH" into m; s NULL: all ports. */
static int parse_ports(const char *text, char *s, struct dw_match *m, char *why, size_t len)
{
	char c[DW_CLIP_BUF], *dash;
	uint64_t lo, hi;

	m->port_lo = 0;
	m->port_hi = 65535;
	if (!s)
		return 0;
	dash = strchr(s, '-');
	if (dash)
		*dash = '\0';
	if (dw_parse_uint(s, 1, 65535, &lo) || (dash && dw_parse_uint(dash + 1, 1, 65535, &hi)))
		return bad(why, len,
			   "match '%s': bad port range: ports are 1 to 65535, as PORT or LOW-HIGH",
			   dw_clip(text, c));
	if (!dash)
		hi = lo;
	if (lo > hi)
		return bad(why, len, "match '%s': bad port range: %llu is above %llu",
			   dw_clip(text, c), (unsigned long long)lo, (unsigned long long)hi);
	m->port_lo = lo;
	m->port_hi = hi;
	return 0;
}

/* "ADDR[/LEN]" of family into m. */
static int parse_prefix(const char *text, char *s, int family, struct dw_match *m, char *why,
			size_t len)
{
	char c[DW_CLIP_BUF], c2[DW_CLIP_BUF], *slash = strchr(s, '/');
	uint64_t bits = max_bits(family);

	if (slash) {
		*slash = '\0';
		if (dw_parse_uint(slash + 1, 0, max_bits(family), &bits))
			return bad(why, len, "match '%s': prefix length '/%s' is not 0 to %u",
				   dw_clip(text, c), dw_clip(slash + 1, c2), max_bits(family));
	}
	memset(m->addr, 0, sizeof(m->addr));
	if (inet_pton(family, s, m->addr) != 1) {
		if (family == AF_INET)
			return bad(why, len, "match '%s': '%s' is not an IPv4 address (IPv6 goes in brackets: [2001:db8::/32]:443)",
				   dw_clip(text, c), dw_clip(s, c2));
		return bad(why, len, "match '%s': '%s' is not an IPv6 address", dw_clip(text, c),
			   dw_clip(s, c2));
	}
	m->family = family;
	m->prefix_len = bits;
	return 0;
}

/* Bits past the prefix mean a typo more often than not: refuse them. */
static int check_host_bits(const char *text, const struct dw_match *m, char *why, size_t len)
{
	char c[DW_CLIP_BUF], net[DW_MATCH_STRLEN];
	struct dw_match masked = *m;

	mask_prefix(masked.addr, m->prefix_len);
	if (memcmp(masked.addr, m->addr, sizeof(m->addr)) == 0)
		return 0;
	dw_match_format(&masked, net, sizeof(net));
	return bad(why, len, "match '%s': host bits set (did you mean '%s'?)", dw_clip(text, c),
		   net);
}

/*
 * Splits buf (a copy of text) into the address and the ports after ':'
 * (NULL: none); *family from the brackets.
 */
static int split_match(const char *text, char *buf, char **addr, char **ports, int *family,
		       char *why, size_t len)
{
	char c[DW_CLIP_BUF], c2[DW_CLIP_BUF], *close;

	*addr = buf;
	*family = AF_INET;
	if (buf[0] == '[') {
		*family = AF_INET6;
		*addr = buf + 1;
		close = strchr(*addr, ']');
		if (!close)
			return bad(why, len, "match '%s': missing ']' after the IPv6 address",
				   dw_clip(text, c));
		*close = '\0';
		*ports = close + 1;
		if (**ports && **ports != ':')
			return bad(why, len, "match '%s': unexpected '%s' after ']'",
				   dw_clip(text, c), dw_clip(*ports, c2));
	} else {
		*ports = strchr(buf, ':');
		if (*ports && strchr(*ports + 1, ':'))
			return bad(why, len, "match '%s': IPv6 addresses go in brackets, as in [2001:db8::/32]:443",
				   dw_clip(text, c));
	}
	if (*ports && **ports == ':')
		*(*ports)++ = '\0';
	else
		*ports = NULL;
	return 0;
}

int dw_match_parse(const char *text, struct dw_match *m, char *why, size_t len)
{
	char *buf, *addr = NULL, *ports = NULL;
	int family = AF_INET, err;

	memset(m, 0, sizeof(*m));
	buf = strdup(text);
	if (!buf)
		return -ENOMEM;
	err = split_match(text, buf, &addr, &ports, &family, why, len);
	if (!err)
		err = parse_prefix(text, addr, family, m, why, len);
	if (!err)
		err = parse_ports(text, ports, m, why, len);
	if (!err)
		err = check_host_bits(text, m, why, len);
	free(buf);
	if (err)
		return err;
	normalise_mapped(m);
	return 0;
}

/* ---- the checks that need every match ---- */

static int cmp_ref(const void *a, const void *b)
{
	const struct dw_match *x = ((const struct dw_match_ref *)a)->m;
	const struct dw_match *y = ((const struct dw_match_ref *)b)->m;
	int c;

	if (x->family != y->family)
		return x->family - y->family;
	c = memcmp(x->addr, y->addr, sizeof(x->addr));
	if (c)
		return c;
	if (x->prefix_len != y->prefix_len)
		return x->prefix_len - y->prefix_len;
	if (x->port_lo != y->port_lo)
		return x->port_lo - y->port_lo;
	return y->port_hi - x->port_hi;	/* wider first */
}

static bool same_prefix(const struct dw_match *x, const struct dw_match *y)
{
	return x->family == y->family && x->prefix_len == y->prefix_len &&
	       memcmp(x->addr, y->addr, sizeof(x->addr)) == 0;
}

/* Whether x's ports are all y's. */
static bool ports_within(const struct dw_match *x, const struct dw_match *y)
{
	return x->port_lo >= y->port_lo && x->port_hi <= y->port_hi;
}

static bool ports_meet(const struct dw_match *x, const struct dw_match *y)
{
	return x->port_lo <= y->port_hi && y->port_lo <= x->port_hi;
}

/*
 * a's prefix covers b's and their ports intersect: fine if b is strictly
 * more specific (or a is, for equal prefixes), since that one wins lookups.
 */
static bool has_winner(const struct dw_match *a, const struct dw_match *b)
{
	if (b->prefix_len > a->prefix_len)
		return ports_within(b, a);
	if (a->port_lo == b->port_lo && a->port_hi == b->port_hi)
		return false;
	return ports_within(b, a) || ports_within(a, b);
}

struct checker {
	const char *src;
	dw_match_report_fn report;
	void *ctx;
};

static void report_overlap(const struct checker *ck, const struct dw_match_ref *x,
			   const struct dw_match_ref *y)
{
	char later[DW_MATCH_STRLEN], earlier[DW_MATCH_STRLEN], msg[REPORT_MAX];

	if (x->m->line < y->m->line) {
		const struct dw_match_ref *t = x;

		x = y;
		y = t;
	}
	dw_match_format(x->m, later, sizeof(later));
	dw_match_format(y->m, earlier, sizeof(earlier));
	snprintf(msg, sizeof(msg),
		 "match '%s' overlaps '%s:%d' with no more specific winner ('%s' of [dependency %s])",
		 later, ck->src, y->m->line, earlier, y->dep);
	ck->report(ck->ctx, x->m->line, y->m->line, msg);
}

/*
 * In (family, address, prefix length) order, the matches a prefix covers
 * follow it as one run, so each match is only compared with what it
 * covers. Equal prefixes are further sorted by port, and a run of them
 * is left as soon as the ports have passed.
 */
static void scan_overlaps(const struct checker *ck, const struct dw_match_ref *r, unsigned n)
{
	const struct dw_match *a, *b;
	unsigned i, j;

	for (i = 0; i < n; i++) {
		a = r[i].m;
		for (j = i + 1; j < n; j++) {
			b = r[j].m;
			if (b->family != a->family || !prefix_covers(a, b->addr))
				break;
			if (b->prefix_len == a->prefix_len && b->port_lo > a->port_hi) {
				j = r[i].group_end - 1;
				continue;
			}
			if (ports_meet(a, b) && !has_winner(a, b))
				report_overlap(ck, &r[i], &r[j]);
		}
	}
}

#define STACK_MAX 129	/* distinct prefix lengths of one family, 0 to 128 */

/* The depth of the stack of prefixes once those that do not strictly cover m are off it. */
static unsigned covering_depth(const struct dw_match *const *stack, unsigned depth,
			       const struct dw_match *m)
{
	while (depth && !(dw_match_covers(stack[depth - 1], m) &&
			  stack[depth - 1]->prefix_len < m->prefix_len))
		depth--;
	return depth;
}

/*
 * The kernel's match trie keeps, for each configured prefix, every rule
 * covering it (the same family and a shorter or equal prefix holding it,
 * whatever the ports), in at most DW_MATCH_RULES slots.
 *
 * In the sorted order a prefix comes after every prefix covering it, and
 * a prefix that does not cover the current one covers nothing later
 * either. So a stack of the distinct prefixes covering the current one,
 * each with the number of matches at or above it, is all it takes:
 * O(n * depth), the depth being at most 129 distinct prefix lengths.
 */
static void scan_rule_limits(const struct checker *ck, const struct dw_match_ref *r, unsigned n)
{
	const struct dw_match *stack[STACK_MAX];
	unsigned totals[STACK_MAX];	/* matches with this prefix or one covering it */
	char text[DW_MATCH_STRLEN], msg[REPORT_MAX];
	unsigned i, j, depth = 0, total;

	for (i = 0; i < n; i = r[i].group_end) {
		depth = covering_depth(stack, depth, r[i].m);
		total = (depth ? totals[depth - 1] : 0) + (r[i].group_end - i);
		stack[depth] = r[i].m;
		totals[depth++] = total;
		if (total <= DW_MATCH_RULES)
			continue;
		/* every match of the prefix is over; the earliest line is reported */
		for (j = i; j < r[i].group_end; j++) {
			dw_match_format(r[j].m, text, sizeof(text));
			snprintf(msg, sizeof(msg),
				 "match '%s' is covered by %u matches; at most %d can apply to one prefix",
				 text, total, DW_MATCH_RULES);
			ck->report(ck->ctx, r[j].m->line, 0, msg);
		}
	}
}

/*
 * Sorts n elements of size bytes, each starting with a struct dw_match_ref,
 * by cmp (prefix order), and sets each group_end: the index after the last
 * one with its prefix.
 */
static void group_by_prefix(void *base, unsigned n, size_t size,
			    int (*cmp)(const void *, const void *))
{
	struct dw_match_ref *cur, *next;
	unsigned i;

	qsort(base, n, size, cmp);
	cur = (struct dw_match_ref *)((char *)base + (n - 1) * size);
	cur->group_end = n;
	for (i = n - 1; i-- > 0;) {
		next = cur;
		cur = (struct dw_match_ref *)((char *)base + i * size);
		cur->group_end = same_prefix(cur->m, next->m) ? next->group_end : i + 1;
	}
}

int dw_match_check(struct dw_match_ref *r, unsigned n, const char *src,
		   dw_match_report_fn report, void *ctx)
{
	struct checker ck = { .src = src, .report = report, .ctx = ctx };

	if (n == 0)
		return 0;
	group_by_prefix(r, n, sizeof(*r), cmp_ref);
	scan_overlaps(&ck, r, n);
	scan_rule_limits(&ck, r, n);
	return 0;
}

/* ---- lookup ---- */

/* True if m is more specific than best (or there is no best yet). */
static bool more_specific(const struct dw_match *m, const struct dw_match *best)
{
	if (!best || m->prefix_len != best->prefix_len)
		return !best || m->prefix_len > best->prefix_len;
	return m->port_hi - m->port_lo < best->port_hi - best->port_lo;
}

int dw_config_lookup(const struct dw_config *cfg, int family, const uint8_t *addr, uint16_t port)
{
	const struct dw_match *m, *best = NULL;
	uint8_t a[16];
	unsigned i, k;
	int idx = -1;

	if (!cfg || !addr)
		return -1;
	family = dw_match_addr(family, addr, a);
	if (family < 0)
		return -1;
	for (i = 0; i < cfg->ndeps; i++) {
		for (k = 0; k < cfg->deps[i].nmatches; k++) {
			m = &cfg->deps[i].matches[k];
			if (m->family != family || port < m->port_lo || port > m->port_hi ||
			    !prefix_covers(m, a) || !more_specific(m, best))
				continue;
			best = m;
			idx = i;
		}
	}
	return idx;
}

/* ---- the kernel's trie ---- */

void dw_match_key_of(int family, const uint8_t *addr, unsigned prefix_len,
		     struct dw_match_key *key)
{
	__u32 f = htonl(family);

	memset(key, 0, sizeof(*key));
	key->prefixlen = 32 + prefix_len;
	memcpy(key->data, &f, 4);
	memcpy(key->data + 4, addr, 16);
}

/* A match with what the trie needs besides: its dependency's id and its place in the file. */
struct rule_ref {
	struct dw_match_ref ref;	/* first: the prefix sort takes these */
	unsigned dep_id, seq;
};

/* The prefix order of dw_match_check, then file order. */
static int cmp_rule_prefix(const void *a, const void *b)
{
	const struct rule_ref *x = a, *y = b;
	int c = cmp_ref(&x->ref, &y->ref);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Most specific first: longer prefix, then narrower port range, then file order. */
static int by_specificity(const void *a, const void *b)
{
	const struct rule_ref *x = *(const struct rule_ref *const *)a;
	const struct rule_ref *y = *(const struct rule_ref *const *)b;
	int wx = x->ref.m->port_hi - x->ref.m->port_lo, wy = y->ref.m->port_hi - y->ref.m->port_lo;

	if (x->ref.m->prefix_len != y->ref.m->prefix_len)
		return y->ref.m->prefix_len - x->ref.m->prefix_len;
	if (wx != wy)
		return wx - wy;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Every match of cfg, in file order, with its kernel id. */
static struct rule_ref *rule_refs(const struct dw_config *cfg, const unsigned *dep_ids,
				  unsigned *n)
{
	struct rule_ref *r;
	unsigned i, k, total = 0;

	for (i = 0; i < cfg->ndeps; i++)
		total += cfg->deps[i].nmatches;
	*n = total;
	r = calloc(total ? total : 1, sizeof(*r));
	if (!r)
		return NULL;
	total = 0;
	for (i = 0; i < cfg->ndeps; i++) {
		for (k = 0; k < cfg->deps[i].nmatches; k++, total++) {
			r[total].ref.m = &cfg->deps[i].matches[k];
			r[total].dep_id = dep_ids ? dep_ids[i] : i + 1;
			r[total].seq = total;
		}
	}
	return r;
}

/*
 * The entry of the prefix group r[at..]: its own matches and those of the
 * groups on the stack (which cover it), most specific first.
 */
static int entry_of(const struct rule_ref *r, unsigned at, const unsigned *stack,
		    unsigned depth, struct dw_match_entry *e)
{
	const struct rule_ref *v[DW_MATCH_RULES];
	unsigned s, j, n = 0;

	for (s = 0; s <= depth; s++) {
		unsigned g = s < depth ? stack[s] : at;

		for (j = g; j < r[g].ref.group_end; j++) {
			if (n == DW_MATCH_RULES)
				return -E2BIG;
			v[n++] = &r[j];
		}
	}
	qsort(v, n, sizeof(v[0]), by_specificity);
	memset(e, 0, sizeof(*e));
	dw_match_key_of(r[at].ref.m->family, r[at].ref.m->addr, r[at].ref.m->prefix_len, &e->key);
	e->rules.n = n;
	for (j = 0; j < n; j++)
		e->rules.rule[j] = (struct dw_match_rule){ .port_lo = v[j]->ref.m->port_lo,
							   .port_hi = v[j]->ref.m->port_hi,
							   .dep_id = v[j]->dep_id };
	return 0;
}

/* The earliest in the file of the group at r[at..]. */
static const struct dw_match *first_of_group(const struct rule_ref *r, unsigned at)
{
	const struct rule_ref *first = &r[at];
	unsigned j;

	for (j = at; j < r[at].ref.group_end; j++)
		if (r[j].seq < first->seq)
			first = &r[j];
	return first->ref.m;
}

/* As scan_rule_limits: a stack of the groups whose prefix covers the current one. */
static int build_entries(struct rule_ref *r, unsigned n, struct dw_match_entry *e,
			 unsigned *ne, const struct dw_match **over)
{
	const struct dw_match *stack[STACK_MAX];
	unsigned groups[STACK_MAX];	/* index of the first rule_ref of each */
	unsigned i, depth = 0;

	*ne = 0;
	for (i = 0; i < n; i = r[i].ref.group_end) {
		depth = covering_depth(stack, depth, r[i].ref.m);
		if (entry_of(r, i, groups, depth, &e[(*ne)++])) {
			if (over)
				*over = first_of_group(r, i);
			return -E2BIG;
		}
		stack[depth] = r[i].ref.m;
		groups[depth++] = i;
	}
	return 0;
}

int dw_match_entries(const struct dw_config *cfg, const unsigned *dep_ids,
		     struct dw_match_entry **out, unsigned *n, const struct dw_match **over)
{
	struct dw_match_entry *e;
	struct rule_ref *r;
	unsigned nr;
	int err;

	*out = NULL;
	*n = 0;
	r = rule_refs(cfg, dep_ids, &nr);
	if (!r)
		return -ENOMEM;
	if (nr == 0) {
		free(r);
		return 0;
	}
	group_by_prefix(r, nr, sizeof(*r), cmp_rule_prefix);
	e = calloc(nr, sizeof(*e));
	if (!e) {
		free(r);
		return -ENOMEM;
	}
	err = build_entries(r, nr, e, n, over);
	free(r);
	if (err) {
		free(e);
		*n = 0;
		return err;
	}
	*out = e;
	return 0;
}
