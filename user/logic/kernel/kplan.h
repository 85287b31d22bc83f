/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel state a config wants, computed whole before anything is
 * written (user/kernel/kstate.c writes it, with an undo log): each dependency's
 * dep_cfg entry, the dep_match trie's entries (match.h's dw_match_entries),
 * the [service] ports, and, at a reload, each destination slot's
 * dependency (slot_cfg). Also the comparisons with what the kernel holds
 * that the writer needs: which trie keys are stale, whether the old and the
 * new entries fit in the trie at once.
 *
 * Pure: no I/O, no bpf calls, no syslog. Only memory is allocated.
 */
#ifndef DW_KPLAN_H
#define DW_KPLAN_H

#include <stdbool.h>
#include <stdint.h>
#include "logic/base/dwtypes.h"
#include "logic/config/match.h"

struct dw_config;
struct dw_dep_settings;

/* DW_MATCH_TRIE_ENTRIES, the match trie's size: bpf/depwatch.h. */
#define DW_PORT_BITS (DW_PORTS / 8)

/* A set of trie keys, sorted for lookups (after dw_key_set_sort), each once. */
struct dw_key_set {
	struct dw_match_key *k;
	unsigned n, cap;
};

/* 0 or -ENOMEM. */
int dw_key_set_add(struct dw_key_set *s, const struct dw_match_key *key);
/* Sorted, each key once: two matches may name the same prefix (other ports). */
void dw_key_set_sort(struct dw_key_set *s);
bool dw_key_set_has(const struct dw_key_set *s, const struct dw_match_key *key);
void dw_key_set_free(struct dw_key_set *s);

struct dw_kplan_dep_cfg {
	__u32 id;
	struct dw_dep_cfg v;
};

struct dw_kplan_slot {
	__u32 slot;
	struct dw_slot_cfg v;
};

struct dw_kplan {
	/* id 0 (the defaults: every destination no match covers) first, then cfg->deps in order */
	struct dw_kplan_dep_cfg *dep_cfg;
	unsigned ndep_cfg;
	struct dw_match_entry *trie;	/* sorted by key */
	unsigned ntrie;
	struct dw_key_set keys;		/* the trie's keys, sorted */
	uint8_t service_port[DW_PORT_BITS];	/* bit set: a [service] listens on that port */
	bool services_on;		/* the config has a [service] */
	struct dw_kplan_slot *slots;	/* dw_kplan_slot's, in the order given */
	unsigned nslots, slots_cap;
};

/* Prefixes the trie needs for cfg (every match of every dependency). */
unsigned dw_kplan_match_prefixes(const struct dw_config *cfg);

/* The kernel's dep_cfg value of one dependency's settings. */
struct dw_dep_cfg dw_kplan_dep_cfg_of(const struct dw_dep_settings *s);

/*
 * The dep_cfg the programs find for an outbound destination under cfg: its
 * slot's dependency's (dw_kplan_slot_cfg), or id 0's, the defaults, when
 * no match covers it; as the plan writes them.
 */
struct dw_dep_cfg dw_kplan_dest_dep_cfg(const struct dw_config *cfg,
					 const struct dw_dest_key *dest);

/*
 * cfg's kernel state (ids[i], never NULL, is cfg->deps[i]'s dependency id) into *p,
 * which it zeroes first. 0; -E2BIG when the trie cannot hold cfg: more
 * than DW_MATCH_TRIE_ENTRIES prefixes (*over NULL), or more than
 * DW_MATCH_RULES matches cover one prefix (*over one of them; a parsed
 * config never has that); -ENOMEM. On an error *p is left empty.
 */
int dw_kplan_build(struct dw_kplan *p, const struct dw_config *cfg, const unsigned *ids,
		   const struct dw_match **over);
void dw_kplan_free(struct dw_kplan *p);

/* Whether port is a [service]'s in bits (a plan's or the kernel's as last written). */
bool dw_kplan_port_is_set(const uint8_t *bits, unsigned port);

/*
 * A destination slot's slot_cfg as the kernel would fill it from cfg
 * (slot_cfg_fill): an inbound row says whether a [service] listens on its
 * port; another, the dependency whose match wins (0: none).
 */
struct dw_slot_cfg dw_kplan_slot_cfg(const struct dw_config *cfg, const unsigned *ids,
				     const struct dw_dest_key *dest);
/* Adds slot (holding dest) to the plan's slots. 0 or -ENOMEM. */
int dw_kplan_add_slot(struct dw_kplan *p, const struct dw_config *cfg, const unsigned *ids,
		      __u32 slot, const struct dw_dest_key *dest);

/* Whether the trie's old keys and the plan's new ones would not fit in the trie at once. */
bool dw_kplan_trie_overflows(const struct dw_kplan *p, const struct dw_key_set *old);

#endif /* DW_KPLAN_H */
