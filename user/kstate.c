// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "kstate.h"
#include "logic/match.h"
#include "loader.h"
#include "log.h"
#include "logic/breaker.h"
#include "logic/config.h"

void dw_kstate_init(struct dw_kstate *ks, struct dw_bpf *b)
{
	memset(ks, 0, sizeof(*ks));
	ks->b = b;
}

/* --- The undo log: every write remembers what it replaced. --- */

union map_key {
	__u32 u32;
	struct dw_match_key match;
	struct dw_breaker_key breaker;
};

union map_value {
	struct dw_dep_cfg dep_cfg;
	struct dw_match_rules rules;
	__u8 u8;
	struct dw_slot_cfg slot;
	struct dw_breaker_value breaker;
};

struct undo {
	int fd;
	bool had;			/* the key was there, with old */
	union map_key key;
	union map_value old;
};

struct journal {
	struct undo *u;
	unsigned n, cap;
};

static struct undo *journal_add(struct journal *j, int fd, const void *key, size_t klen)
{
	struct undo *u;

	if (j->n == j->cap) {
		unsigned cap = j->cap ? j->cap * 2 : 256;
		struct undo *p = realloc(j->u, cap * sizeof(*p));

		if (!p)
			return NULL;
		j->u = p;
		j->cap = cap;
	}
	u = &j->u[j->n++];
	memset(u, 0, sizeof(*u));
	u->fd = fd;
	memcpy(&u->key, key, klen);
	return u;
}

/* had: whether key is in the map (the trie's lookup matches prefixes: the caller knows). */
static int journal_write(struct journal *j, int fd, const void *key, size_t klen, bool had,
			 const void *value)
{
	struct undo *u = journal_add(j, fd, key, klen);

	if (!u)
		return -ENOMEM;
	u->had = had && !bpf_map_lookup_elem(fd, key, &u->old);
	return bpf_map_update_elem(fd, key, value, BPF_ANY) ? -errno : 0;
}

static int journal_delete(struct journal *j, int fd, const void *key, size_t klen)
{
	struct undo *u = journal_add(j, fd, key, klen);

	if (!u)
		return -ENOMEM;
	u->had = !bpf_map_lookup_elem(fd, key, &u->old);
	if (bpf_map_delete_elem(fd, key) && errno != ENOENT)
		return -errno;
	return 0;
}

/* Newest first, so a key written twice gets its first old value back. */
static void journal_undo(struct journal *j)
{
	for (unsigned i = j->n; i-- > 0;) {
		struct undo *u = &j->u[i];

		if (u->had)
			bpf_map_update_elem(u->fd, &u->key, &u->old, BPF_ANY);
		else
			bpf_map_delete_elem(u->fd, &u->key);
	}
}

/* --- dep_cfg --- */

/* The kernel's DW_ENFORCE_* bits of one dependency's settings (enforce = abort: both). */
static __u32 enforce_bits(const struct dw_dep_settings *s)
{
	return (s->enforce_connect ? DW_ENFORCE_CONNECT : 0) |
	       (s->enforce_abort ? DW_ENFORCE_ABORT : 0);
}

static struct dw_dep_cfg dep_cfg_of(const struct dw_dep_settings *s)
{
	return (struct dw_dep_cfg){ .slow_call_ns = s->slow_call_ns, .enforce = enforce_bits(s),
				    .multiplexed = s->judge_multiplexed,
				    .abort_after_ns = s->abort_after_ns };
}

/* Id 0 is every destination no match covers: the defaults. */
static int dep_cfg_write(struct journal *j, int fd, const struct dw_config *cfg,
			 const unsigned *ids)
{
	struct dw_dep_cfg dc = dep_cfg_of(&cfg->defaults);
	__u32 id = 0;
	int err = journal_write(j, fd, &id, sizeof(id), true, &dc);

	for (unsigned i = 0; i < cfg->ndeps && !err; i++) {
		id = ids[i];
		dc = dep_cfg_of(&cfg->deps[i].s);
		err = journal_write(j, fd, &id, sizeof(id), true, &dc);
	}
	if (err)
		dw_err("cannot write dependency settings to the kernel: %s", strerror(-err));
	return err;
}

/* --- The match trie: its entries are logic/match.c's (the most specific match wins). --- */

unsigned dw_kstate_match_prefixes(const struct dw_config *cfg)
{
	unsigned n = 0;

	for (unsigned i = 0; i < cfg->ndeps; i++)
		n += cfg->deps[i].nmatches;
	return n;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct dw_match_key));
}

/* A set of trie keys, sorted for lookups. */
struct key_set {
	struct dw_match_key *k;
	unsigned n, cap;
};

static int key_set_add(struct key_set *s, const struct dw_match_key *key)
{
	if (s->n == s->cap) {
		unsigned cap = s->cap ? s->cap * 2 : 64;
		struct dw_match_key *p = realloc(s->k, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->k = p;
		s->cap = cap;
	}
	s->k[s->n++] = *key;
	return 0;
}

/* Sorted, each key once: two matches may name the same prefix (other ports). */
static void key_set_sort(struct key_set *s)
{
	unsigned n = 0;

	if (!s->n)
		return;
	qsort(s->k, s->n, sizeof(*s->k), key_cmp);
	for (unsigned i = 1; i < s->n; i++)
		if (key_cmp(&s->k[i], &s->k[n]))
			s->k[++n] = s->k[i];
	s->n = n + 1;
}

static bool key_set_has(const struct key_set *s, const struct dw_match_key *key)
{
	return s->n && bsearch(key, s->k, s->n, sizeof(*key), key_cmp);
}

/* A key that is never in the trie (no family bits) makes get_next_key start from the first one. */
static int trie_keys(int fd, struct key_set *old)
{
	struct dw_match_key prev = {}, key;

	while (bpf_map_get_next_key(fd, &prev, &key) == 0) {
		if (key_set_add(old, &key))
			return -ENOMEM;
		prev = key;
	}
	key_set_sort(old);
	return 0;
}

/* The whole trie cfg wants, its keys sorted; nothing written. */
static int trie_build(const struct dw_config *cfg, const unsigned *ids, struct dw_match_entry **out,
		      unsigned *n, struct key_set *keys)
{
	const struct dw_match *over = NULL;
	int err = dw_match_entries(cfg, ids, out, n, &over);

	if (err == -E2BIG && over)
		dw_err("more than %d matches cover %s line %d", DW_MATCH_RULES, cfg->source, over->line);
	for (unsigned i = 0; i < *n && !err; i++)
		err = key_set_add(keys, &(*out)[i].key);
	if (err) {
		free(*out);
		*out = NULL;
		return err;
	}
	key_set_sort(keys);
	return 0;
}

static int trie_delete_stale(struct journal *j, int fd, const struct key_set *old,
			     const struct key_set *want)
{
	for (unsigned i = 0; i < old->n; i++) {
		int err;

		if (key_set_has(want, &old->k[i]))
			continue;
		err = journal_delete(j, fd, &old->k[i], sizeof(old->k[i]));
		if (err)
			return err;
	}
	return 0;
}

/* Whether the old entries and the new ones would not fit in the trie at once. */
static bool trie_overflows(const struct key_set *old, const struct key_set *want)
{
	unsigned fresh = 0;

	for (unsigned i = 0; i < want->n; i++)
		fresh += !key_set_has(old, &want->k[i]);
	return old->n + fresh > DW_MATCH_TRIE_ENTRIES;
}

/*
 * Additive: the new entries first, then the stale ones go, so a connect
 * never sees an empty trie. Unless both would not fit at once: then the
 * stale ones go first.
 */
static int trie_write(struct journal *j, int fd, const struct dw_config *cfg, const unsigned *ids)
{
	struct key_set old = {}, want = {};
	struct dw_match_entry *e = NULL;
	bool stale_first;
	unsigned n = 0;
	int err;

	err = trie_build(cfg, ids, &e, &n, &want);
	if (!err)
		err = trie_keys(fd, &old);
	if (err)
		goto out;
	stale_first = trie_overflows(&old, &want);
	if (stale_first)
		err = trie_delete_stale(j, fd, &old, &want);
	for (unsigned i = 0; i < n && !err; i++)
		err = journal_write(j, fd, &e[i].key, sizeof(e[i].key), key_set_has(&old, &e[i].key),
				    &e[i].rules);
	if (!err && !stale_first)
		err = trie_delete_stale(j, fd, &old, &want);
	if (err)
		dw_err("cannot write the match trie to the kernel: %s", strerror(-err));
out:
	free(e);
	free(old.k);
	free(want.k);
	return err;
}

/* --- [service] ports --- */

static bool is_service_port(const struct dw_config *cfg, unsigned port)
{
	for (unsigned i = 0; i < cfg->nservices; i++)
		if (port >= cfg->services[i].port_lo && port <= cfg->services[i].port_hi)
			return true;
	return false;
}

static bool has_service_port(const struct dw_kstate *ks, unsigned port)
{
	return ks->service_port[port / 8] & (1u << (port % 8));
}

/* Only the ports whose answer changes are written; the bits follow once all took. */
static int service_ports_write(struct journal *j, int fd, const struct dw_kstate *ks,
			       const struct dw_config *cfg)
{
	for (__u32 port = 1; port < 65536; port++) {
		__u8 want = is_service_port(cfg, port);
		int err;

		if (has_service_port(ks, port) == want)
			continue;
		err = journal_write(j, fd, &port, sizeof(port), true, &want);
		if (err) {
			dw_err("cannot write service ports to the kernel: %s", strerror(-err));
			return err;
		}
	}
	return 0;
}

static void service_ports_took(struct dw_kstate *ks, const struct dw_config *cfg)
{
	for (unsigned port = 1; port < 65536; port++)
		if (has_service_port(ks, port) != is_service_port(cfg, port))
			ks->service_port[port / 8] ^= 1u << (port % 8);
	dw_bpf_set_services_on(ks->b, cfg->nservices > 0);
}

/* --- slot_cfg: each destination slot matched again --- */

struct remap {
	struct journal *j;
	int fd;
	const struct dw_config *cfg;
	const unsigned *ids;
};

/* A slot's configuration as the kernel would fill it from the new config (slot_cfg_fill). */
static int remap_slot(__u32 slot, const struct dw_dest_key *dest, void *arg)
{
	const struct remap *r = arg;
	struct dw_slot_cfg cfg = {};
	int cfg_index = -1;

	if (dw_row_kind_of(dest) == DW_ROW_LISTENER)
		cfg.service = is_service_port(r->cfg, dest->port);
	else
		cfg_index = dw_config_lookup(r->cfg, dest->family, dest->addr, dest->port);
	if (cfg_index >= 0)
		cfg.dep_id = r->ids[cfg_index];
	return journal_write(r->j, r->fd, &slot, sizeof(slot), true, &cfg);
}

/* --- A config, whole --- */

static int retire_breakers(struct journal *j, int fd, const struct dw_breaker_op *retire,
			   unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int err = journal_delete(j, fd, &retire[i].key, sizeof(retire[i].key));

		if (err)
			return err;
	}
	return 0;
}

static int config_write(struct dw_kstate *ks, struct journal *j, const struct dw_config *cfg,
			const unsigned *ids, bool remap)
{
	struct remap r = { j, dw_bpf_map_fd(ks->b, DW_MAP_SLOT_CFG), cfg, ids };
	int err;

	err = dep_cfg_write(j, dw_bpf_map_fd(ks->b, DW_MAP_DEP_CFG), cfg, ids);
	if (!err)
		err = trie_write(j, dw_bpf_map_fd(ks->b, DW_MAP_DEP_MATCH), cfg, ids);
	if (!err)
		err = service_ports_write(j, dw_bpf_map_fd(ks->b, DW_MAP_SERVICE_PORTS), ks, cfg);
	if (!err && remap)
		err = dw_bpf_for_each_slot(ks->b, remap_slot, &r);
	return err;
}

int dw_kstate_config(struct dw_kstate *ks, const struct dw_config *cfg, const unsigned *ids,
		     bool remap, const struct dw_breaker_op *retire, unsigned nretire)
{
	struct journal j = {};
	int err;

	if (dw_kstate_match_prefixes(cfg) > DW_MATCH_TRIE_ENTRIES) {
		dw_err("%s: %u matches, the kernel's match trie holds %d", cfg->source,
		       dw_kstate_match_prefixes(cfg), DW_MATCH_TRIE_ENTRIES);
		return -E2BIG;
	}
	err = retire_breakers(&j, dw_bpf_map_fd(ks->b, DW_MAP_BREAKERS), retire, nretire);
	if (!err)
		err = config_write(ks, &j, cfg, ids, remap);
	if (err)
		journal_undo(&j);
	else
		service_ports_took(ks, cfg);
	free(j.u);
	return err;
}

/* --- The breakers map --- */

/*
 * The kernel spends the half-open probe budget; the lease renewal must not
 * refill it. A new state (or a new half-open period) gets a fresh budget.
 * A probe taken between this read and the write is given back: at most one
 * extra probe per interval.
 */
static void keep_probes(int fd, struct dw_breaker_op *op)
{
	struct dw_breaker_value old;

	if (op->v.state != DW_BREAKER_HALF_OPEN)
		return;
	if (!bpf_map_lookup_elem(fd, &op->key, &old) && old.state == DW_BREAKER_HALF_OPEN &&
	    old.since_ns == op->v.since_ns)
		op->v.probes_left = old.probes_left;
}

void dw_kstate_breakers(struct dw_kstate *ks, const struct dw_breaker_op *ops, unsigned n)
{
	int fd = dw_bpf_map_fd(ks->b, DW_MAP_BREAKERS);

	for (unsigned i = 0; i < n; i++) {
		struct dw_breaker_op op = ops[i];

		if (op.remove) {
			bpf_map_delete_elem(fd, &op.key);
			continue;
		}
		keep_probes(fd, &op);
		if (bpf_map_update_elem(fd, &op.key, &op.v, BPF_ANY))
			dw_debug("breakers map: cannot write %s: %s", op.v.name, strerror(errno));
	}
}
