/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A call's outcome from its answer (issue 33): the status an answer's
 * first bytes carry, counted by class and, where the dependency's
 * failure_status holds it (default 5xx), a failed call instead of a
 * completed one, as a reset is: in calls_failed, its start slice's failed
 * (so in failure_rate and in ejection's judgement) and its caller's row,
 * with calls_failed_status saying why.
 *
 * The status reaches the connection (conn->answer.status) before its call ends,
 * from whoever read the answer's bytes (answer.bpf.h: the syscalls
 * backend's receive, an inbound answer's send, the sock backend's copy to
 * the reader; later TLS plaintext), through outcome_http1(conn, bytes,
 * len); count_end() (call.bpf.h) takes it with the call's end. Here:
 * that entry and the counting. The reading of the line is bpf/answer/http1.h's.
 *
 * Needs, included before it: core/count.bpf.h.
 */
#ifndef DEPWATCH_OUTCOME_BPF_H
#define DEPWATCH_OUTCOME_BPF_H

#include "answer/http1.h"

/*
 * The answer's first bytes p[0..n) (n at most DW_HTTP1_PEEK) for the
 * connection's outstanding call: its status goes to conn->answer.status, for the
 * call's end to count. The one entry for every reader, TLS plaintext's
 * too. Returns what dw_http1_final() read.
 */
static __always_inline int outcome_http1(struct dw_conn *conn, const __u8 *p, __u32 n)
{
	int r = dw_http1_final(p, n);

	if (r >= 200) {
		conn->answer.http1 = DW_HTTP1_YES;
		conn->answer.status = r;
	} else if (r == DW_HTTP1_BAD) {
		conn->answer.http1 = DW_HTTP1_YES;
		conn->answer.status = DW_STATUS_BAD;
	} else if (r == DW_HTTP1_NOT && conn->answer.http1 == DW_HTTP1_UNSEEN) {
		conn->answer.http1 = DW_HTTP1_NEVER;	/* no HTTP/1 server: no more looks, no count */
	} else if (conn->answer.http1 == DW_HTTP1_YES) {
		conn->answer.status = DW_STATUS_UNKNOWN;	/* short, a 1xx whose answer is beyond, or no line */
	}
	return r;
}

/* An answer's first bytes as the readers copy them. */
struct dw_peek {
	__u8 b[DW_HTTP1_PEEK];
	__u32 n;	/* how many of b are the answer's */
	__u32 pad;
};

/*
 * outcome_http1() on a copy, out of line: a global function the verifier
 * walks once, not once for every path of each hook that reads an answer.
 */
__weak __noinline int dw_outcome_peek(struct dw_conn *conn, struct dw_peek *pk)
{
	if (!conn || !pk)
		return DW_HTTP1_NOT;
	return outcome_http1(conn, pk->b, pk->n < DW_HTTP1_PEEK ? pk->n : DW_HTTP1_PEEK);
}

/* Whether the connection's answers are still to be read: cleartext, one call at a time. */
static __always_inline bool outcome_wanted(const struct dw_conn *conn)
{
	return conn->answer.http1 != DW_HTTP1_NEVER && conn->answer.http1 != DW_HTTP1_UNCOPIED && !conn->tls.hello && !conn->multiplexed &&
	       (conn->h2.state == DW_H2_UNKNOWN || conn->h2.state == DW_H2_NEVER);
}

/* Whether status fails its call by the dependency's failure_status (no config: 5xx). */
static __always_inline bool outcome_fails(const struct dw_dep_cfg *cfg, int status)
{
	if (status < 100)
		return false;
	if (!cfg)
		return status >= 500;
	return dw_status_fails(cfg->fail_status, status);
}

/*
 * The call now ending had its answer's status read (conn->answer.status, taken
 * here): counted in its destination's counters by class; a failure turns
 * a completed call into a failed one. Returns the call's outcome. Only
 * call_end() comes here: an HTTP/2 stream's end (count_end() directly)
 * has no status line.
 */
static __always_inline enum call_outcome outcome_end(struct dw_conn *conn, enum call_outcome outcome)
{
	int status = conn->answer.status;
	struct dw_dest_stats *st;
	bool failed;

	conn->answer.status = 0;
	failed = outcome == OUTCOME_COMPLETED && outcome_fails(dep_cfg_of(conn), status);
	st = stats_of(conn);
	if (st) {
		if (status < 100) {
			st->answers_unknown++;
			st->answers_bad += status == DW_STATUS_BAD;
		} else if (status < 300) {
			st->answers_2xx += status >= 200;
		} else if (status < 400) {
			st->answers_3xx++;
		} else if (status < 500) {
			st->answers_4xx++;
		} else {
			st->answers_5xx++;
		}
		if (failed) {
			st->calls_failed_status++;
			st->last_fail_status = status;
		}
	}
	return failed ? OUTCOME_FAILED : outcome;
}

#endif /* DEPWATCH_OUTCOME_BPF_H */
