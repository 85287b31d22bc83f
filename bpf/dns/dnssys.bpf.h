/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DNS on the syscalls backend (issue 46; Debian 12's 6.1 runs it): the
 * send and receive system calls' tracepoints, which the backend attaches
 * for TCP anyway, hand their datagram sockets here instead of to the call
 * model (core/syscalls.bpf.c: the socket's type is read with its sock, so a
 * TCP socket pays one compare). A send to a DNS port is remembered per
 * thread at its entry (dns_sys) and its queries start there; at its exit,
 * once the kernel took them, they are read from the caller's own buffers.
 * A receive on a socket with a query outstanding is remembered at its entry
 * and its answers read at its exit: on this backend a query ends at its
 * answer's read, as a TCP call ends at its first receive (no sk_data_ready
 * before Linux 6.6). The exits look for a record only while one exists
 * (dw_dns_sys_live).
 *
 * Needs, included before it: dns/maps.bpf.h, core/sockread.bpf.h, dns/dnscall.bpf.h, dns/dnsuser.bpf.h.
 */
#ifndef DEPWATCH_DNSSYS_BPF_H
#define DEPWATCH_DNSSYS_BPF_H

/* Records in dns_sys (DNS system calls between their entry and exit): the exits' gate. */
__u32 dw_dns_sys_live __weak;

/*
 * A send or receive system call's entry on the datagram socket sk (0: none):
 * d says which, where its message is (kind, arg, len; kind 0: nowhere DNS
 * reads) and its address (sendto's, recvfrom's).
 */
static __always_inline int dns_sys_enter(const struct sock *sk, const struct dns_sys_call *d)
{
	struct dw_dest_key peer;
	struct dns_sys_rec *rec;
	struct dns_part p;
	bool fresh;

	if (!dw_dns_on || !sk || !d->kind || BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_UDP)
		return 0;
	if (d->send) {
		/* to a DNS port (the first message's, for sendmmsg): its queries start now */
		if (dns_part_of(d, 0, &p) || !dns_peer(sk, &p, &peer) || !dns_port_on(peer.port))
			return 0;
	} else if (!dns_may_answer(sk)) {
		return 0;
	}
	rec = dns_rec_of(bpf_get_current_pid_tgid(), &fresh);
	if (!rec)
		return 0;
	if (fresh)
		__sync_fetch_and_add(&dw_dns_sys_live, 1);
	rec->c = *d;
	rec->c.sk = (__u64)(unsigned long)sk;
	if (d->send)
		rec->c.enter_ns = bpf_ktime_get_ns();
	return 0;
}

enum dns_read { DNS_READ_END, DNS_READ_SENT, DNS_READ_ARRIVED, DNS_READ_NONE };

/*
 * Message i of the DNS system call c that returned ret, read into k: what
 * to hand it to, DNS_READ_NONE (not one DNS reads), or DNS_READ_END (no
 * message i). Global: its frame (the user memory's copies) is its own, not
 * the exit program's, which the call model fills.
 */
__weak __noinline int dns_sys_read(const struct dns_sys_call *c, struct dns_work *k, __u32 i, __s64 ret)
{
	if (!c || !k || ret <= 0)
		return DNS_READ_END;	/* nothing sent (refused: an open breaker) or received */
	/* sendmmsg and recvmmsg return how many messages went */
	if (i && (c->kind != DNS_MMSG || i >= ret))
		return DNS_READ_END;
	if (c->send)
		return dns_send_read((const struct sock *)(unsigned long)c->sk, c, i, c->enter_ns, k) ?
			       DNS_READ_SENT : DNS_READ_NONE;
	return dns_recv_read(c, i, ret, k, true) ? DNS_READ_ARRIVED : DNS_READ_NONE;
}

/*
 * A send's (send true) or a receive's system call's exit, ret its result:
 * true if it was one of DNS's (then the call model has nothing of it).
 * While no DNS call is between its entry and exit, two loads. Each message
 * read (dns_sys_read) goes to dns_sent() or dns_arrived() from here, so
 * that no chain of frames holds both the reading and the matching; an exit
 * program calls only its direction's (send is a constant: the verifier
 * walks one of the two).
 */
static __always_inline bool dns_sys_exit(__s64 ret, bool send)
{
	struct dns_sys_rec *rec;
	__u64 id;

	if (!dw_dns_on || !*(volatile __u32 *)&dw_dns_sys_live)
		return false;
	id = bpf_get_current_pid_tgid();
	rec = bpf_map_lookup_elem(&dns_sys, &id);
	if (!rec)
		return false;
	for (__u32 i = 0; i < DW_DNS_MMSG; i++) {
		int r = dns_sys_read(&rec->c, &rec->k, i, ret);

		if (r == DNS_READ_END)
			break;
		if (send && r == DNS_READ_SENT)
			dns_sent(&rec->k);
		else if (!send && r == DNS_READ_ARRIVED)
			dns_arrived(&rec->k);
	}
	if (!bpf_map_delete_elem(&dns_sys, &id))
		__sync_fetch_and_sub(&dw_dns_sys_live, 1);
	return true;
}

#endif /* DEPWATCH_DNSSYS_BPF_H */
