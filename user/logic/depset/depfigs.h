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
#include "logic/depset/dest.h"
#include "logic/base/hist.h"
#include "logic/base/jsonw.h"
#include "logic/outcome/outcome.h"

/*
 * The per-destination figures that are uniform (issue 47), one line each: a plain sum of one
 * kernel counter, given under one key in a destination's row and a dependency's in
 * `status --json`, and as one counter family in /metrics.
 *   X(field, stat, json, metric, when, help)
 * field: its member of struct dw_dep_figs; stat: the counter of struct dw_dest_stats it sums
 * (bpf/depwatch.h); json: its key; metric: its family; when: DW_FIG_ALWAYS, or DW_FIG_DNS (its
 * series only for dependencies that had DNS queries, so the page stays small); help: the
 * family's HELP. A new such figure is written in two places: its counter in bpf/depwatch.h
 * (where the kernel counts it) and its line here; the sums (depfigs.c), the JSON
 * (dw_dep_figs_json) and the metrics (metrics_render.c) are generated from the list.
 *
 * Not here, each for its reason (struct dw_dep_figs below, written by hand):
 * - calls, failed, slow: corrected by the HTTP/2 answers decoded after their calls
 *   (dw_dest_outcomes); /metrics gives calls + failed as depwatch_calls_total.
 * - inflight, conns, connect_failures: derived from several counters (dest.h); conns is
 *   "connections" in the JSON. connects: a plain sum with no key in a dependency's row.
 * - started, abandoned, retried, calls_aborted, aborted_breaker, aborted_timeout: in a
 *   dependency's row only (retries and aborts are judged per dependency); the aborts are one
 *   family labelled by reason; aborted_eject is in a destination's ejection figures.
 * - answers, grpc and the failed by status or code, hpack_desync: arrays, and HTTP/2's part
 *   decoded after the call (lateout.h); call_ns_sum, connect_ns_sum, cum_*: the histograms.
 * The text table (report_text.c) is a fixed layout of calls and connections, 120 columns:
 * none of these figures is a column of it; its HTTP/2 and DNS lines are worded by hand.
 */
enum { DW_FIG_ALWAYS, DW_FIG_DNS };

#define DW_DEST_FIGS(X) \
	X(rejected, connects_rejected, "rejected", "depwatch_connects_rejected_total", DW_FIG_ALWAYS, \
	  "connect() calls failed at once by depwatch because the dependency's enforced breaker was open.") \
	X(streams, calls_streams, "streams", "depwatch_streams_total", DW_FIG_ALWAYS, \
	  "Calls to the dependency on cleartext HTTP/2 streams (h2c, gRPC): one call per stream.") \
	X(h2_conns, conns_h2, "h2_conns", "depwatch_h2_connections_total", DW_FIG_ALWAYS, \
	  "Connections to the dependency recognised as cleartext HTTP/2 and timed per stream.") \
	X(h2_desync, h2_desync, "h2_desync", "depwatch_h2_desync_total", DW_FIG_ALWAYS, \
	  "Of those, connections whose frames the kernel lost step in: timed as bursts after.") \
	X(streams_untracked, streams_untracked, "streams_untracked", "depwatch_streams_untracked_total", DW_FIG_ALWAYS, \
	  "HTTP/2 streams seen but not timed: their connection already had 128 streams open.") \
	X(cancelled, calls_cancelled, "cancelled", "depwatch_calls_cancelled_total", DW_FIG_ALWAYS, \
	  "Of the failed calls, HTTP/2 streams the client reset (a gRPC deadline or cancel).") \
	X(failed_closed, calls_failed_closed, "failed_closed", "depwatch_calls_failed_closed_total", DW_FIG_ALWAYS, \
	  "Of the failed calls, those whose connection ended under them (the peer's FIN or reset, a timeout); not HTTP/2 streams.") \
	X(dns_queries, calls_dns, "dns_queries", "depwatch_dns_queries_total", DW_FIG_DNS, \
	  "DNS queries over UDP to the dependency: each one a call.") \
	X(dns_nxdomain, dns_nxdomain, "dns_nxdomain", "depwatch_dns_nxdomain_total", DW_FIG_DNS, \
	  "Of the completed DNS queries, NXDOMAIN answers (no failure).") \
	X(dns_timeouts, dns_timeouts, "dns_timeouts", "depwatch_dns_timeouts_total", DW_FIG_DNS, \
	  "Of the failed calls, DNS queries unanswered after the dependency's dns_timeout or when their socket closed.") \
	X(dns_rcode_failed, dns_rcode_failed, "dns_rcode_failed", "depwatch_dns_rcode_failed_total", DW_FIG_DNS, \
	  "Of the failed calls, DNS queries answered SERVFAIL or REFUSED.")

struct dw_dep_figs {
	uint64_t oldest_call_ns;	/* start of the oldest outstanding call, 0: none */
	/* every field from here on is a uint64_t count: dw_dep_figs_add sums them as an array */
	uint64_t calls, failed, slow;	/* completed, failed, of the completed slow: since start (dw_dest_outcomes) */
	uint64_t inflight;		/* outstanding now */
	uint64_t conns;			/* connections open now */
	uint64_t connects, connect_failures;	/* connect attempts, and those that failed */
	/* connections the kernel aborted since start: enforce = abort, abort_after */
	uint64_t aborted_breaker, aborted_timeout, calls_aborted;
	uint64_t aborted_eject;		/* of those, of an ejected destination (eject = on, enforce = abort) */
	uint64_t started, abandoned, retried;	/* calls started; of the failed, abandoned; retries */
	/* the uniform ones (DW_DEST_FIGS): connects refused by enforcement; HTTP/2's (doc/callmodel.md);
	 * DNS over UDP's (issue 35) */
#define DW_DEP_FIG_FIELD(field, stat, json, metric, when, help) uint64_t field;
	DW_DEST_FIGS(DW_DEP_FIG_FIELD)
#undef DW_DEP_FIG_FIELD
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

/* The uniform figures (DW_DEST_FIGS) as JSON fields: ,"rejected":N,"streams":N,... */
void dw_dep_figs_json(struct dw_buf *out, const struct dw_dep_figs *f);

/* b's figures into a: counters summed, the oldest outstanding call the older of the two. */
void dw_dep_figs_add(struct dw_dep_figs *a, const struct dw_dep_figs *b);

#endif /* DW_DEPFIGS_H */
