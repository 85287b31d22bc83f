// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The "sock" backend: socket tracepoints (Linux 6.3+) feed the call model;
 * the "syscalls" backend (syscalls.bpf.h) feeds the same model from system
 * call tracepoints. The loader loads one backend's send and receive programs.
 * Thin entry points only; the model is in callmodel.bpf.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "callmodel.bpf.h"
#include "enforce.bpf.h"
#include "abort.bpf.h"
#include "syscalls.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The socket tracepoints fire for every socket of every family (unix
 * sockets too): anything but TCP leaves before the socket-storage lookup,
 * with one load (sk is a trusted BTF pointer here).
 */
static __always_inline int is_tcp(const struct sock *sk)
{
	return sk->sk_protocol == IPPROTO_TCP;
}

/* Where the kernel has it: TCP only, with the socket locked, before the send queues anything. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(dw_sendmsg, const struct sock *sk, const struct msghdr *msg, const struct sk_buff *skb,
	     int size_goal)
{
	dw_on_send_begin(sk);
	return 0;
}

/* Only where the kernel lacks tcp_sendmsg_locked (the loader picks one of the two). */
SEC("tp_btf/sock_send_length")
int BPF_PROG(dw_send, struct sock *sk, int ret, int flags)
{
	if (is_tcp(sk))
		dw_on_send(sk, ret, 0, 0, DW_SK_BTF);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(dw_recv, struct sock *sk, int ret, int flags)
{
	if (is_tcp(sk))
		dw_on_recv(sk, ret, flags, DW_SK_BTF);
	return 0;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(dw_data_ready, const struct sock *sk)
{
	if (is_tcp(sk))
		dw_on_data(sk);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(dw_set_state, const struct sock *sk, const int oldstate, const int newstate)
{
	dw_on_state(sk, oldstate, newstate);
	if (newstate == TCP_CLOSE)
		conn_forget(sk);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(dw_retransmit, const struct sock *sk)
{
	dw_on_retransmit(sk);
	return 0;
}

SEC("cgroup/connect4")
int dw_enforce4(struct bpf_sock_addr *ctx)
{
	return dw_enforce_connect(ctx, AF_INET);
}

SEC("cgroup/connect6")
int dw_enforce6(struct bpf_sock_addr *ctx)
{
	return dw_enforce_connect(ctx, AF_INET6);
}

/*
 * Connections open before the daemon started. Pass 1 records listening
 * ports; pass 2 adopts each established socket: inbound if it was accepted,
 * outbound if not. An accepted socket has its listener's port, and, being
 * a copy of the listener, the listener's non-zero sk_max_ack_backlog even
 * after the listener is gone; a connect()ed socket never listened.
 */
int classify_pass;

SEC("iter/tcp")
int dw_classify(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct dw_listen_key lk = {};
	struct dw_dest_stats *st;
	struct dw_conn *conn;
	__u8 role = DW_ROLE_OUTBOUND;
	struct tcp_sock *tp;
	__u8 one = 1;

	if (!skc)
		return 0;
	lk.netns = BPF_CORE_READ(skc, skc_net.net, ns.inum);
	lk.port = skc->skc_num;
	if (skc->skc_state == TCP_LISTEN) {
		bpf_map_update_elem(&listen_ports, &lk, &one, BPF_ANY);
		return 0;
	}
	if (classify_pass != 2 || skc->skc_state != TCP_ESTABLISHED)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp || conn_of((struct sock *)tp))
		return 0;
	if (bpf_map_lookup_elem(&listen_ports, &lk) ||
	    BPF_CORE_READ((struct sock *)tp, sk_max_ack_backlog))
		role = DW_ROLE_INBOUND;
	conn = conn_adopt((struct sock *)tp, role);
	if (!conn)
		return 0;
	conn->established = 1;
	st = stats_of(conn);
	if (st)
		st->conns_opened++;
	return 0;
}
