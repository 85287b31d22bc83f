// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The kernel state a config wants (logic/kernel/kplan.h), computed whole before
 * user/kernel/kstate.c writes anything: the test knows every dependency, match
 * and service it configured, so it knows each map's entries. Then
 * user/kernel/kstate.c's writes, against maps in memory (the bpf_map_* calls and
 * the loader's few functions are this file's): a reload takes whole, or,
 * whichever write fails, every map is as it was.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dwtest.h"

#include "logic/config/config.h"
#include "logic/kernel/kplan.h"
#include "kernel/kstate.h"
#include "kernel/loader.h"
#include "kernel/maprows.h"
#include "logic/judge/breaker.h"

#define MS 1000000ULL
#define SEC (1000ULL * MS)

static const char base_conf[] =
	"[defaults]\n"
	"slow_call = 1s\n"
	"\n"
	"[dependency payments]\n"
	"match = 10.0.3.0/24:443\n"
	"match = 10.0.3.0/24:8443\n"
	"slow_call = 500ms\n"
	"enforce = abort\n"
	"abort_after = 2s\n"
	"\n"
	"[dependency orders]\n"
	"match = 10.0.4.7\n"
	"match = [2001:db8::/32]:80\n"
	"enforce = connect\n"
	"multiplexed = judge\n"
	"\n"
	"[service shop]\n"
	"listen = 8080\n"
	"\n"
	"[service admin]\n"
	"listen = 9000-9010\n";

/* The kernel's ids of payments and orders: not their indexes, as after reloads. */
static const unsigned ids[] = { 5, 9 };

static struct dw_match_key key4(const char *ip, unsigned prefix_len)
{
	struct dw_match_key key;
	uint8_t addr[16] = {};

	assert_int_equal(inet_pton(AF_INET, ip, addr), 1);
	dw_match_key_of(AF_INET, addr, prefix_len, &key);
	return key;
}

static const struct dw_match_entry *entry(const struct dw_kplan *p, const struct dw_match_key *key)
{
	for (unsigned i = 0; i < p->ntrie; i++)
		if (!memcmp(&p->trie[i].key, key, sizeof(*key)))
			return &p->trie[i];
	return NULL;
}

static struct dw_dest_key dest4(const char *ip, unsigned port)
{
	struct dw_dest_key d = { .family = AF_INET, .port = port };

	assert_int_equal(inet_pton(AF_INET, ip, d.addr), 1);
	return d;
}

static struct dw_dest_key inbound(unsigned port)
{
	return (struct dw_dest_key){ .family = DW_FAMILY_INBOUND, .port = port };
}

static bool plan_is_empty(const struct dw_kplan *p)
{
	static const struct dw_kplan zero;

	return !memcmp(p, &zero, sizeof(zero));
}

/* Id 0 (the defaults) first, then each dependency under its id, with its kernel settings. */
static void test_dep_cfg(void **state)
{
	struct dw_config cfg;
	struct dw_kplan *p = malloc(sizeof(*p));

	(void)state;
	dwt_parse(base_conf, &cfg);
	assert_int_equal(dw_kplan_build(p, &cfg, ids, NULL), 0);
	assert_int_equal(p->ndep_cfg, 3);
	assert_int_equal(p->dep_cfg[0].id, 0);
	assert_int_equal(p->dep_cfg[0].v.slow_call_ns, 1 * SEC);
	assert_int_equal(p->dep_cfg[0].v.enforce, 0);
	assert_int_equal(p->dep_cfg[0].v.multiplexed, 0);
	assert_int_equal(p->dep_cfg[0].v.abort_after_ns, 0);
	assert_int_equal(p->dep_cfg[1].id, 5);
	assert_int_equal(p->dep_cfg[1].v.slow_call_ns, 500 * MS);
	/* enforce = abort does what connect does too */
	assert_int_equal(p->dep_cfg[1].v.enforce, DW_ENFORCE_CONNECT | DW_ENFORCE_ABORT);
	assert_int_equal(p->dep_cfg[1].v.abort_after_ns, 2 * SEC);
	assert_int_equal(p->dep_cfg[2].id, 9);
	assert_int_equal(p->dep_cfg[2].v.slow_call_ns, 1 * SEC);
	assert_int_equal(p->dep_cfg[2].v.enforce, DW_ENFORCE_CONNECT);
	assert_int_equal(p->dep_cfg[2].v.multiplexed, 1);
	dw_kplan_free(p);
	assert_true(plan_is_empty(p));
	free(p);
	dw_config_free(&cfg);
}

/* One trie entry per prefix (two ports of one prefix share it), rules under the kernel's ids. */
static void test_trie(void **state)
{
	struct dw_config cfg;
	struct dw_kplan *p = malloc(sizeof(*p));
	struct dw_match_entry *want;
	struct dw_match_key k;
	const struct dw_match_entry *e;
	unsigned nwant;

	(void)state;
	dwt_parse(base_conf, &cfg);
	assert_int_equal(dw_kplan_build(p, &cfg, ids, NULL), 0);
	assert_int_equal(p->ntrie, 3);
	assert_int_equal(p->keys.n, 3);
	assert_int_equal(dw_kplan_match_prefixes(&cfg), 4);

	k = key4("10.0.3.0", 24);
	e = entry(p, &k);
	assert_non_null(e);
	assert_true(dw_key_set_has(&p->keys, &k));
	assert_int_equal(e->rules.n, 2);
	assert_int_equal(e->rules.rule[0].dep_id, 5);
	assert_int_equal(e->rules.rule[0].port_lo, 443);
	assert_int_equal(e->rules.rule[1].port_lo, 8443);
	k = key4("10.0.4.7", 32);
	e = entry(p, &k);
	assert_non_null(e);
	assert_int_equal(e->rules.n, 1);
	assert_int_equal(e->rules.rule[0].dep_id, 9);
	assert_int_equal(e->rules.rule[0].port_lo, 0);
	assert_int_equal(e->rules.rule[0].port_hi, 65535);
	k = key4("10.0.4.0", 24);
	assert_false(dw_key_set_has(&p->keys, &k));

	/* the trie is match.c's, as built for the kernel */
	assert_int_equal(dw_match_entries(&cfg, ids, &want, &nwant, NULL), 0);
	assert_int_equal(nwant, p->ntrie);
	assert_memory_equal(want, p->trie, nwant * sizeof(*want));
	for (unsigned i = 1; i < p->keys.n; i++)
		assert_true(memcmp(&p->keys.k[i - 1], &p->keys.k[i], sizeof(p->keys.k[i])) < 0);
	free(want);
	dw_kplan_free(p);
	free(p);
	dw_config_free(&cfg);
}

static void test_service_ports(void **state)
{
	struct dw_config cfg;
	struct dw_kplan *p = malloc(sizeof(*p));
	unsigned set = 0;

	(void)state;
	dwt_parse(base_conf, &cfg);
	assert_int_equal(dw_kplan_build(p, &cfg, ids, NULL), 0);
	assert_true(p->services_on);
	assert_true(dw_kplan_port_is_set(p->service_port, 8080));
	assert_true(dw_kplan_port_is_set(p->service_port, 9000));
	assert_true(dw_kplan_port_is_set(p->service_port, 9010));
	assert_false(dw_kplan_port_is_set(p->service_port, 8999));
	assert_false(dw_kplan_port_is_set(p->service_port, 9011));
	assert_false(dw_kplan_port_is_set(p->service_port, 0));
	for (unsigned port = 0; port < 65536; port++)
		set += dw_kplan_port_is_set(p->service_port, port);
	assert_int_equal(set, 1 + 11);
	dw_kplan_free(p);
	dw_config_free(&cfg);

	dwt_parse("[dependency a]\nmatch = 10.0.0.1\n", &cfg);
	assert_int_equal(dw_kplan_build(p, &cfg, ids, NULL), 0);
	assert_false(p->services_on);
	for (unsigned i = 0; i < DW_PORT_BITS; i++)
		assert_int_equal(p->service_port[i], 0);
	dw_kplan_free(p);
	free(p);
	dw_config_free(&cfg);
}

/* A slot as the kernel would fill it: inbound rows by service port, others by the winning match. */
static void test_slot_cfg(void **state)
{
	struct dw_config cfg;
	struct dw_dest_key d;
	struct dw_slot_cfg sc;

	(void)state;
	dwt_parse(base_conf, &cfg);
	d = dest4("10.0.3.9", 443);
	sc = dw_kplan_slot_cfg(&cfg, ids, &d);
	assert_int_equal(sc.dep_id, 5);
	assert_int_equal(sc.service, 0);
	d = dest4("10.0.3.9", 444);	/* the prefix, not the port */
	assert_int_equal(dw_kplan_slot_cfg(&cfg, ids, &d).dep_id, 0);
	d = dest4("10.0.4.7", 1234);
	assert_int_equal(dw_kplan_slot_cfg(&cfg, ids, &d).dep_id, 9);
	d = dest4("192.0.2.1", 443);
	sc = dw_kplan_slot_cfg(&cfg, ids, &d);
	assert_int_equal(sc.dep_id, 0);
	assert_int_equal(sc.service, 0);
	d = inbound(8080);
	sc = dw_kplan_slot_cfg(&cfg, ids, &d);
	assert_int_equal(sc.service, 1);
	assert_int_equal(sc.dep_id, 0);
	d = inbound(443);		/* a listening port is never a dependency's */
	sc = dw_kplan_slot_cfg(&cfg, ids, &d);
	assert_int_equal(sc.service, 0);
	assert_int_equal(sc.dep_id, 0);
	dw_config_free(&cfg);
}

/* A destination's dep_cfg, as the plan writes it for its slot's dependency (abort.c's abort_after). */
static void test_dest_dep_cfg(void **state)
{
	static const char conf[] = "[defaults]\nabort_after = 5s\n"
				   "[dependency payments]\nmatch = 10.0.3.0/24:443\nabort_after = 2s\n"
				   "[dependency orders]\nmatch = 10.0.4.7\nabort_after = 0\n";
	struct dw_config cfg;
	struct dw_kplan *p = malloc(sizeof(*p));
	struct dw_dest_key d;
	struct dw_dep_cfg v;

	(void)state;
	dwt_parse(conf, &cfg);
	assert_int_equal(dw_kplan_build(p, &cfg, ids, NULL), 0);
	d = dest4("10.0.3.9", 443);
	v = dw_kplan_dest_dep_cfg(&cfg, &d);
	assert_int_equal(v.abort_after_ns, 2 * SEC);
	assert_memory_equal(&v, &p->dep_cfg[1].v, sizeof(v));
	d = dest4("10.0.4.7", 80);	/* abort_after = 0 overrides the defaults' */
	assert_int_equal(dw_kplan_dest_dep_cfg(&cfg, &d).abort_after_ns, 0);
	d = dest4("10.0.3.9", 80);	/* no match: id 0, the defaults */
	v = dw_kplan_dest_dep_cfg(&cfg, &d);
	assert_int_equal(v.abort_after_ns, 5 * SEC);
	assert_memory_equal(&v, &p->dep_cfg[0].v, sizeof(v));
	dw_kplan_free(p);
	free(p);
	dw_config_free(&cfg);
}

/* Slots are kept in the order given, past any initial room. */
static void test_slots_added(void **state)
{
	struct dw_config cfg;
	struct dw_kplan *p = malloc(sizeof(*p));

	(void)state;
	dwt_parse(base_conf, &cfg);
	assert_int_equal(dw_kplan_build(p, &cfg, ids, NULL), 0);
	for (unsigned i = 0; i < 1000; i++) {
		struct dw_dest_key d = i % 2 ? dest4("10.0.4.7", 80) : inbound(9000 + i % 20);

		assert_int_equal(dw_kplan_add_slot(p, &cfg, ids, i + 1, &d), 0);
	}
	assert_int_equal(p->nslots, 1000);
	for (unsigned i = 0; i < 1000; i++) {
		assert_int_equal(p->slots[i].slot, i + 1);
		assert_int_equal(p->slots[i].v.dep_id, i % 2 ? 9 : 0);
		assert_int_equal(p->slots[i].v.service, i % 2 ? 0 : (9000 + i % 20 <= 9010));
	}
	dw_kplan_free(p);
	free(p);
	dw_config_free(&cfg);
}

/* More prefixes than the trie holds: refused before anything is computed, nothing left over. */
static void test_too_many_prefixes(void **state)
{
	struct dw_dep_config deps[2] = {
		{ .nmatches = DW_MATCH_TRIE_ENTRIES / 2 },
		{ .nmatches = DW_MATCH_TRIE_ENTRIES / 2 + 1 },
	};
	struct dw_config cfg = { .deps = deps, .ndeps = 2 };
	struct dw_kplan *p = malloc(sizeof(*p));
	const struct dw_match *over = (const void *)1;

	(void)state;
	assert_int_equal(dw_kplan_match_prefixes(&cfg), DW_MATCH_TRIE_ENTRIES + 1);
	memset(p, 0xa5, sizeof(*p));
	assert_int_equal(dw_kplan_build(p, &cfg, ids, &over), -E2BIG);
	assert_null(over);
	assert_true(plan_is_empty(p));
	dw_kplan_free(p);
	free(p);
}

/*
 * More matches on one prefix than a trie entry has rules (the parser
 * refuses such a config; a hand-built one): refused, the culprit named,
 * nothing half-built left in the plan.
 */
static void test_too_many_rules(void **state)
{
	struct dw_dep_config deps[DW_MATCH_RULES + 1] = {};
	struct dw_match m[DW_MATCH_RULES + 1] = {};
	struct dw_config cfg = { .deps = deps, .ndeps = DW_MATCH_RULES + 1 };
	struct dw_kplan *p = malloc(sizeof(*p));
	unsigned many[DW_MATCH_RULES + 1];
	const struct dw_match *over = NULL;

	(void)state;
	for (unsigned i = 0; i <= DW_MATCH_RULES; i++) {
		m[i] = (struct dw_match){ .family = AF_INET, .prefix_len = 8, .addr = { 10 },
					  .port_lo = 100 + i, .port_hi = 100 + i, .line = 10 + i };
		deps[i].matches = &m[i];
		deps[i].nmatches = 1;
		many[i] = i + 1;
	}
	assert_int_equal(dw_kplan_build(p, &cfg, many, &over), -E2BIG);
	assert_non_null(over);
	assert_true(over >= m && over <= &m[DW_MATCH_RULES]);
	assert_true(plan_is_empty(p));
	free(p);
}

/* The writer's comparisons with the kernel's trie: stale keys, and room for old and new at once. */
static void test_trie_against_old(void **state)
{
	static const char next_conf[] =
		"[dependency payments]\n"
		"match = 10.0.3.0/24:443\n"
		"\n"
		"[dependency billing]\n"
		"match = 10.0.5.0/24\n";
	struct dw_config cfg, next;
	struct dw_kplan *p = malloc(sizeof(*p)), *q = malloc(sizeof(*q));
	struct dw_key_set old = {};
	struct dw_match_key k;
	unsigned stale = 0;

	(void)state;
	dwt_parse(base_conf, &cfg);
	dwt_parse(next_conf, &next);
	assert_int_equal(dw_kplan_build(p, &cfg, ids, NULL), 0);
	assert_int_equal(dw_kplan_build(q, &next, (const unsigned[]){ 5, 12 }, NULL), 0);
	for (unsigned i = 0; i < p->ntrie; i++)
		assert_int_equal(dw_key_set_add(&old, &p->trie[i].key), 0);
	dw_key_set_sort(&old);

	/* what the kernel holds from cfg, against next: orders' prefixes go, 10.0.3.0/24 stays */
	for (unsigned i = 0; i < old.n; i++)
		stale += !dw_key_set_has(&q->keys, &old.k[i]);
	assert_int_equal(stale, 2);
	k = key4("10.0.3.0", 24);
	assert_true(dw_key_set_has(&q->keys, &k));
	assert_false(dw_kplan_trie_overflows(q, &old));

	/* a trie full of other keys: the one new key does not fit beside them */
	for (unsigned i = old.n; i < DW_MATCH_TRIE_ENTRIES; i++) {
		char ip[32];

		snprintf(ip, sizeof(ip), "172.16.%u.%u", i / 256, i % 256);
		k = key4(ip, 32);
		assert_int_equal(dw_key_set_add(&old, &k), 0);
	}
	dw_key_set_sort(&old);
	assert_int_equal(old.n, DW_MATCH_TRIE_ENTRIES);
	assert_true(dw_kplan_trie_overflows(q, &old));
	/* the same config again needs no room */
	assert_false(dw_kplan_trie_overflows(p, &old));

	/* a key added twice is held once */
	k = key4("10.0.3.0", 24);
	assert_int_equal(dw_key_set_add(&old, &k), 0);
	dw_key_set_sort(&old);
	assert_int_equal(old.n, DW_MATCH_TRIE_ENTRIES);

	dw_key_set_free(&old);
	dw_kplan_free(p);
	dw_kplan_free(q);
	free(p);
	free(q);
	dw_config_free(&cfg);
	dw_config_free(&next);
}

/* --- user/kernel/kstate.c against maps in memory --- */

#define FAKE_FD 100
#define FAKE_KEY 64
#define FAKE_VALUE 256
#define FAKE_ENTRIES 256

struct fake_map {
	size_t klen, vlen;
	unsigned n;
	unsigned char key[FAKE_ENTRIES][FAKE_KEY];
	unsigned char value[FAKE_ENTRIES][FAKE_VALUE];
};

static struct fake_map maps[DW_MAP_BREAKERS + 1];
static int fail_at;		/* the fail_at-th write (update or delete) fails; 0: none */
static int writes;
static int slots_err;		/* what dw_bpf_for_each_slot returns instead of walking */
static bool services_on;

static const struct {
	__u32 slot;
	struct dw_dest_key dest;
} fake_slots[] = {
	{ 1, { .family = AF_INET, .port = 443, .addr = { 10, 0, 3, 9 } } },
	{ 2, { .family = AF_INET, .port = 80, .addr = { 10, 0, 4, 7 } } },
	{ 3, { .family = DW_FAMILY_INBOUND, .port = 8080 } },
	{ 4, { .family = AF_INET, .port = 80, .addr = { 10, 0, 5, 1 } } },
};

static struct fake_map *map_of(int fd)
{
	assert_true(fd >= FAKE_FD && fd <= FAKE_FD + DW_MAP_BREAKERS);
	return &maps[fd - FAKE_FD];
}

static int find(const struct fake_map *m, const void *key)
{
	for (unsigned i = 0; i < m->n; i++)
		if (!memcmp(m->key[i], key, m->klen))
			return i;
	return -1;
}

static bool write_fails(void)
{
	if (++writes != fail_at)
		return false;
	errno = ENOSPC;
	return true;
}

int bpf_map_lookup_elem(int fd, const void *key, void *value)
{
	struct fake_map *m = map_of(fd);
	int i = find(m, key);

	if (i < 0) {
		errno = ENOENT;
		return -1;
	}
	memcpy(value, m->value[i], m->vlen);
	return 0;
}

int bpf_map_update_elem(int fd, const void *key, const void *value, __u64 flags)
{
	struct fake_map *m = map_of(fd);
	int i = find(m, key);

	(void)flags;
	if (write_fails())
		return -1;
	if (i < 0) {
		assert_true(m->n < FAKE_ENTRIES);
		i = m->n++;
		memcpy(m->key[i], key, m->klen);
	}
	memcpy(m->value[i], value, m->vlen);
	return 0;
}

int bpf_map_delete_elem(int fd, const void *key)
{
	struct fake_map *m = map_of(fd);
	int i = find(m, key);

	if (write_fails())
		return -1;
	if (i < 0) {
		errno = ENOENT;
		return -1;
	}
	m->n--;
	memmove(m->key[i], m->key[i + 1], (m->n - i) * FAKE_KEY);
	memmove(m->value[i], m->value[i + 1], (m->n - i) * FAKE_VALUE);
	return 0;
}

/* A key not in the map starts from the first one, as the kernel's trie does. */
int bpf_map_get_next_key(int fd, const void *key, void *next)
{
	struct fake_map *m = map_of(fd);
	int i = key ? find(m, key) + 1 : 0;

	if ((unsigned)i >= m->n) {
		errno = ENOENT;
		return -1;
	}
	memcpy(next, m->key[i], m->klen);
	return 0;
}

int dw_bpf_map_fd(const struct dw_bpf *b, enum dw_bpf_map map)
{
	(void)b;
	return FAKE_FD + map;
}

void dw_bpf_set_services_on(struct dw_bpf *b, bool on)
{
	(void)b;
	services_on = on;
}

int dw_bpf_for_each_slot(struct dw_bpf *b, dw_slot_fn fn, void *arg)
{
	(void)b;
	if (slots_err)
		return slots_err;
	for (unsigned i = 0; i < sizeof(fake_slots) / sizeof(fake_slots[0]); i++) {
		int err = fn(fake_slots[i].slot, &fake_slots[i].dest, arg);

		if (err)
			return err;
	}
	return 0;
}

void dw_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

static void fake_reset(void)
{
	static const size_t klen[] = { sizeof(__u32), sizeof(struct dw_match_key), sizeof(__u32),
				       sizeof(__u32), sizeof(struct dw_breaker_key) };
	static const size_t vlen[] = { sizeof(struct dw_dep_cfg), sizeof(struct dw_match_rules),
				       sizeof(__u8), sizeof(struct dw_slot_cfg),
				       sizeof(struct dw_breaker_value) };

	for (unsigned i = 0; i <= DW_MAP_BREAKERS; i++) {
		assert_true(klen[i] <= FAKE_KEY && vlen[i] <= FAKE_VALUE);
		maps[i] = (struct fake_map){ .klen = klen[i], .vlen = vlen[i] };
	}
	fail_at = writes = slots_err = 0;
	services_on = false;
}

/* Every map as a set: the order entries were written in does not matter. */
static bool maps_equal(const struct fake_map *a, const struct fake_map *b)
{
	for (unsigned m = 0; m <= DW_MAP_BREAKERS; m++) {
		if (a[m].n != b[m].n)
			return false;
		for (unsigned i = 0; i < a[m].n; i++) {
			int j = find(&b[m], a[m].key[i]);

			if (j < 0 || memcmp(a[m].value[i], b[m].value[j], a[m].vlen))
				return false;
		}
	}
	return true;
}

static const char next_conf[] =
	"[defaults]\n"
	"slow_call = 2s\n"
	"\n"
	"[dependency payments]\n"
	"match = 10.0.3.0/24:443\n"
	"\n"
	"[dependency billing]\n"
	"match = 10.0.5.0/24\n"
	"\n"
	"[service api]\n"
	"listen = 8000-8002\n";

/* The breakers map entry of the dependency with id dep_id (orders: 9). */
static struct dw_breaker_op retire_op(unsigned dep_id)
{
	return (struct dw_breaker_op){ .key = { .dep_id = dep_id }, .remove = true };
}

/* base_conf applied, and orders' breaker open: the state a reload starts from. */
static void start_state(struct dw_kstate *ks, struct dw_config *cfg)
{
	struct dw_breaker_op open = { .key = { .dep_id = 9 },
				      .v = { .state = DW_BREAKER_OPEN, .name = "orders" } };

	fake_reset();
	dwt_parse(base_conf, cfg);
	dw_kstate_init(ks, (struct dw_bpf *)ks);
	assert_int_equal(dw_kstate_config(ks, cfg, ids, false, NULL, 0), 0);
	dw_kstate_breakers(ks, &open, 1);
}

/* A config's entries land in each map; a reload retires a breaker and remaps the slots. */
static void test_apply_then_reload(void **state)
{
	static const unsigned next_ids[] = { 5, 12 };
	struct dw_kstate ks;
	struct dw_config cfg, next;
	struct dw_breaker_op retire = retire_op(9);
	struct dw_slot_cfg sc;
	struct dw_match_key k;
	__u32 slot;
	__u8 on;

	(void)state;
	start_state(&ks, &cfg);
	assert_int_equal(maps[DW_MAP_DEP_CFG].n, 3);
	assert_int_equal(maps[DW_MAP_DEP_MATCH].n, 3);
	assert_int_equal(maps[DW_MAP_SERVICE_PORTS].n, 12);
	assert_int_equal(maps[DW_MAP_SLOT_CFG].n, 0);	/* the first load does not remap */
	assert_int_equal(maps[DW_MAP_BREAKERS].n, 1);
	assert_true(services_on);
	assert_true(dw_kplan_port_is_set(ks.service_port, 8080));

	dwt_parse(next_conf, &next);
	assert_int_equal(dw_kstate_config(&ks, &next, next_ids, true, &retire, 1), 0);
	assert_int_equal(maps[DW_MAP_BREAKERS].n, 0);
	/* 9's settings stay (an id is not reused at once) */
	assert_int_equal(maps[DW_MAP_DEP_CFG].n, 4);
	/* the trie: 10.0.3.0/24 kept, 10.0.5.0/24 new, orders' two prefixes gone */
	assert_int_equal(maps[DW_MAP_DEP_MATCH].n, 2);
	k = key4("10.0.5.0", 24);
	assert_true(find(&maps[DW_MAP_DEP_MATCH], &k) >= 0);
	k = key4("10.0.4.7", 32);
	assert_true(find(&maps[DW_MAP_DEP_MATCH], &k) < 0);
	/* 8080 and 9000-9010 written to 0, 8000-8002 to 1 */
	assert_int_equal(maps[DW_MAP_SERVICE_PORTS].n, 15);
	for (__u32 port = 8000; port <= 8002; port++) {
		int fd = FAKE_FD + DW_MAP_SERVICE_PORTS;

		assert_int_equal(bpf_map_lookup_elem(fd, &port, &on), 0);
		assert_int_equal(on, 1);
	}
	slot = 9000;
	assert_int_equal(bpf_map_lookup_elem(FAKE_FD + DW_MAP_SERVICE_PORTS, &slot, &on), 0);
	assert_int_equal(on, 0);
	assert_false(dw_kplan_port_is_set(ks.service_port, 8080));
	assert_true(dw_kplan_port_is_set(ks.service_port, 8001));
	/* each slot matched again: payments, nothing (orders went), no service, billing */
	assert_int_equal(maps[DW_MAP_SLOT_CFG].n, 4);
	for (slot = 1; slot <= 4; slot++) {
		static const unsigned want[] = { 0, 5, 0, 0, 12 };

		assert_int_equal(bpf_map_lookup_elem(FAKE_FD + DW_MAP_SLOT_CFG, &slot, &sc), 0);
		assert_int_equal(sc.dep_id, want[slot]);
		assert_int_equal(sc.service, 0);
	}
	dw_config_free(&cfg);
	dw_config_free(&next);
}

/* Whichever write of a reload fails, every map is as it was, and so is kstate's own view. */
static void test_reload_all_or_nothing(void **state)
{
	static const unsigned next_ids[] = { 5, 12 };
	static struct fake_map before[DW_MAP_BREAKERS + 1];
	struct dw_kstate ks;
	struct dw_config cfg, next;
	struct dw_breaker_op retire = retire_op(9);
	uint8_t ports[DW_PORT_BITS];
	int total;

	(void)state;
	start_state(&ks, &cfg);
	dwt_parse(next_conf, &next);
	memcpy(before, maps, sizeof(maps));
	memcpy(ports, ks.service_port, sizeof(ports));
	writes = 0;
	assert_int_equal(dw_kstate_config(&ks, &next, next_ids, true, &retire, 1), 0);
	total = writes;
	assert_true(total > 20);

	for (int n = 1; n <= total; n++) {
		memcpy(maps, before, sizeof(maps));
		memcpy(ks.service_port, ports, sizeof(ports));
		services_on = true;
		writes = 0;
		fail_at = n;
		if (dw_kstate_config(&ks, &next, next_ids, true, &retire, 1) != -ENOSPC)
			fail_msg("write %d of %d failed, the reload did not", n, total);
		fail_at = 0;
		if (!maps_equal(maps, before) || !maps_equal(before, maps))
			fail_msg("write %d of %d failed: the maps are not as they were", n, total);
		assert_memory_equal(ks.service_port, ports, sizeof(ports));
		assert_true(services_on);
	}
	dw_config_free(&cfg);
	dw_config_free(&next);
}

/* What fails to compute (here, the slot list) fails before the first write. */
static void test_nothing_written_before_the_plan_is_whole(void **state)
{
	static const unsigned next_ids[] = { 5, 12 };
	struct dw_kstate ks;
	struct dw_config cfg, next;
	struct dw_breaker_op retire = retire_op(9);

	(void)state;
	start_state(&ks, &cfg);
	dwt_parse(next_conf, &next);
	writes = 0;
	slots_err = -EIO;
	assert_int_equal(dw_kstate_config(&ks, &next, next_ids, true, &retire, 1), -EIO);
	assert_int_equal(writes, 0);
	assert_int_equal(maps[DW_MAP_BREAKERS].n, 1);
	dw_config_free(&cfg);
	dw_config_free(&next);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dep_cfg),
		cmocka_unit_test(test_trie),
		cmocka_unit_test(test_service_ports),
		cmocka_unit_test(test_slot_cfg),
		cmocka_unit_test(test_dest_dep_cfg),
		cmocka_unit_test(test_slots_added),
		cmocka_unit_test(test_too_many_prefixes),
		cmocka_unit_test(test_too_many_rules),
		cmocka_unit_test(test_trie_against_old),
		cmocka_unit_test(test_apply_then_reload),
		cmocka_unit_test(test_reload_all_or_nothing),
		cmocka_unit_test(test_nothing_written_before_the_plan_is_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
