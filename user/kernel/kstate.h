/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel's state, written from here only: the dependencies' settings
 * (dep_cfg), the match trie (dep_match), the [service] ports (service_ports
 * and the programs' dw_services_on), each destination slot's dependency
 * (slot_cfg) and the pinned breakers map. Any future writer of kernel state
 * (aborting connections, say) belongs here too.
 *
 * A config is computed whole in memory (logic/kernel/kplan.h) and checked before
 * anything is written; the writes keep an undo log, so a config takes
 * whole, or the old one stays in force.
 */
#ifndef DW_KSTATE_H
#define DW_KSTATE_H

#include <stdbool.h>
#include <stdint.h>
#include "logic/kernel/kplan.h"

struct dw_bpf;
struct dw_config;
struct dw_breaker_op;

struct dw_kstate {
	struct dw_bpf *b;
	uint8_t service_port[65536 / 8];	/* bit set: the kernel's service_ports says 1 */
};

/* b is only kept: its maps need not exist yet. */
void dw_kstate_init(struct dw_kstate *ks, struct dw_bpf *b);

/* Prefixes the trie needs for cfg (every match of every dependency). */
unsigned dw_kstate_match_prefixes(const struct dw_config *cfg);

/*
 * cfg's part of the kernel state: dep_cfg, the match trie, service_ports;
 * with remap, every destination slot (and so every connection to it)
 * matched to its dependency again. ids[i] is cfg->deps[i]'s dependency id.
 * retire: the breakers map entries of the dependencies that go, removed
 * first (an id cfg gives anew never meets its old owner's breaker). All or
 * nothing; logs why not. 0 or -errno.
 */
int dw_kstate_config(struct dw_kstate *ks, const struct dw_config *cfg, const unsigned *ids,
		     bool remap, const struct dw_breaker_op *retire, unsigned nretire);

/*
 * The breakers map changes, in order. A half_open entry keeps the probes
 * the kernel has left while it is the same half_open period. A failed
 * write is logged (debug) and left to the next poll's renewal.
 */
void dw_kstate_breakers(struct dw_kstate *ks, const struct dw_breaker_op *ops, unsigned n);

#endif /* DW_KSTATE_H */
