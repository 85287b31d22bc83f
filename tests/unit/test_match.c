// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * "The most specific match wins", as the kernel finds it: the trie built by
 * dw_match_entries, looked up the way an LPM trie does (longest prefix,
 * then its first rule holding the port), must name the dependency
 * dw_config_lookup names, for every address and port tried.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwtest.h"

#include "logic/config/config.h"
#include "logic/config/match.h"

static char err[1024];

/* The kernel's id of cfg->deps[i]: anything but i + 1, so a mix-up shows. */
static unsigned id_of(unsigned i)
{
	return 100 + 3 * i;
}

/* Whether the first bits bits of a and b agree. */
static bool bits_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned i;

	for (i = 0; i < bits; i++)
		if (((a[i / 8] >> (7 - i % 8)) & 1) != ((b[i / 8] >> (7 - i % 8)) & 1))
			return false;
	return true;
}

/*
 * BPF_MAP_TYPE_LPM_TRIE's lookup over the entries, then dep_of()'s rule
 * scan (bpf/core/slots.bpf.h: dep_of). The dest is as dest_of() makes it: an
 * IPv4-mapped address already turned into IPv4.
 */
static unsigned trie_dep_of(const struct dw_match_entry *e, unsigned n, int family,
			    const uint8_t *addr16, uint16_t port)
{
	struct dw_match_key q = { .prefixlen = 32 + (family == AF_INET ? 32 : 128) };
	const struct dw_match_entry *best = NULL;
	__u32 f = htonl(family);
	unsigned i;

	memcpy(q.data, &f, 4);
	memcpy(q.data + 4, addr16, 16);
	for (i = 0; i < n; i++) {
		if (e[i].key.prefixlen > q.prefixlen ||
		    !bits_equal(e[i].key.data, q.data, e[i].key.prefixlen))
			continue;
		if (!best || e[i].key.prefixlen > best->key.prefixlen)
			best = &e[i];
	}
	if (!best)
		return 0;
	for (i = 0; i < best->rules.n && i < DW_MATCH_RULES; i++)
		if (port >= best->rules.rule[i].port_lo && port <= best->rules.rule[i].port_hi)
			return best->rules.rule[i].dep_id;
	return 0;
}

/* One address and port: the trie and dw_config_lookup agree, mapped IPv4 too. */
static void check_one(const struct dw_config *cfg, const struct dw_match_entry *e, unsigned n,
		      int family, const uint8_t *addr16, uint16_t port)
{
	uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff };
	char a[INET6_ADDRSTRLEN];
	int idx = dw_config_lookup(cfg, family, addr16, port);
	unsigned want = idx < 0 ? 0 : id_of(idx), got = trie_dep_of(e, n, family, addr16, port);

	if (got != want) {
		inet_ntop(family, addr16, a, sizeof(a));
		fail_msg("%s port %u: trie says dep id %u, dw_config_lookup %d (id %u)", a, port,
			 got, idx, want);
	}
	if (family != AF_INET)
		return;
	memcpy(mapped + 12, addr16, 4);
	assert_int_equal(dw_config_lookup(cfg, AF_INET6, mapped, port), idx);
}

/* Ports at and around each edge of m's range, and one at random. */
static void check_ports(const struct dw_config *cfg, const struct dw_match_entry *e, unsigned n,
			const struct dw_match *m, const uint8_t *addr16, uint64_t *rnd)
{
	const unsigned ports[] = { 0, 1, 65535, m->port_lo, m->port_hi, m->port_lo - 1u,
				   m->port_hi + 1u, (unsigned)(dwt_rand(rnd) % 65536) };
	size_t i;

	for (i = 0; i < sizeof(ports) / sizeof(ports[0]); i++)
		check_one(cfg, e, n, m->family, addr16, (uint16_t)ports[i]);
}

/*
 * Addresses in and just outside each match: its network, random host
 * bits, and the last prefix bit flipped; each at the edge ports.
 */
static void check_config(const struct dw_config *cfg, uint64_t *rnd)
{
	unsigned ids[64], i, k, j, n, bits;
	struct dw_match_entry *e;
	const struct dw_match *m;
	uint8_t a[16];

	assert_true(cfg->ndeps <= 64);
	for (i = 0; i < cfg->ndeps; i++)
		ids[i] = id_of(i);
	assert_int_equal(dw_match_entries(cfg, ids, &e, &n, NULL), 0);
	for (i = 0; i < cfg->ndeps; i++) {
		for (k = 0; k < cfg->deps[i].nmatches; k++) {
			m = &cfg->deps[i].matches[k];
			bits = m->family == AF_INET ? 32 : 128;
			memcpy(a, m->addr, 16);
			check_ports(cfg, e, n, m, a, rnd);
			for (j = m->prefix_len; j < bits; j++)
				if (dwt_rand(rnd) & 1)
					a[j / 8] ^= 0x80 >> (j % 8);
			check_ports(cfg, e, n, m, a, rnd);
			if (m->prefix_len == 0)
				continue;
			a[(m->prefix_len - 1) / 8] ^= 0x80 >> ((m->prefix_len - 1) % 8);
			check_ports(cfg, e, n, m, a, rnd);
		}
	}
	free(e);
}

/* A more specific match must sit within the ports of every match covering it that it meets. */
static const char edge_config[] =
	"[dependency all4]\nmatch = 0.0.0.0/0\n"
	"[dependency all6]\nmatch = [::/0]\n"
	"[dependency net10]\nmatch = 10.0.0.0/8\n"
	"[dependency tls10]\nmatch = 10.0.0.0/8:443\n"
	"[dependency web10]\nmatch = 10.0.0.0/8:80-90\nmatch = 10.0.0.0/8:8080\n"
	"[dependency sub]\nmatch = 10.1.0.0/16:85\n"
	"[dependency host]\nmatch = 10.1.2.3/32:85\nmatch = 11.2.3.4\n"
	"[dependency mapped]\nmatch = [::ffff:192.168.0.0/112]:5432\n"
	"[dependency v6]\nmatch = [2001:db8::/32]\nmatch = [2001:db8:1::/48]:443\n"
	"[dependency v6host]\nmatch = [2001:db8:1::1/128]:443\n"
	"[dependency low]\nmatch = 172.16.0.0/12:1\nmatch = 172.16.0.0/12:65535\n";

/* A random config that may not parse (overlaps without a winner): nested, on a few ports. */
static void random_config(char *buf, size_t len, uint64_t *rnd)
{
	static const char *const ports[] = { "", ":80", ":443", ":80-443", ":1-1024", ":8080" };
	unsigned ndeps = 1 + dwt_rand(rnd) % 8, i, k, nm, plen;
	size_t off = 0;

	for (i = 0; i < ndeps; i++) {
		off += snprintf(buf + off, len - off, "[dependency d%u]\n", i);
		nm = 1 + dwt_rand(rnd) % 3;
		for (k = 0; k < nm; k++) {
			const char *p = ports[dwt_rand(rnd) % 6];

			if (dwt_rand(rnd) % 4 == 0) {
				plen = 16 + dwt_rand(rnd) % 113;
				off += snprintf(buf + off, len - off,
						"match = [2001:db8:%x::/%u]%s\n",
						(unsigned)(dwt_rand(rnd) % 2), plen < 48 ? 32 : 48,
						p);
				continue;
			}
			plen = 8 + 8 * (dwt_rand(rnd) % 4);
			off += snprintf(buf + off, len - off, "match = 10.%u.%u.%u/%u%s\n",
					plen > 8 ? (unsigned)(dwt_rand(rnd) % 2) : 0,
					plen > 16 ? (unsigned)(dwt_rand(rnd) % 2) : 0,
					plen > 24 ? (unsigned)(dwt_rand(rnd) % 2) : 0, plen, p);
		}
	}
}

/*
 * fn on the edge-case config, then on 300 random configs that parse.
 * Returns how many random ones it took to find them.
 */
static unsigned on_configs(void (*fn)(const struct dw_config *cfg, uint64_t *rnd), uint64_t seed)
{
	uint64_t rnd = seed;
	struct dw_config cfg;
	unsigned tried = 0, parsed = 0;
	char text[4096];

	if (dw_config_parse("edge.conf", edge_config, strlen(edge_config), &cfg, err, sizeof(err)))
		fail_msg("%s", err);
	fn(&cfg, &rnd);
	dw_config_free(&cfg);
	while (parsed < 300 && tried < 100000) {
		tried++;
		random_config(text, sizeof(text), &rnd);
		if (dw_config_parse("rand.conf", text, strlen(text), &cfg, err, sizeof(err)))
			continue;
		parsed++;
		fn(&cfg, &rnd);
		dw_config_free(&cfg);
	}
	assert_int_equal(parsed, 300);
	return tried;
}

static void test_trie_agrees_with_lookup(void **state)
{
	(void)state;
	print_message("%u random configs tried for 300 that parse\n",
		      on_configs(check_config, 0x5eed));
}

/*
 * The builder against the obvious way (the daemon's before it): an entry
 * per match in file order, holding every match covering it, sorted most
 * specific first; a prefix written twice keeps the last. Same keys, same
 * rules in the same order.
 */
struct naive_ref {
	const struct dw_match *m;
	unsigned id;
};

static int naive_order(const void *a, const void *b)
{
	const struct dw_match *x = ((const struct naive_ref *)a)->m;
	const struct dw_match *y = ((const struct naive_ref *)b)->m;

	if (x->prefix_len != y->prefix_len)
		return y->prefix_len - x->prefix_len;
	return (x->port_hi - x->port_lo) - (y->port_hi - y->port_lo);
}

static void naive_entry(const struct dw_config *cfg, const struct dw_match *at,
			struct dw_match_entry *e)
{
	struct naive_ref v[DW_MATCH_RULES];
	unsigned i, k, n = 0;

	for (i = 0; i < cfg->ndeps; i++) {
		for (k = 0; k < cfg->deps[i].nmatches; k++) {
			if (!dw_match_covers(&cfg->deps[i].matches[k], at))
				continue;
			assert_true(n < DW_MATCH_RULES);
			v[n++] = (struct naive_ref){ &cfg->deps[i].matches[k], id_of(i) };
		}
	}
	qsort(v, n, sizeof(v[0]), naive_order);
	memset(e, 0, sizeof(*e));
	dw_match_key_of(at->family, at->addr, at->prefix_len, &e->key);
	e->rules.n = n;
	for (i = 0; i < n; i++) {
		e->rules.rule[i].port_lo = v[i].m->port_lo;
		e->rules.rule[i].port_hi = v[i].m->port_hi;
		e->rules.rule[i].dep_id = v[i].id;
	}
}

/* Whether deps[i].matches[k] is the first match in the file with its prefix. */
static bool first_of_prefix(const struct dw_config *cfg, unsigned i, unsigned k)
{
	const struct dw_match *m = &cfg->deps[i].matches[k], *o;
	unsigned pi, pk;

	for (pi = 0; pi <= i; pi++) {
		for (pk = 0; pk < cfg->deps[pi].nmatches && (pi < i || pk < k); pk++) {
			o = &cfg->deps[pi].matches[pk];
			if (o->family == m->family && o->prefix_len == m->prefix_len &&
			    !memcmp(o->addr, m->addr, 16))
				return false;
		}
	}
	return true;
}

static void check_same_as_naive(const struct dw_config *cfg, uint64_t *rnd)
{
	struct dw_match_entry *e, want;
	unsigned ids[64], i, k, j, n, distinct = 0;

	(void)rnd;
	for (i = 0; i < cfg->ndeps; i++)
		ids[i] = id_of(i);
	assert_int_equal(dw_match_entries(cfg, ids, &e, &n, NULL), 0);
	for (i = 0; i < cfg->ndeps; i++) {
		for (k = 0; k < cfg->deps[i].nmatches; k++) {
			naive_entry(cfg, &cfg->deps[i].matches[k], &want);
			for (j = 0; j < n && memcmp(&e[j].key, &want.key, sizeof(want.key)); j++)
				;
			assert_true(j < n);
			assert_memory_equal(&e[j], &want, sizeof(want));
		}
	}
	/* and nothing else: one entry per distinct prefix */
	for (i = 0; i < cfg->ndeps; i++)
		for (k = 0; k < cfg->deps[i].nmatches; k++)
			distinct += first_of_prefix(cfg, i, k);
	assert_int_equal(n, distinct);
	free(e);
}

static void test_entries_as_before(void **state)
{
	(void)state;
	on_configs(check_same_as_naive, 0xbeef);
}

/* A config made by hand past the kernel's rule slots: -E2BIG, and which prefix. */
static void test_entries_too_many_rules(void **state)
{
	struct dw_match m[DW_MATCH_RULES + 1] = {};
	struct dw_dep_config dep = { .name = "x", .matches = m, .nmatches = DW_MATCH_RULES + 1 };
	struct dw_config cfg = { .deps = &dep, .ndeps = 1 };
	const struct dw_match *over = NULL;
	struct dw_match_entry *e = (void *)1;
	unsigned i, n = 1;

	(void)state;
	for (i = 0; i <= DW_MATCH_RULES; i++) {
		m[i].family = AF_INET;
		m[i].addr[0] = 10;
		m[i].prefix_len = 8 + i;
		m[i].port_hi = 65535;
	}
	assert_int_equal(dw_match_entries(&cfg, NULL, &e, &n, &over), -E2BIG);
	assert_null(e);
	assert_int_equal(n, 0);
	assert_ptr_equal(over, &m[DW_MATCH_RULES]);
	cfg.ndeps = 0;
	assert_int_equal(dw_match_entries(&cfg, NULL, &e, &n, &over), 0);
	assert_null(e);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trie_agrees_with_lookup),
		cmocka_unit_test(test_entries_as_before),
		cmocka_unit_test(test_entries_too_many_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
