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
#include "logic/hist.h"
#include "logic/judge.h"
#include "logic/window.h"

struct dw_bpf;

struct dw_dest {
	struct dw_dest_key key;
	bool used;
	struct dw_dest_stats sum;	/* kernel counters summed over CPUs; last_* of the newest CPU */
	__u32 seen_call[DW_HIST_BUCKETS];	/* kernel histogram at the last read */
	__u32 seen_connect[DW_HIST_BUCKETS];
	/* the same since the collector first read it, by coarse bucket (logic/hist.h): never wraps */
	uint64_t cum_call[DW_HIST_COARSE];
	uint64_t cum_connect[DW_HIST_COARSE];
	struct dw_window call_win;
	struct dw_window connect_win;
	uint64_t oldest_call_ns;	/* start of the oldest outstanding call, 0 if none */
	uint64_t oldest_connect_ns;
	unsigned pending_calls;		/* outstanding calls the last scan saw */
	unsigned pending_connects;
	uint64_t *pending_start;	/* their start times */
	unsigned pending_cap;
	struct dw_slice_counts slices[DW_SLICES];	/* start-time slices, as last read */
	unsigned nslices;
	int dep;			/* index in struct dw_deps, -1 before it is assigned */
	int own_dep;			/* its dependency of its own, if it ever had one, else -1 */
	struct dw_dest *next_in_dep;	/* rebuilt every poll */
	unsigned slot;			/* its row in the kernel's dest_stats and dest_details */
	bool hot;			/* re-read between polls (dw_collect_refresh) */
	/*
	 * Burst timings: the window generation (see dw_collect_gen) of the
	 * newest read that saw calls_burst grow; burst_seen: any read did.
	 */
	uint64_t burst_gen;
	bool burst_seen;
};

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

/* Calls in flight (started - completed - failed), never below 0. */
uint64_t dw_dest_inflight(const struct dw_dest *d);
uint64_t dw_dest_connecting(const struct dw_dest *d);
uint64_t dw_dest_connect_failures(const struct dw_dest *d);
/* FNV-1a of the key's bytes, for hash tables of destinations. */
uint64_t dw_dest_key_hash(const struct dw_dest_key *key);
/* "127.0.0.1:8080", "[::1]:443", "overflow", or "*:8080" for an inbound row. */
void dw_dest_format(const struct dw_dest_key *key, char *buf, size_t len);

uint64_t dw_monotonic_ns(void);

#endif /* DW_COLLECT_H */
