/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-destination figures: every interval, the kernel's cumulative counters
 * and histograms are read, histogram deltas go into a sliding window, and
 * the outstanding calls are scanned for the oldest one.
 */
#ifndef DW_COLLECT_H
#define DW_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "logic/dest.h"

struct dw_bpf;

/* Outstanding calls to one destination made while holding a request of one inbound row. */
struct dw_wait {
	__u32 caller_netns;
	__u16 caller_port;		/* the inbound row: its listening port */
	struct dw_dest *callee;
	unsigned count;
};

struct dw_collector {
	struct dw_dest *dests;		/* open addressing, cap a power of two */
	size_t cap;
	size_t count;
	unsigned nslots;		/* window / interval */
	uint64_t now_ns;		/* CLOCK_MONOTONIC of the last poll */
	uint64_t polls;
	uint64_t last_poll_ns;		/* how long the last poll took */
	struct dw_global_stats globals;
	struct dw_wait *waits;		/* from the last scan of outstanding calls */
	unsigned nwaits, waits_cap;
	bool busy;			/* the last poll saw calls or connects outstanding */
	bool refreshing;		/* in dw_collect_refresh: only hot destinations take pending calls */
	uint64_t refreshes;
};

int dw_collect_init(struct dw_collector *c, unsigned nslots);
void dw_collect_free(struct dw_collector *c);
/* One polling pass. */
int dw_collect_poll(struct dw_collector *c, struct dw_bpf *b);
/*
 * Between polls: re-reads only the destinations marked hot, and their
 * outstanding calls. Sliding windows still advance once per poll only.
 */
int dw_collect_refresh(struct dw_collector *c, struct dw_bpf *b);

/*
 * The window slot reads go to: the number of polls started, less one
 * (the last poll's slot, also for a refresh after it).
 */
uint64_t dw_collect_gen(const struct dw_collector *c);
/*
 * Whether calls completed within the window were timed on a multiplexed or
 * pipelined connection (calls_burst grew within the window): the window's
 * percentiles then hold burst timings, not one request's latency.
 */
bool dw_dest_burst_timed(const struct dw_collector *c, const struct dw_dest *d);


uint64_t dw_monotonic_ns(void);

#endif /* DW_COLLECT_H */
