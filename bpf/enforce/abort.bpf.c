// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Aborting connections: enforce = abort and abort_after. An iter/tcp
 * program the daemon runs on demand (bpf_iter_create() + read()), never on
 * its own: a dead or hung daemon aborts nothing. It walks the TCP sockets
 * of the reader's network namespace and destroys (bpf_sock_destroy(): a
 * reset to the peer, ECONNABORTED to the local caller) each established
 * outbound connection that depwatch tracks and that
 * - belongs to a dependency with enforce = abort whose `breakers` entry is
 *   open under a live lease (half_open is left alone: its probes pass), or
 *   goes to a destination of it ejected under a live lease (the entry
 *   keyed by both, open; not while probing), or
 * - has had a call outstanding for longer than its dependency's
 *   abort_after (not on a multiplexed connection, whose outstanding "call"
 *   may be a control frame nobody answers).
 * Inbound (accepted) connections, connections depwatch does not track and
 * dependencies without either setting are never touched. Each aborted (or
 * refused) connection is written out as a struct dw_abort_record and
 * counted in its row; the call model sees the close through
 * inet_sock_set_state like any other, and fails the outstanding call.
 * Two programs, one of which the loader loads: dw_abort destroys with the
 * kfunc (Linux 6.5+); dw_abort_list, for older kernels, chooses the same
 * connections and only writes them out, for the daemon to destroy through
 * sock_diag (user/kernel/sockdiag.c). A program that calls a kfunc the kernel
 * lacks is refused whole, hence two.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "core/maps.bpf.h"
#include "core/conn.bpf.h"
#include "layers/conn.bpf.h"
#include "core/sockread.bpf.h"
#include "core/slots.bpf.h"
#include "enforce/maps.bpf.h"
#include "enforce/abortrec.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Linux 6.5+; weak: the object still loads where the loader leaves dw_abort out. */
extern int bpf_sock_destroy(struct sock_common *sk) __ksym __weak;

static __always_inline int entry_open(struct dw_breaker_key *key, __u64 now)
{
	struct dw_breaker_value *b = bpf_map_lookup_elem(&breakers, key);

	return b && now <= b->lease_expires_ns && b->state == DW_BREAKER_OPEN;
}

/* Why conn should be aborted now; 0: it should not. */
static __always_inline int abort_reason(const struct dw_conn *conn, __u32 dep_id)
{
	struct dw_breaker_key key = {};
	struct dw_dep_cfg *cfg;
	__u64 now = bpf_ktime_get_ns(), start;

	cfg = bpf_map_lookup_elem(&dep_cfg, &dep_id);
	if (!cfg)
		return 0;
	if (cfg->enforce & DW_ENFORCE_ABORT) {
		key.dep_id = dep_id;
		if (!dep_id)
			key.dest = conn->dest;
		if (entry_open(&key, now))
			return DW_ABORT_BREAKER;
		key.dest = conn->dest;
		if (dep_id && entry_open(&key, now))
			return DW_ABORT_EJECT;
	}
	start = conn->call_start_ns;
	if (cfg->abort_after_ns && start && !conn->multiplexed && now > start &&
	    now - start >= cfg->abort_after_ns)
		return DW_ABORT_TIMEOUT;
	return 0;
}

/* The socket's 4-tuple, device and cookie: what sock_diag's SOCK_DESTROY finds it by. */
static __always_inline void abort_sock_of(struct sock_common *skc, struct dw_abort_sock *s)
{
	s->cookie = bpf_get_socket_cookie(skc);
	s->family = skc->skc_family;
	s->sport = bpf_htons(skc->skc_num);
	s->dport = skc->skc_dport;
	s->ifindex = skc->skc_bound_dev_if;
	if (s->family == AF_INET6) {
		__builtin_memcpy(s->saddr, &skc->skc_v6_rcv_saddr, 16);
		__builtin_memcpy(s->daddr, &skc->skc_v6_daddr, 16);
	} else {
		__builtin_memcpy(s->saddr, &skc->skc_rcv_saddr, 4);
		__builtin_memcpy(s->daddr, &skc->skc_daddr, 4);
	}
}

/*
 * The connection skc if it is to be aborted now (rec filled in), else 0:
 * an established outbound connection depwatch tracks, not given up on.
 */
static __always_inline struct dw_conn *abort_choose(struct sock_common *skc,
						    struct dw_abort_record *rec)
{
	struct dw_conn *conn;
	struct tcp_sock *tp;
	int reason;

	if (!skc || skc->skc_state != TCP_ESTABLISHED)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	conn = conn_of((struct sock *)tp);
	if (!conn || conn->role != DW_ROLE_OUTBOUND || conn->slot == DW_SLOT_OVERFLOW ||
	    conn->abort_failed)
		return 0;
	rec->dep_id = dep_id_of(conn);
	reason = abort_reason(conn, rec->dep_id);
	if (!reason)
		return 0;
	/* read before the destroy: the syscalls backend's entry goes with the close */
	rec->dest = conn->dest;
	rec->slot = conn->slot;
	rec->reason = reason;
	rec->had_call = conn->call_start_ns != 0;
	abort_sock_of(skc, &rec->sock);
	return conn;
}

/* An abort (or the hand-over of one to sock_diag) in the connection's row. */
static __always_inline void abort_count(struct dw_dest_stats *st, const struct dw_abort_record *rec)
{
	if (!st)
		return;
	if (rec->reason == DW_ABORT_BREAKER)
		st->conns_aborted_breaker++;
	else if (rec->reason == DW_ABORT_EJECT)
		st->conns_aborted_eject++;
	else
		st->conns_aborted_timeout++;
	if (rec->had_call)
		st->calls_aborted++;
}

/* Linux 6.5+: chooses and destroys (a reset to the peer, ECONNABORTED to the local caller). */
SEC("iter/tcp")
int dw_abort(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct dw_abort_record rec = {};
	struct dw_conn *conn;

	conn = abort_choose(skc, &rec);
	if (!conn)
		return 0;
	rec.err = bpf_sock_destroy(skc);
	if (rec.err) {
		rec.failed = 1;
		conn->abort_failed = 1;	/* counted once, not retried at every pass */
		global_count(G_abort_failed);
	} else {
		abort_count(stats_of(conn), &rec);
	}
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}

/*
 * Without the kfunc: only chooses, the same way, and writes the record;
 * the daemon destroys each through sock_diag (SOCK_DESTROY, the kernel's
 * same tcp_abort()). Counted here, at the hand-over: the destroy happens
 * after the iterator's read. The connection is marked so that no later
 * pass hands it over again, as dw_abort leaves one alone that it failed
 * to destroy. The program calls no kfunc, so it loads where dw_abort
 * cannot.
 */
SEC("iter/tcp")
int dw_abort_list(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct dw_abort_record rec = {};
	struct dw_conn *conn;

	conn = abort_choose(skc, &rec);
	if (!conn)
		return 0;
	conn->abort_failed = 1;
	abort_count(stats_of(conn), &rec);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
