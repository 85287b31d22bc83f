/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An HTTP/2 connection's state, for the stream layer (streams.bpf.h): a
 * walk's context and its copy of bytes (walk_copy), where the state lives
 * (socket storage, or the syscalls backend's hash), when it goes (a close,
 * a desync, first bytes that are not HTTP/2's), whether the stream layer
 * has the connection (h2_took), and whether its first received bytes are
 * still to be looked at (h2_rx_pending). The events' bytes themselves are
 * core/bytes.bpf.h's (struct h2_bytes).
 *
 * Needs, included before it: h2/maps.bpf.h, core/call.bpf.h, core/bytes.bpf.h.
 */
#ifndef DEPWATCH_H2CONN_BPF_H
#define DEPWATCH_H2CONN_BPF_H

#include "h2/h2.h"

/*
 * One event's walk: bpf_loop's context. Nothing here changes during the
 * walk; where it stands is the direction's struct dw_h2_cursor.
 */
struct h2_walk {
	struct dw_conn *conn;
	struct dw_h2_conn *h2;
	struct dw_h2_dir *dir;
	struct dw_h2_cursor *cur;
	struct bpf_dynptr *skb;
	__u64 now;
	__u8 in_task;		/* the sending task is current: its held request, its retries */
};

/*
 * Copies n bytes at the cursor of walk w into dst, from the skb or from
 * user memory. Here with the walk's context rather than in the walker
 * (h2walk.bpf.h), because the header-block copy (hblock.bpf.h), which the
 * walker calls, uses it too: both come after this, and hblock.bpf.h before
 * the walker, which names nothing of it back.
 */
static __always_inline long walk_copy(struct h2_walk *w, __u8 *dst, __u32 n, bool from_skb)
{
	if (from_skb)
		return bpf_dynptr_read(dst, n, w->skb, (__u32)w->cur->at, 0);
	return bpf_probe_read_user(dst, n, (const void *)w->cur->at);
}

#define DW_H2_NO_GOAWAY 0x80000000U

static __always_inline struct dw_h2_conn *h2_of(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;

	if (dw_backend == DW_BACKEND_SYSCALLS)
		return bpf_map_lookup_elem(&h2_conns_sk, &key);
	return bpf_sk_storage_get(&h2_conns, (struct sock *)sk, 0, 0);
}

static __always_inline struct dw_h2_conn *h2_create(const struct sock *sk)
{
	static const struct dw_h2_conn fresh;
	__u64 key = (__u64)(unsigned long)sk;

	if (dw_backend != DW_BACKEND_SYSCALLS)
		return bpf_sk_storage_get(&h2_conns, (struct sock *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (bpf_map_update_elem(&h2_conns_sk, &key, &fresh, BPF_ANY))
		return 0;
	return bpf_map_lookup_elem(&h2_conns_sk, &key);
}

/* The connection's HTTP/2 state goes: at its close, a desync, or first bytes that are not HTTP/2. */
static __always_inline void h2_free(const struct sock *sk, struct dw_conn *conn, __u8 state)
{
	__u64 key = (__u64)(unsigned long)sk;

	if (conn->h2.state == DW_H2_MAYBE || conn->h2.state == DW_H2_ON) {
		if (dw_backend == DW_BACKEND_SYSCALLS)
			bpf_map_delete_elem(&h2_conns_sk, &key);
		else
			bpf_sk_storage_delete(&h2_conns, (struct sock *)sk);
		__sync_fetch_and_add(&dw_h2_live, -1);
	}
	conn->h2.state = state;
}

/* The stream layer has the connection: the transport model leaves its events alone. */
static __always_inline bool h2_took(const struct dw_conn *conn)
{
	return conn->h2.state == DW_H2_MAYBE || conn->h2.state == DW_H2_ON;
}

/*
 * The parser lost step (its open streams were swept as dropped: no
 * outcome known, no call invented): the transport model takes the
 * connection back, as multiplexed.
 */
static __always_inline void h2_lost(const struct sock *sk, struct dw_conn *conn)
{
	struct dw_dest_stats *st;

	h2_free(sk, conn, DW_H2_LOST);
	conn_mark_multiplexed(conn);
	st = stats_of(conn);
	if (st)
		st->h2_desync++;
}

/* Data reached a connection whose first received bytes are not looked at yet (sock backend). */
static __always_inline void h2_rx_pending(struct dw_conn *conn)
{
	if ((conn->h2.state != DW_H2_UNKNOWN && conn->h2.state != DW_H2_TLS) ||
	    (conn->h2.seen & (DW_H2_SEEN_RX | DW_H2_RX_PENDING)))
		return;
	conn->h2.seen |= DW_H2_RX_PENDING;
	__sync_fetch_and_add(&dw_h2_pending, 1);
}

/* At TCP_CLOSE: a first read never looked at is no longer pending. */
static __always_inline void h2_forget(struct dw_conn *conn)
{
	if (!(conn->h2.seen & DW_H2_RX_PENDING))
		return;
	conn->h2.seen &= ~DW_H2_RX_PENDING;
	__sync_fetch_and_add(&dw_h2_pending, -1);
}

#endif /* DEPWATCH_H2CONN_BPF_H */
