// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The TCP hooks both backends load: state changes (connects, accepts,
 * closes: the call model's dw_on_state(); at TCP_CLOSE the connection's
 * state is let go) and retransmits.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
/* the transport: its maps, a connection, its socket, slots, calls, closes, connects */
#include "core/maps.bpf.h"
#include "core/conn.bpf.h"
#include "layers/conn.bpf.h"
#include "core/sockread.bpf.h"
#include "core/slots.bpf.h"
#include "core/count.bpf.h"
#include "core/call.bpf.h"
#include "core/cascade.bpf.h"
#include "core/closing.bpf.h"
#include "core/connect.bpf.h"
#include "core/bytes.bpf.h"
#include "core/readend.bpf.h"
/* the layers' ends at a state change: an owed answer, HTTP/2's open streams, a TLS session */
#include "answer/outcome.bpf.h"
#include "layers/callend.bpf.h"
#include "answer/answer.bpf.h"
#include "h2/maps.bpf.h"
#include "h2/h2conn.bpf.h"
#include "h2/h2stream.bpf.h"
#include "tls/maps.bpf.h"
#include "tls/tlslink.bpf.h"
#include "tls/tlsclose.bpf.h"
/* the seam, then the events */
#include "layers/state.bpf.h"
#include "core/states.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(dw_set_state, const struct sock *sk, const int oldstate, const int newstate)
{
	dw_on_state(sk, oldstate, newstate);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(dw_retransmit, const struct sock *sk)
{
	dw_on_retransmit(sk);
	return 0;
}
