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
#include "host/clock.h"
#include "logic/callers/callers.h"
#include "logic/callers/cgname.h"
#include "logic/depset/dest.h"

struct dw_bpf;
struct dw_cgroups;

/* One kernel caller row (issue 16) as the collector keeps it: figures, and what it last read. */
struct dw_caller_acc {
	/* dep is -1 here and hist unused: the outputs assign them (dw_collect_callers) */
	struct dw_caller_fig fig;
	struct dw_window win;		/* completed calls' histogram deltas, one slot per poll */
	struct dw_dest_key key;		/* its destination */
	bool used;
	uint64_t prev_ended;		/* completed + failed at the poll before */
	__u32 seen[DW_CALLER_BUCKETS];	/* the kernel histogram at the last read */
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
	/* callers (issue 16): by kernel row; row 0 is none */
	struct dw_caller_acc *callers;
	unsigned ncallers, callers_cap;
	struct dw_cgroups *cgroups;	/* names them; NULL: shown as cgroup:<id> (set by the daemon) */
	/* one slot's per-CPU rows as last copied, and their seqs around the copy (read_rows) */
	struct dw_cpu_row *rows;
	struct dw_caller_cpu_row *crows;	/* the same for one caller row (read_caller_rows) */
	__u32 *seq_before, *seq_after;
	uint64_t rows_unstable;		/* reads of rows given up for folds that kept coming */
};

/*
 * The rows of one kind, in no order: the next in use after d (NULL: the
 * first), NULL after the last.
 *	for (d = dw_collect_next(c, NULL, kind); d; d = dw_collect_next(c, d, kind))
 */
const struct dw_dest *dw_collect_next(const struct dw_collector *c, const struct dw_dest *d,
				      enum dw_row_kind kind);

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

/*
 * The callers of every dependency, merged per (dependency, cgroup) and
 * ordered (dw_callers_merge): a new array in *out (free it), its length
 * returned; 0 with none (or out of memory).
 */
size_t dw_collect_callers(const struct dw_collector *c, struct dw_caller_fig **out);
/* The name of a caller's cgroup: cached, "unknown" for id 0, "cgroup:<id>" until resolved. */
void dw_collect_caller_name(const struct dw_collector *c, uint64_t id, struct dw_cgname *out);

#endif /* DW_COLLECT_H */
