/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call model's connect events (states.bpf.h's first two): an
 * outbound connection adopted at connect(), its caller taken there, and the
 * connect's outcome (established, refused, timed out) in its row.
 *
 * Needs, included before it: core/slots.bpf.h.
 */
#ifndef DEPWATCH_CONNECT_BPF_H
#define DEPWATCH_CONNECT_BPF_H

#include "core/rows.h"

static __always_inline void dw_on_connect_start(const struct sock *sk)
{
	struct dw_pending_entry *e;
	struct dw_conn *conn;
	struct dw_dest_stats *st;

	if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return;
	/* connect() runs in the calling task: its cgroup is the caller */
	conn = conn_adopt_as(sk, DW_ROLE_OUTBOUND, bpf_get_current_cgroup_id());
	if (!conn)
		return;
	conn->connect_start_ns = conn->last_ns;
	e = pend_of(conn);
	if (e)
		e->connect_start_ns = conn->connect_start_ns;
	st = stats_of(conn);
	if (!st)
		return;
	st->connect_attempts++;
	/* the connecting process is current here (not when adopted by the iterator) */
	st->last_conn_ns = conn->connect_start_ns;
	st->last_pid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(st->last_comm, sizeof(st->last_comm));
}

static __always_inline void dw_on_connect_end(const struct sock *sk, int established)
{
	struct dw_conn *conn = conn_of(sk);
	struct dw_pending_entry *e;
	struct dw_dest_detail *detail;
	struct dw_dest_stats *st;
	__u64 start, dur;
	int err;

	if (!conn || !conn->connect_start_ns)
		return;
	start = conn->connect_start_ns;
	conn->connect_start_ns = 0;
	e = pend_of(conn);
	if (e)
		e->connect_start_ns = 0;
	st = stats_of(conn);
	if (!st)
		return;
	if (established) {
		dur = bpf_ktime_get_ns() - start;
		st->connects_ok++;
		st->conns_opened++;
		conn->established = 1;
		st->connect_ns_sum += dur;
		detail = detail_of(conn);
		if (detail)
			hist_add(detail->connect, dur);
		return;
	}
	err = BPF_CORE_READ(sk, sk_err);
	if (err == ECONNREFUSED)
		st->connect_refused++;
	else if (err == ETIMEDOUT)
		st->connect_timedout++;
	else
		st->connect_other++;
}

#endif /* DEPWATCH_CONNECT_BPF_H */
