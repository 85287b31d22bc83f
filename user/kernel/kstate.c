// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "kernel/kstate.h"
#include "logic/kernel/kplan.h"
#include "kernel/loader.h"
#include "kernel/maprows.h"
#include "host/log.h"
#include "logic/judge/breaker.h"
#include "logic/config/config.h"

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

static int dep_cfg_write(struct journal *j, int fd, const struct dw_kplan *p)
{
	int err = 0;

	for (unsigned i = 0; i < p->ndep_cfg && !err; i++)
		err = journal_write(j, fd, &p->dep_cfg[i].id, sizeof(p->dep_cfg[i].id), true,
				    &p->dep_cfg[i].v);
	if (err)
		dw_err("cannot write dependency settings to the kernel: %s", strerror(-err));
	return err;
}

/* --- The match trie: its entries are logic/config/match.c's (the most specific match wins). --- */

unsigned dw_kstate_match_prefixes(const struct dw_config *cfg)
{
	return dw_kplan_match_prefixes(cfg);
}

/* A key that is never in the trie (no family bits) makes get_next_key start from the first one. */
static int trie_keys(int fd, struct dw_key_set *old)
{
	struct dw_match_key prev = {}, key;

	while (bpf_map_get_next_key(fd, &prev, &key) == 0) {
		if (dw_key_set_add(old, &key))
			return -ENOMEM;
		prev = key;
	}
	dw_key_set_sort(old);
	return 0;
}

static int trie_delete_stale(struct journal *j, int fd, const struct dw_key_set *old,
			     const struct dw_key_set *want)
{
	for (unsigned i = 0; i < old->n; i++) {
		int err;

		if (dw_key_set_has(want, &old->k[i]))
			continue;
		err = journal_delete(j, fd, &old->k[i], sizeof(old->k[i]));
		if (err)
			return err;
	}
	return 0;
}

/*
 * Additive: the new entries first, then the stale ones go, so a connect
 * never sees an empty trie. Unless both would not fit at once: then the
 * stale ones go first.
 */
static int trie_write(struct journal *j, int fd, const struct dw_kplan *p)
{
	struct dw_key_set old = {};
	bool stale_first;
	int err;

	err = trie_keys(fd, &old);
	if (err)
		goto out;
	stale_first = dw_kplan_trie_overflows(p, &old);
	if (stale_first)
		err = trie_delete_stale(j, fd, &old, &p->keys);
	for (unsigned i = 0; i < p->ntrie && !err; i++)
		err = journal_write(j, fd, &p->trie[i].key, sizeof(p->trie[i].key),
				    dw_key_set_has(&old, &p->trie[i].key), &p->trie[i].rules);
	if (!err && !stale_first)
		err = trie_delete_stale(j, fd, &old, &p->keys);
out:
	if (err)
		dw_err("cannot write the match trie to the kernel: %s", strerror(-err));
	dw_key_set_free(&old);
	return err;
}

/* --- [service] ports --- */

/* Only the ports whose answer changes are written; the bits follow once all took. */
static int service_ports_write(struct journal *j, int fd, const struct dw_kstate *ks,
			       const struct dw_kplan *p)
{
	for (__u32 port = 1; port < 65536; port++) {
		__u8 want = dw_kplan_port_is_set(p->service_port, port);
		int err;

		if (dw_kplan_port_is_set(ks->service_port, port) == want)
			continue;
		err = journal_write(j, fd, &port, sizeof(port), true, &want);
		if (err) {
			dw_err("cannot write service ports to the kernel: %s", strerror(-err));
			return err;
		}
	}
	return 0;
}

static void service_ports_took(struct dw_kstate *ks, const struct dw_kplan *p)
{
	memcpy(ks->service_port, p->service_port, sizeof(ks->service_port));
	dw_bpf_set_services_on(ks->b, p->services_on);
}

/* --- slot_cfg: each destination slot matched again --- */

struct remap {
	struct dw_kplan *p;
	const struct dw_config *cfg;
	const unsigned *ids;
};

/* A slot's configuration as the kernel would fill it from the new config (slot_cfg_fill). */
static int remap_slot(__u32 slot, const struct dw_dest_key *dest, void *arg)
{
	const struct remap *r = arg;

	return dw_kplan_add_slot(r->p, r->cfg, r->ids, slot, dest);
}

static int slots_write(struct journal *j, int fd, const struct dw_kplan *p)
{
	for (unsigned i = 0; i < p->nslots; i++) {
		int err = journal_write(j, fd, &p->slots[i].slot, sizeof(p->slots[i].slot), true,
					&p->slots[i].v);

		if (err)
			return err;
	}
	return 0;
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

/* Everything cfg wants, computed before anything is written; logs why not. */
static int config_plan(struct dw_kstate *ks, struct dw_kplan *p, const struct dw_config *cfg,
		       const unsigned *ids, bool remap)
{
	struct remap r = { p, cfg, ids };
	const struct dw_match *over;
	int err = dw_kplan_build(p, cfg, ids, &over);

	if (err == -E2BIG && over)
		dw_err("more than %d matches cover %s line %d", DW_MATCH_RULES, cfg->source,
		       over->line);
	else if (err == -E2BIG)
		dw_err("%s: %u matches, the kernel's match trie holds %d", cfg->source,
		       dw_kplan_match_prefixes(cfg), DW_MATCH_TRIE_ENTRIES);
	else if (err)
		dw_err("cannot compute the kernel's state for %s: %s", cfg->source, strerror(-err));
	if (!err && remap)
		err = dw_bpf_for_each_slot(ks->b, remap_slot, &r);
	return err;
}

static int config_write(struct dw_kstate *ks, struct journal *j, const struct dw_kplan *p,
			const struct dw_breaker_op *retire, unsigned nretire)
{
	int err;

	err = retire_breakers(j, dw_bpf_map_fd(ks->b, DW_MAP_BREAKERS), retire, nretire);
	if (!err)
		err = dep_cfg_write(j, dw_bpf_map_fd(ks->b, DW_MAP_DEP_CFG), p);
	if (!err)
		err = trie_write(j, dw_bpf_map_fd(ks->b, DW_MAP_DEP_MATCH), p);
	if (!err)
		err = service_ports_write(j, dw_bpf_map_fd(ks->b, DW_MAP_SERVICE_PORTS), ks, p);
	if (!err)
		err = slots_write(j, dw_bpf_map_fd(ks->b, DW_MAP_SLOT_CFG), p);
	return err;
}

int dw_kstate_config(struct dw_kstate *ks, const struct dw_config *cfg, const unsigned *ids,
		     bool remap, const struct dw_breaker_op *retire, unsigned nretire)
{
	struct journal j = {};
	struct dw_kplan *p = malloc(sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	err = config_plan(ks, p, cfg, ids, remap);
	if (err)
		goto out;
	err = config_write(ks, &j, p, retire, nretire);
	if (err)
		journal_undo(&j);
	else
		service_ports_took(ks, p);
	free(j.u);
out:
	dw_kplan_free(p);
	free(p);
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
