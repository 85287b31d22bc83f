/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A dependency's figures of one poll: its destinations' counters summed,
 * once, for every output (status, top, /metrics, alerts) and for the
 * judgement. The one home of these sums; a "~other" line sums the
 * figures of the dependencies it folds with dw_dep_figs_add. Pure.
 */
#ifndef DW_DEPFIGS_H
#define DW_DEPFIGS_H

#include <stdint.h>
#include "dest.h"
#include "hist.h"
#include "outcome.h"

struct dw_dep_figs {
	uint64_t oldest_call_ns;	/* start of the oldest outstanding call, 0: none */
	/* every field from here on is a uint64_t count: dw_dep_figs_add sums them as an array */
	uint64_t calls, failed, slow;	/* completed, failed, of the completed slow: since start (dw_dest_outcomes) */
	uint64_t inflight;		/* outstanding now */
	uint64_t rejected;		/* connects refused by enforcement, since start */
	uint64_t conns;			/* connections open now */
	uint64_t connects, connect_failures;	/* connect attempts, and those that failed */
	/* connections the kernel aborted since start: enforce = abort, abort_after */
	uint64_t aborted_breaker, aborted_timeout, calls_aborted;
	uint64_t aborted_eject;		/* of those, of an ejected destination (eject = on, enforce = abort) */
	uint64_t started, abandoned, retried;	/* calls started; of the failed, abandoned; retries */
	/* HTTP/2 (doc/callmodel.md): calls on streams, h2c connections, those that lost step,
	 * streams not timed (a connection's table full), of the failed those the client cancelled */
	uint64_t streams, h2_conns, h2_desync, streams_untracked, cancelled;
	/* DNS over UDP (issue 35): queries; of the completed NXDOMAIN; of the failed timeouts, SERVFAIL or REFUSED */
	uint64_t dns_queries, dns_nxdomain, dns_timeouts, dns_rcode_failed;
	/* answers by class (outcome.h), and of the failed, those failed by their status */
	uint64_t answers[DW_ANS_N], failed_status;
	/* HTTP/2 answers' gRPC codes (lateout.h; [DW_GRPC_N]: other numbers), of the failed those by
	 * their code, and connections whose HPACK table was lost */
	uint64_t grpc[DW_GRPC_N + 1], failed_grpc, hpack_desync;
	/* completed calls' and successful connects' durations: summed, and by coarse bucket */
	uint64_t call_ns_sum, connect_ns_sum;
	uint64_t cum_call[DW_HIST_COARSE], cum_connect[DW_HIST_COARSE];
};

/*
 * A destination's calls, failed and slow since start as every output gives them: the kernel's,
 * with the calls whose HTTP/2 answer, decoded after the call (lateout.h), failed them moved from
 * completed (fast or slow) to failed. The one place of that correction (issue 47): status's
 * table and JSON, a ~other fold and the dependencies' sums all read it here, so `status` and
 * `status --json` give the same calls and failed for every destination.
 */
struct dw_dest_outcomes {
	uint64_t calls, failed, slow;
};

struct dw_dest_outcomes dw_dest_outcomes(const struct dw_dest *d);

/* One destination's counters into f (its calls, failed and slow by dw_dest_outcomes). */
void dw_dep_figs_add_dest(struct dw_dep_figs *f, const struct dw_dest *d);

/* b's figures into a: counters summed, the oldest outstanding call the older of the two. */
void dw_dep_figs_add(struct dw_dep_figs *a, const struct dw_dep_figs *b);

#endif /* DW_DEPFIGS_H */
