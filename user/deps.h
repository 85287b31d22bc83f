/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Dependencies: configured ones (a name and matches) and, for destinations
 * no match covers, each destination on its own. Every poll they are judged
 * from their destinations' start-time slices, their breakers stepped, the
 * pinned `breakers` map rewritten with a fresh lease, and alerts raised.
 */
#ifndef DW_DEPS_H
#define DW_DEPS_H

#include <stdbool.h>
#include <stdint.h>
#include "logic/breaker.h"
#include "logic/cascade.h"
#include "logic/config.h"
#include "logic/judge.h"
#include "services.h"

struct dw_bpf;
struct dw_collector;
struct dw_dest;

struct dw_dep {
	bool used;
	char name[DW_DEP_NAME_LEN];	/* configured name, or the destination's dest string */
	unsigned id;			/* 1.. for a configured dependency, 0 for a destination */
	struct dw_dest_key dest;	/* id 0: the destination */
	const struct dw_dep_settings *s;
	struct dw_breaker br;
	struct dw_judgement j;
	struct dw_probe_result probes;
	/* figures of the last poll, over its destinations */
	struct dw_dest *dests;		/* list through next_in_dep */
	unsigned ndests;
	uint64_t calls, failed, slow, inflight, oldest_call_ns;
	uint64_t rejected;		/* connects refused by enforcement, since start */
	uint64_t conns;			/* connections open now */
	uint64_t rejected_at_open;	/* rejected when this open period began */
	bool rejection_alerted;		/* the first rejection of this open period went to syslog */
	int forced;			/* -1, or the state an operator forced */
	/* alert rate limit: a token bucket, and whether an open was announced */
	double tokens;
	uint64_t tokens_ns;
	unsigned suppressed;
	bool open_alerted;
	bool in_map;			/* has an entry in the breakers map */
	/* connections the kernel aborted since start (dest_stats): enforce = abort, abort_after */
	uint64_t aborted_breaker, aborted_timeout, calls_aborted;
	/* retries: cumulative counts, and rates smoothed over the polls */
	uint64_t started, abandoned, retried;
	uint64_t rate_prev_started, rate_prev_ns;
	double call_rate;		/* calls started per second, over about 2 s */
	double call_rate_baseline;	/* the same over about 5 min: its normal */
	struct dw_count_ring retry_ring;	/* (started, retried), a sample a second */
	double retry_ratio;		/* attempts per original call over the last 10 s; -1: none yet */
	bool retry_storm;		/* alerted: retries amplify load on a slow dependency */
};

struct dw_deps {
	struct dw_config cfg;
	struct dw_dep *deps;		/* configured and per-destination, by index */
	unsigned n, cap;
	int index_of_id[DW_MAX_DEPS];	/* configured id -> index, -1 */
	uint64_t lease_ns;		/* how long a breakers map entry is good for */
	/* the overflow row mixes unrelated destinations: traced, never judged */
	struct dw_dep_settings overflow_settings;
	struct dw_services svcs;	/* the config's services, polled after the dependencies */
	uint8_t service_port[65536 / 8];	/* bit set: the kernel's service_ports says 1 */
	bool can_abort;			/* the abort iterator runs: enforce = abort is in force */
};

/* enforce in effect: "off", "connect", or "abort" (only where the kernel can abort). */
const char *dw_dep_enforce_mode(const struct dw_deps *deps, const struct dw_dep *dep);

/* Takes cfg over (it is freed with the deps). */
int dw_deps_init(struct dw_deps *deps, struct dw_config *cfg, uint64_t lease_ns);
void dw_deps_free(struct dw_deps *deps);
/* Writes slow_call per dependency and the match trie to the kernel. */
int dw_deps_to_kernel(struct dw_deps *deps, struct dw_bpf *b);
/*
 * A new config: same-named dependencies keep their breakers; maps rewritten,
 * connections re-matched. Takes cfg over, also when it fails.
 */
int dw_deps_reload(struct dw_deps *deps, struct dw_config *cfg, struct dw_collector *c,
		   struct dw_bpf *b);
/* After each collector poll. */
void dw_deps_poll(struct dw_deps *deps, struct dw_collector *c, struct dw_bpf *b);
/*
 * Between polls: when an outstanding call turns slow, the judgement can
 * change before the next poll. Returns the first moment after the last
 * read at which one does (0: none) and marks the destinations of those
 * dependencies hot; after dw_collect_refresh, dw_deps_rejudge judges and
 * steps only those dependencies.
 */
uint64_t dw_deps_next_slow(struct dw_deps *deps, struct dw_collector *c);
void dw_deps_rejudge(struct dw_deps *deps, struct dw_collector *c, struct dw_bpf *b);
/* depwatch breaker open|close|auto NAME: state is -1 for auto. 0, or -ENOENT. */
int dw_deps_force(struct dw_deps *deps, const char *name, int state, uint64_t now,
		  struct dw_bpf *b);
/* Percentile over the window of every destination of dep, in ms; -1 when no calls. */
double dw_dep_percentile_ms(const struct dw_dep *dep, double q);

#endif /* DW_DEPS_H */
