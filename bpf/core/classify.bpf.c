// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Adoption, at start: connections open before the daemon started. Pass 1
 * records listening ports; pass 2 adopts each established socket: inbound
 * if it was accepted, outbound if not. An accepted socket has its listener's port, and, being
 * a copy of the listener, the listener's non-zero sk_max_ack_backlog even
 * after the listener is gone; a connect()ed socket never listened.
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

char LICENSE[] SEC("license") = "Dual BSD/GPL";

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
	/* its first bytes went by before the start */
	layers_adopted_open(conn);
	conn->established = 1;
	st = stats_of(conn);
	if (st)
		st->conns_opened++;
	return 0;
}
