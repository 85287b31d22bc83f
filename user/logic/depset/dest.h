/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One destination's figures, as the collector (collect.c) keeps them from
 * the kernel's counters, histograms and pending table; the dependencies
 * (depset.h) and the services read them. Pure: no I/O.
 */
#ifndef DW_DEST_H
#define DW_DEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "logic/base/hist.h"
#include "logic/judge/eject.h"
#include "logic/judge/judge.h"
#include "logic/depset/lateout.h"
#include "logic/base/window.h"

/*
 * Outlier ejection of a destination of a configured dependency with
 * eject = on: depset.c judges it against its siblings (eject.h), and
 * writes its breakers map entry; abort.c notes what the ejection aborted.
 */
struct dw_dest_eject {
	struct dw_eject e;
	struct dw_judgement j;		/* its own judgement at the last poll (calls since its return) */
	struct dw_probe_result probes;	/* probing: its probes since e.since_ns */
	unsigned dep_id;		/* the dependency it was judged in; 0: never judged */
	bool published;			/* the breakers map holds its entry */
	bool forced;			/* the operator ejected it (depwatch breaker eject) */
	double siblings_slow_rate;	/* the other destinations' slow_rate when it went out */
	/* since it went out (probes that failed keep it out: the same streak) */
	uint64_t out_since_ns;		/* 0: in */
	uint64_t refused_at, aborted_at;	/* its connects_rejected, conns_aborted_eject then */
	uint64_t pass_aborted;		/* connections the abort passes since aborted (abort.c) */
};

/* Why it is out: "forced" (by hand), "slow_rate" (or its stall), or "failure_rate". */
const char *dw_dest_eject_reason(const struct dw_dest_eject *ej);

struct dw_dest {
	struct dw_dest_key key;
	enum dw_row_kind kind;		/* dw_row_kind_of(&key) (dwtypes.h), set with the key */
	bool used;
	struct dw_dest_stats sum;	/* kernel counters summed over CPUs; last_* of the newest CPU */
	__u32 seen_call[DW_HIST_BUCKETS];	/* kernel histogram at the last read */
	__u32 seen_connect[DW_HIST_BUCKETS];
	/* the same since the collector first read it, by coarse bucket (hist.h): never wraps */
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
	int dep;			/* index in the dependency set (depset.h), -1 before it is assigned */
	int own_dep;			/* its dependency of its own, if it ever had one, else -1 */
	struct dw_dest *next_in_dep;	/* rebuilt every poll */
	unsigned slot;			/* its row in the kernel's dest_stats and dest_details */
	bool hot;			/* re-read between polls (dw_collect_refresh) */
	bool rows_unread;		/* its per-CPU rows' last read gave up: read all next */
	/*
	 * Burst timings: the window generation (see dw_collect_gen) of the
	 * newest read that saw calls_burst grow; burst_seen: any read did.
	 */
	uint64_t burst_gen;
	bool burst_seen;
	struct dw_dest_eject ej;
	/* HTTP/2 answers decoded after their calls (lateout.h); NULL until its first (3 KiB) */
	struct dw_late *late;
};

/* A row's key, and its kind decoded from it: the one way a row gets its key. */
void dw_dest_set_key(struct dw_dest *d, const struct dw_dest_key *key);

/* Out or probing in the dependency with id dep_id (0: none, never ejected). */
static inline bool dw_dest_ejected(const struct dw_dest *d, unsigned dep_id)
{
	return dep_id && d->ej.dep_id == dep_id && d->ej.e.state != DW_EJECT_IN;
}

static inline bool dw_dest_is_outbound(const struct dw_dest *d)
{
	return d->kind == DW_ROW_OUTBOUND;
}

static inline bool dw_dest_is_listener(const struct dw_dest *d)
{
	return d->kind == DW_ROW_LISTENER;
}

static inline bool dw_dest_is_overflow(const struct dw_dest *d)
{
	return d->kind == DW_ROW_OVERFLOW;
}

/*
 * A row of calls this host makes that the outputs show and the dependencies
 * take: an outbound row, or the overflow row once something landed in it.
 * Listener rows are the services' (requests this host answers).
 */
bool dw_dest_shown(const struct dw_dest *d);

/* Calls in flight (started - completed - failed), never below 0. */
uint64_t dw_dest_inflight(const struct dw_dest *d);
uint64_t dw_dest_connecting(const struct dw_dest *d);
/* Connections open now (opened - closed), never below 0. */
uint64_t dw_dest_conns_open(const struct dw_dest *d);
uint64_t dw_dest_connect_failures(const struct dw_dest *d);
/*
 * A listener row's figures, named as what they are there: the kernel counts
 * requests this host answers in the call counters (calls_completed are
 * requests answered, calls_started requests received).
 */
struct dw_listener_fig {
	uint64_t requests;		/* answered */
	uint64_t failed, dropped;
	uint64_t started;		/* received */
	uint64_t inflight;		/* received, not answered yet */
	uint64_t connections;		/* open now */
};

void dw_listener_fig_of(const struct dw_dest *d, struct dw_listener_fig *f);

/* FNV-1a of the key's bytes, for hash tables of destinations. */
uint64_t dw_dest_key_hash(const struct dw_dest_key *key);
/* "127.0.0.1:8080", "[::1]:443", "overflow", or "*:8080" for an inbound row. */
void dw_dest_format(const struct dw_dest_key *key, char *buf, size_t len);
/*
 * The reverse, for an outbound destination an operator names:
 * "10.0.0.2:8080" or "[2001:db8::1]:443" into key (netns 0). 0 or -EINVAL.
 */
int dw_dest_parse(const char *s, struct dw_dest_key *key);

#endif /* DW_DEST_H */
