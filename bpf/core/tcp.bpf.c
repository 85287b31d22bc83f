// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The TCP hooks both backends load: state changes (connects, accepts,
 * closes: the call model's dw_on_state(); at TCP_CLOSE the connection's
 * state is let go) and retransmits. The transport's headers only: what a
 * close ends of the layers (HTTP/2's streams, a TLS session, an owed
 * answer) is behind the seam (layers/state.bpf.h), linked in from
 * layers/state.bpf.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
/* the transport: its maps, a connection (and the seam's questions of it), its socket, slots, calls, closes, connects */
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
/*
 * The seam, declarations only: a state change ends what the layers hold (HTTP/2's streams, a TLS
 * session, an owed answer), in layers/state.bpf.c, and a call's end asks the answers
 * (dw_call_end(), declared in core/call.bpf.h, defined at layers/callend.bpf.h); both reach this
 * program through the linker, so its source sees nothing of the layers.
 */
#include "layers/state.bpf.h"
/* the events */
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
