// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The "sock" backend's send and receive programs: socket tracepoints (Linux
 * 6.3+) feed the call model (callmodel.bpf.h); the "syscalls" backend
 * (syscalls.bpf.c) feeds the same model from system call tracepoints. The
 * loader loads one backend's send and receive programs (user/kernel/hooks.c);
 * tcp.bpf.c's, both. Thin entry points only.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
/* the transport: its maps, a connection (and the seam's questions of it), its socket, slots, calls, where bytes are */
#include "core/maps.bpf.h"
#include "core/conn.bpf.h"
#include "layers/conn.bpf.h"
#include "core/sockread.bpf.h"
#include "core/slots.bpf.h"
#include "core/count.bpf.h"
#include "core/call.bpf.h"
#include "core/cascade.bpf.h"
#include "core/bytes.bpf.h"
#include "core/readend.bpf.h"
/* the layers: answers and goodbyes, HTTP/2 streams, TLS sessions */
#include "answer/outcome.bpf.h"
#include "layers/callend.bpf.h"
#include "answer/answer.bpf.h"
#include "answer/goodbye.bpf.h"
#include "h2/maps.bpf.h"
#include "h2/h2conn.bpf.h"
#include "h2/h2detect.bpf.h"
#include "h2/h2stream.bpf.h"
#include "h2/hblock.bpf.h"
#include "h2/h2walk.bpf.h"
#include "h2/streams.bpf.h"
#include "tls/maps.bpf.h"
#include "tls/tlslink.bpf.h"
/* the seam, then the events */
#include "layers/bytes.bpf.h"
#include "core/callmodel.bpf.h"
/* DNS: an answer's arrival, in the UDP branch of sk_data_ready, and a query in dw_send's (issue 46) */
#include "dns/maps.bpf.h"
#include "dns/dnscall.bpf.h"
#include "dns/dnsuser.bpf.h"
#include "dns/dnssock.bpf.h"

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
	dw_on_send_begin(sk, msg);
	return 0;
}

/*
 * Only where the kernel lacks tcp_sendmsg_locked (the loader picks one of the two). A UDP send
 * here is DNS's (dns/dnssock.bpf.h): with this program loaded, DNS's own on the same
 * tracepoint (dw_dns_send) is not, and TCP pays nothing for DNS.
 */
SEC("tp_btf/sock_send_length")
int BPF_PROG(dw_send, struct sock *sk, int ret, int flags)
{
	if (is_tcp(sk))
		dw_on_send(sk, ret, 0, 0, 0, DW_SK_BTF);
	else
		dns_sock_send(sk, ret);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(dw_recv, struct sock *sk, int ret, int flags)
{
	if (is_tcp(sk))
		dw_on_read(sk, ret, flags);
	else
		dns_sock_read(sk, ret, flags);
	return 0;
}

/* Data reached a socket; a UDP one's may be a DNS answer (dns/dnssock.bpf.h), after TCP's test. */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(dw_data_ready, const struct sock *sk)
{
	if (is_tcp(sk))
		dw_on_data(sk);
	else
		dns_sock_data(sk);
	return 0;
}

/*
 * A copy of received bytes to user space: the layers read h2c
 * connections' frames here, in order, as the reader takes them, and an
 * answered call's status line (dw_on_copy(), layers/bytes.bpf.h). Every
 * copy of every socket passes here; it leaves at once unless an h2c
 * connection, a first read still to be looked at, or an owed answer
 * exists. Not loaded on x86-64, where dw_recv reads both at the read's end
 * (issue 36).
 */
SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(dw_h2_copy, const struct sk_buff *skb, int len)
{
	dw_on_copy(skb, len);
	return 0;
}
