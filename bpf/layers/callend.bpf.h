/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The seam at a call's end: what the answers (answer/) say of a
 * connection's call as it ends (a protocol's goodbye that a close ends is
 * no call; an answer's status may fail it), then the count
 * (core/count.bpf.h). core/call.bpf.h declares dw_call_end(); every
 * program that ends a connection's calls includes this after the answers'
 * outcome (__weak: the linker keeps one). Calls go core/call.bpf.h -> here
 * -> answer/outcome.bpf.h, core/count.bpf.h, none back.
 *
 * Needs, included before it: core/count.bpf.h, answer/outcome.bpf.h.
 */
#ifndef DEPWATCH_LAYERS_CALLEND_BPF_H
#define DEPWATCH_LAYERS_CALLEND_BPF_H

/*
 * A connection's call ends (call_end(), core/call.bpf.h): a goodbye's
 * failure (the close that answers it) dropped; a close's failure counted
 * (closed_end()); its answer's status, where one was read
 * (answer/outcome.bpf.h), counted, a failure failing it; then count_end().
 * A global function, verified once: inlined, count_end() would be walked
 * again at each of the many places a call can end, once per outcome.
 */
__weak __noinline int dw_call_end(struct dw_conn *conn, __u64 start, int outcome, __u64 now)
{
	if (!conn)
		return 0;
	/* a protocol's goodbye (goodbye.h) that a close ended: no call at all */
	if (outcome == OUTCOME_CLOSED)
		outcome = layers_bye(conn) ? OUTCOME_DROPPED : closed_end(conn);
	else if (outcome == OUTCOME_FAILED && layers_bye(conn))
		outcome = OUTCOME_DROPPED;
	if (dw_answer_has_status(&conn->answer))
		outcome = outcome_end(conn, outcome);
	count_end(conn, start, outcome, now, conn->multiplexed);
	return 0;
}

#endif /* DEPWATCH_LAYERS_CALLEND_BPF_H */
