// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "logic/config/config.h"
#include "logic/kernel/kplan.h"

/* --- Sets of trie keys --- */

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct dw_match_key));
}

int dw_key_set_add(struct dw_key_set *s, const struct dw_match_key *key)
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

void dw_key_set_sort(struct dw_key_set *s)
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

bool dw_key_set_has(const struct dw_key_set *s, const struct dw_match_key *key)
{
	return s->n && bsearch(key, s->k, s->n, sizeof(*key), key_cmp);
}

void dw_key_set_free(struct dw_key_set *s)
{
	free(s->k);
	memset(s, 0, sizeof(*s));
}

/* --- dep_cfg --- */

/* The kernel's DW_ENFORCE_* bits of one dependency's settings (enforce = abort: both). */
static __u32 enforce_bits(const struct dw_dep_settings *s)
{
	return (s->enforce_connect ? DW_ENFORCE_CONNECT : 0) |
	       (s->enforce_abort ? DW_ENFORCE_ABORT : 0);
}

struct dw_dep_cfg dw_kplan_dep_cfg_of(const struct dw_dep_settings *s)
{
	struct dw_dep_cfg c = { .slow_call_ns = s->slow_call_ns, .enforce = enforce_bits(s),
				.multiplexed = s->judge_multiplexed,
				.abort_after_ns = s->abort_after_ns,
				.dns_timeout_ns = s->dns_timeout_ns };

	_Static_assert(sizeof(c.fail_status) == sizeof(s->failure_status.bits),
		       "the kernel's failure_status bits are outcome.h's");
	memcpy(c.fail_status, s->failure_status.bits, sizeof(c.fail_status));
	return c;
}

struct dw_dep_cfg dw_kplan_dest_dep_cfg(const struct dw_config *cfg, const struct dw_dest_key *dest)
{
	int i = dw_config_lookup(cfg, dest->family, dest->addr, dest->port);

	return dw_kplan_dep_cfg_of(i >= 0 ? &cfg->deps[i].s : &cfg->defaults);
}

/* Id 0 is every destination no match covers: the defaults. */
static int plan_dep_cfg(struct dw_kplan *p, const struct dw_config *cfg, const unsigned *ids)
{
	p->dep_cfg = calloc(cfg->ndeps + 1, sizeof(*p->dep_cfg));
	if (!p->dep_cfg)
		return -ENOMEM;
	p->dep_cfg[0] = (struct dw_kplan_dep_cfg){ 0, dw_kplan_dep_cfg_of(&cfg->defaults) };
	for (unsigned i = 0; i < cfg->ndeps; i++) {
		p->dep_cfg[i + 1].id = ids[i];
		p->dep_cfg[i + 1].v = dw_kplan_dep_cfg_of(&cfg->deps[i].s);
	}
	p->ndep_cfg = cfg->ndeps + 1;
	return 0;
}

/* --- The match trie: its entries are match.c's (the most specific match wins). --- */

unsigned dw_kplan_match_prefixes(const struct dw_config *cfg)
{
	unsigned n = 0;

	for (unsigned i = 0; i < cfg->ndeps; i++)
		n += cfg->deps[i].nmatches;
	return n;
}

static int plan_trie(struct dw_kplan *p, const struct dw_config *cfg, const unsigned *ids,
		     const struct dw_match **over)
{
	int err = dw_match_entries(cfg, ids, &p->trie, &p->ntrie, over);

	for (unsigned i = 0; i < p->ntrie && !err; i++)
		err = dw_key_set_add(&p->keys, &p->trie[i].key);
	if (!err)
		dw_key_set_sort(&p->keys);
	return err;
}

bool dw_kplan_trie_overflows(const struct dw_kplan *p, const struct dw_key_set *old)
{
	unsigned fresh = 0;

	for (unsigned i = 0; i < p->keys.n; i++)
		fresh += !dw_key_set_has(old, &p->keys.k[i]);
	return old->n + fresh > DW_MATCH_TRIE_ENTRIES;
}

/* --- [service] ports --- */

static bool is_service_port(const struct dw_config *cfg, unsigned port)
{
	for (unsigned i = 0; i < cfg->nservices; i++)
		if (port >= cfg->services[i].port_lo && port <= cfg->services[i].port_hi)
			return true;
	return false;
}

bool dw_kplan_port_is_set(const uint8_t *bits, unsigned port)
{
	return bits[port / 8] & (1u << (port % 8));
}

static void plan_service_ports(struct dw_kplan *p, const struct dw_config *cfg)
{
	for (unsigned port = 1; port < 65536; port++)
		if (is_service_port(cfg, port))
			p->service_port[port / 8] |= 1u << (port % 8);
	p->services_on = cfg->nservices > 0;
}

/* --- slot_cfg: each destination slot matched again --- */

struct dw_slot_cfg dw_kplan_slot_cfg(const struct dw_config *cfg, const unsigned *ids,
				     const struct dw_dest_key *dest)
{
	struct dw_slot_cfg sc = {};
	int cfg_index = -1;

	if (dw_row_kind_of(dest) == DW_ROW_LISTENER)
		sc.service = is_service_port(cfg, dest->port);
	else
		cfg_index = dw_config_lookup(cfg, dest->family, dest->addr, dest->port);
	if (cfg_index >= 0)
		sc.dep_id = ids[cfg_index];
	return sc;
}

int dw_kplan_add_slot(struct dw_kplan *p, const struct dw_config *cfg, const unsigned *ids,
		      __u32 slot, const struct dw_dest_key *dest)
{
	if (p->nslots == p->slots_cap) {
		unsigned cap = p->slots_cap ? p->slots_cap * 2 : 256;
		struct dw_kplan_slot *s = realloc(p->slots, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		p->slots = s;
		p->slots_cap = cap;
	}
	p->slots[p->nslots++] = (struct dw_kplan_slot){ slot, dw_kplan_slot_cfg(cfg, ids, dest) };
	return 0;
}

/* --- A config, whole --- */

int dw_kplan_build(struct dw_kplan *p, const struct dw_config *cfg, const unsigned *ids,
		   const struct dw_match **over)
{
	int err;

	memset(p, 0, sizeof(*p));
	if (over)
		*over = NULL;
	if (dw_kplan_match_prefixes(cfg) > DW_MATCH_TRIE_ENTRIES)
		return -E2BIG;
	err = plan_dep_cfg(p, cfg, ids);
	if (!err)
		err = plan_trie(p, cfg, ids, over);
	if (err) {
		dw_kplan_free(p);
		return err;
	}
	plan_service_ports(p, cfg);
	return 0;
}

void dw_kplan_free(struct dw_kplan *p)
{
	free(p->dep_cfg);
	free(p->trie);
	dw_key_set_free(&p->keys);
	free(p->slots);
	memset(p, 0, sizeof(*p));
}
