/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading the socket: its state, sequence numbers, unread bytes, peer and
 * owner, the two ways a program may read it (enum dw_sk), and what those
 * say about a connection's outstanding call (answered, or answer bytes
 * waiting). Nothing here writes.
 *
 * Needs, included before it: core/conn.bpf.h.
 */
#ifndef DEPWATCH_SOCKREAD_BPF_H
#define DEPWATCH_SOCKREAD_BPF_H

#include "core/addr.h"

/*
 * How a program may read its socket, a constant at every call site.
 * DW_SK_BTF: sk is a sock-backend tracepoint's own (BTF-typed) socket,
 * read with plain loads through bpf_rdonly_cast(). DW_SK_PROBED: probe
 * reads, for the syscalls backend's socket (an address it found) and for
 * the programs both backends load.
 */
enum dw_sk { DW_SK_PROBED, DW_SK_BTF };

/*
 * A read-only view of an object as another BTF type (Linux 6.2+); the
 * verifier inlines it. Weak, and called only under DW_SK_BTF (programs the
 * sock backend alone loads, 6.3+), so that the syscalls backend's
 * programs hold no call to it and load on older kernels.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

static __always_inline const struct tcp_sock *tcp_of(const struct sock *sk)
{
	return bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
}

#define TCP_FIELD(sk, via, field) \
	((via) == DW_SK_BTF ? tcp_of(sk)->field : BPF_CORE_READ((const struct tcp_sock *)(sk), field))

static __always_inline int state_of(const struct sock *sk, enum dw_sk via)
{
	if (via == DW_SK_BTF)
		return sk->__sk_common.skc_state;
	return BPF_CORE_READ(sk, __sk_common.skc_state);
}

/*
 * 1 if the peer's FIN is in rcv_nxt (it takes a sequence number of its
 * own), else 0. tcp_fin() sets SOCK_DONE as it shuts the receive side; a
 * reset shuts it too (tcp_done(): SHUTDOWN_MASK) but takes no sequence
 * number, so RCV_SHUTDOWN alone cannot say which came.
 */
static __always_inline __u32 fin_of(const struct sock *sk, enum dw_sk via)
{
	unsigned long flags = via == DW_SK_BTF ? sk->__sk_common.skc_flags :
						       BPF_CORE_READ(sk, __sk_common.skc_flags);

	return (flags >> SOCK_DONE) & 1;
}

/* Received bytes the application has not read, not counting the peer's FIN. */
static __always_inline __u32 unread_of(const struct sock *sk, enum dw_sk via)
{
	__u32 unread = TCP_FIELD(sk, via, rcv_nxt) - TCP_FIELD(sk, via, copied_seq);

	return unread ? unread - fin_of(sk, via) : 0;
}

/*
 * Whether an outbound call may start on sk now: only where its answer can
 * still come, ESTABLISHED (after the peer's FIN nothing more comes back: a
 * send in CLOSE_WAIT is a goodbye such as TLS close_notify). Inbound, see
 * request_begin().
 */
static __always_inline int can_be_answered(const struct sock *sk, enum dw_sk via)
{
	return state_of(sk, via) == TCP_ESTABLISHED;
}

/*
 * Time stamps without a clock read where they are right: TCP keeps
 * tcp_clock_cache, its ktime_get_ns() (the clock of bpf_ktime_get_ns()),
 * refreshed when it starts processing a received segment. At sk_data_ready
 * it is when the segment that brought the data began to be processed; a
 * value not newer than not_before (the connection's previous event) was not
 * refreshed for this event, and the clock is read instead. A send's start
 * has no such stamp (the cache then holds an earlier event): it reads the
 * clock.
 */
static __always_inline __u64 rx_time(const struct sock *sk, __u64 not_before)
{
	__u64 t = tcp_of(sk)->tcp_clock_cache;

	return t > not_before ? t : bpf_ktime_get_ns();
}

static __always_inline __u32 netns_of(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
}

/* The peer of sk; IPv4-mapped IPv6 counts as IPv4. */
static __always_inline void dest_of(const struct sock *sk, struct dw_dest_key *dest)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	__builtin_memset(dest, 0, sizeof(*dest));
	dest->netns = netns_of(sk);
	dest->port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == AF_INET) {
		dest->family = AF_INET;
		bpf_core_read(dest->addr, 4, &sk->__sk_common.skc_daddr);
		return;
	}
	bpf_core_read(dest->addr, 16, &sk->__sk_common.skc_v6_daddr);
	dest->family = AF_INET6;
	dw_fold_v4mapped(dest);
}

/* The row of sk's listening port: requests are counted per (netns, port). */
static __always_inline void inbound_row_of(const struct sock *sk, struct dw_dest_key *row)
{
	__builtin_memset(row, 0, sizeof(*row));
	row->netns = netns_of(sk);
	row->family = DW_FAMILY_INBOUND;
	row->port = BPF_CORE_READ(sk, __sk_common.skc_num);
}

/*
 * The cgroup v2 id of the socket's owner: the cgroup of the task that
 * created it (an accepted socket is a copy of its listener's). 0 where the
 * kernel keeps none (no CONFIG_SOCK_CGROUP_DATA): an unknown caller.
 */
static __always_inline __u64 sk_cgroup_id(const struct sock *sk)
{
	if (!bpf_core_field_exists(sk->sk_cgrp_data.cgroup))
		return 0;
	return BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
}

/*
 * Whether data reaching an outbound connection answers its outstanding
 * call: the peer had the request's first byte when it sent it, so the
 * segment acknowledged it (snd_una is updated before the data is queued).
 */
static __always_inline int answers_call(const struct sock *sk, const struct dw_conn *conn, enum dw_sk via)
{
	return (__s32)(TCP_FIELD(sk, via, snd_una) - conn->req_seq) > 0;
}

/*
 * Whether answer bytes came before the peer's FIN: bytes not read yet, or,
 * where a call completes at the receive's return (the syscalls backend),
 * any bytes received since the call started (rcv_seq, read at its send's
 * entry): a receive may have taken them and not returned yet when the FIN
 * is processed on another CPU. That entry reads the socket unlocked, and
 * may see a FIN already in rcv_nxt with the state still ESTABLISHED
 * (tcp_data_queue() moves rcv_nxt before tcp_fin() moves the state): so
 * the FIN may be in rcv_seq or not. Nothing follows a FIN, so more than the
 * FIN's own sequence number since rcv_seq is data either way (a TLS
 * close_notify sent as nginx's FIN came was taken for an answered call,
 * about one connection in 4 000 of ab's).
 */
static __always_inline int answer_came(const struct sock *sk, const struct dw_conn *conn)
{
	__u32 since;

	if (dw_backend != DW_BACKEND_SYSCALLS)
		return unread_of(sk, DW_SK_PROBED) > 0;
	since = BPF_CORE_READ((const struct tcp_sock *)sk, rcv_nxt) - conn->rcv_seq;
	return (__s32)since > (__s32)fin_of(sk, DW_SK_PROBED);
}

#endif /* DEPWATCH_SOCKREAD_BPF_H */
