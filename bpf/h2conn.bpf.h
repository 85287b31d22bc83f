/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An HTTP/2 connection's state, for the stream layer (streams.bpf.h): the
 * events' bytes as a hook sees them (struct h2_bytes), a walk's context
 * and its copy of bytes (walk_copy), where the state lives (socket
 * storage, or the syscalls backend's hash), when it goes (a close, a
 * desync, first bytes that are not HTTP/2's), and whether the stream
 * layer has the connection (h2_took).
 */
#ifndef DEPWATCH_H2CONN_BPF_H
#define DEPWATCH_H2CONN_BPF_H

#include "call.bpf.h"
#include "h2.h"

/* The kernel's skbs in tracing programs (Linux 6.14+ for tp_btf): the receive side's bytes. */
extern int bpf_dynptr_from_skb(struct __sk_buff *skb, __u64 flags,
			       struct bpf_dynptr *ptr__uninit) __ksym __weak;

enum h2_way { H2_TX = 0, H2_RX = 1 };

/* Where an event's bytes are. */
enum h2_src {
	H2_SRC_USER = 0,	/* one user buffer */
	H2_SRC_IOV_USER = 1,	/* an iovec array in user memory (the syscalls backend) */
	H2_SRC_IOV_KERNEL = 2,	/* an iovec array the kernel copied in (a msghdr's iov_iter) */
	H2_SRC_SKB = 3,		/* an skb (struct h2_walk.skb) */
};

/* An event's bytes: what a hook knows of them. */
struct h2_bytes {
	__u64 addr;	/* user address of the bytes (H2_SRC_USER), or of the iovec array */
	__u32 nseg;	/* iovecs in the array */
	__u32 off;	/* the first byte's offset in the first iovec, or in the skb */
	__u32 len;	/* bytes in the event */
	__u32 seq;	/* TCP sequence number of its first byte */
	__u8 kind;	/* enum h2_src */
};

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
 * walker calls, uses it too: both include this, neither the other back.
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

	if (conn->h2 == DW_H2_MAYBE || conn->h2 == DW_H2_ON) {
		if (dw_backend == DW_BACKEND_SYSCALLS)
			bpf_map_delete_elem(&h2_conns_sk, &key);
		else
			bpf_sk_storage_delete(&h2_conns, (struct sock *)sk);
		__sync_fetch_and_add(&dw_h2_live, -1);
	}
	conn->h2 = state;
}

/* The stream layer has the connection: the transport model leaves its events alone. */
static __always_inline bool h2_took(const struct dw_conn *conn)
{
	return conn->h2 == DW_H2_MAYBE || conn->h2 == DW_H2_ON;
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

#endif /* DEPWATCH_H2CONN_BPF_H */
