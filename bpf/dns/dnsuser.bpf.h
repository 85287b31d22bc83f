/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a DNS message and its resolver's address are in a send's or a
 * receive's user memory, for both backends (issue 46): the syscalls backend
 * has the system call's arguments from its tracepoints (dns/dnssys.bpf.h),
 * the sock backend from the system call's saved registers (dns/dnssock.bpf.h).
 * A call passes its message as a buffer (write, sendto, read, recvfrom), an
 * iovec array (writev, readv), a msghdr (sendmsg, recvmsg) or an mmsghdr
 * array (sendmmsg, recvmmsg: glibc sends A and AAAA in one); DNS reads the
 * first iovec of a message, where every stub resolver puts the whole
 * message. The resolver is the address the call names (sendto's,
 * recvfrom's, a msghdr's), else the connected socket's peer.
 *
 * Needs, included before it: dns/maps.bpf.h, core/sockread.bpf.h, dns/dnscall.bpf.h.
 */
#ifndef DEPWATCH_DNSUSER_BPF_H
#define DEPWATCH_DNSUSER_BPF_H

/* How a system call passes its message (struct dns_sys_call's kind); 0: not one DNS reads. */
enum dns_kind { DNS_BUF = 1, DNS_IOV, DNS_MSG, DNS_MMSG };

/* The messages of one sendmmsg() or recvmmsg() looked at: glibc's two, and room. */
#define DW_DNS_MMSG 4

/* Message i of a call: its first buffer and that buffer's length, its address (0: none). */
struct dns_part {
	__u64 buf;
	__u64 len;
	__u64 name;
	__u32 namelen;
	__u32 msg_len;		/* an mmsghdr's: what the kernel sent or received of it */
};

/* The socket's address as a number: the maps' key, a global function's scalar argument. */
static __always_inline __u64 dns_sock_id(const struct sock *sk)
{
	__u64 id = 0;

	bpf_probe_read_kernel(&id, sizeof(id), &sk);
	return id;
}

static __always_inline int dns_iov0(__u64 iov, struct dns_part *p)
{
	struct iovec v;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)iov))
		return -1;
	p->buf = (__u64)(unsigned long)v.iov_base;
	p->len = v.iov_len;
	return 0;
}

static __always_inline int dns_msghdr(__u64 msg, struct dns_part *p)
{
	struct user_msghdr h;

	if (bpf_probe_read_user(&h, sizeof(h), (const void *)msg) || !h.msg_iovlen)
		return -1;
	p->name = (__u64)(unsigned long)h.msg_name;
	p->namelen = h.msg_namelen;
	return dns_iov0((__u64)(unsigned long)h.msg_iov, p);
}

/* Message i of the call c (i > 0: an mmsghdr array's); 0 on success. */
static __always_inline int dns_part_of(const struct dns_sys_call *c, __u32 i, struct dns_part *p)
{
	__u64 at;

	__builtin_memset(p, 0, sizeof(*p));
	switch (c->kind) {
	case DNS_BUF:
		p->buf = c->arg;
		p->len = c->len;
		p->name = c->name;
		p->namelen = c->namelen;
		return 0;
	case DNS_IOV:
		return c->len ? dns_iov0(c->arg, p) : -1;
	case DNS_MSG:
		return dns_msghdr(c->arg, p);
	case DNS_MMSG:
		at = c->arg + (__u64)i * sizeof(struct mmsghdr);
		if (bpf_probe_read_user(&p->msg_len, sizeof(p->msg_len),
					(const void *)(at + __builtin_offsetof(struct mmsghdr, msg_len))))
			return -1;
		return dns_msghdr(at + __builtin_offsetof(struct mmsghdr, msg_hdr), p);
	}
	return -1;
}

/* The peer a sockaddr in user memory names: IPv4, IPv6 (IPv4-mapped folded). */
static __always_inline bool dns_peer_of_name(__u64 name, __u32 namelen, struct dw_dest_key *peer)
{
	struct { __u16 family, port; __u32 v4_or_flow; __u32 v6[4]; __u32 scope; } sa = {};

	if (!name || namelen < 16)
		return false;
	if (bpf_probe_read_user(&sa, namelen >= sizeof(sa) ? sizeof(sa) : 16, (const void *)name))
		return false;
	__builtin_memset(peer, 0, sizeof(*peer));
	peer->port = bpf_ntohs(sa.port);
	if (sa.family == AF_INET) {
		peer->family = AF_INET;
		__builtin_memcpy(peer->addr, &sa.v4_or_flow, 4);
		return true;
	}
	if (sa.family != AF_INET6 || namelen < sizeof(sa))
		return false;
	peer->family = AF_INET6;
	__builtin_memcpy(peer->addr, sa.v6, 16);
	dw_fold_v4mapped(peer);
	return true;
}

/* The resolver of message p: the address it names, else the connected socket's peer. */
static __always_inline bool dns_peer(const struct sock *sk, const struct dns_part *p, struct dw_dest_key *peer)
{
	if (p->name)
		return dns_peer_of_name(p->name, p->namelen, peer);
	dest_of(sk, peer);
	return peer->port != 0;
}

/*
 * Whether a datagram to the UDP socket sk may be an answer DNS reads: a
 * socket connected to a DNS port, or an unconnected one that asked (a
 * record in dns_socks, kept after its queries end: a late answer is
 * counted unmatched). A socket connected elsewhere (QUIC's) costs an array
 * lookup; an unconnected one a hash lookup.
 */
static __always_inline bool dns_may_answer(const struct sock *sk)
{
	__u16 dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	__u64 sock;

	if (dport)
		return dns_port_on(dport);
	sock = dns_sock_id(sk);
	return bpf_map_lookup_elem(&dns_socks, &sock) != NULL;
}

/*
 * Message i of a send on the UDP socket sk, sent at now, into k for
 * dns_sent() if it went to a DNS port: its resolver and first bytes. 1: so.
 */
static __always_inline int dns_send_read(const struct sock *sk, const struct dns_sys_call *c, __u32 i, __u64 now,
					 struct dns_work *k)
{
	struct dns_part p;

	if (dns_part_of(c, i, &p) || !dns_peer(sk, &p, &k->peer) || !dns_port_on(k->peer.port))
		return 0;
	k->n = p.len > DW_DNS_WINDOW ? DW_DNS_WINDOW : p.len;
	if (bpf_probe_read_user(k->w.b, k->n, (const void *)p.buf))
		return 0;
	k->sock = dns_sock_id(sk);
	k->now = now;
	k->quiet = 0;
	k->early = 0;
	return 1;
}

/*
 * The current thread's record (dns_sys): created zeroed (from dns_sys_zero:
 * too large for a stack) on its first DNS system call, or NULL. *fresh:
 * it was just created.
 */
static __always_inline struct dns_sys_rec *dns_rec_of(__u64 id, bool *fresh)
{
	struct dns_sys_rec *rec = bpf_map_lookup_elem(&dns_sys, &id), *zero;
	__u32 at = 0;

	*fresh = false;
	if (rec)
		return rec;
	zero = bpf_map_lookup_elem(&dns_sys_zero, &at);
	if (!zero || bpf_map_update_elem(&dns_sys, &id, zero, BPF_NOEXIST))
		return NULL;
	*fresh = true;
	return bpf_map_lookup_elem(&dns_sys, &id);
}

/*
 * Message i of a receive that got got bytes, into k for dns_arrived(), with its sender if known. named:
 * the call wrote its address already (a system call's exit; not at sock_recv_length, which comes before
 * recvfrom and recvmsg copy it out). 1: so.
 */
static __always_inline int dns_recv_read(const struct dns_sys_call *c, __u32 i, __u64 got, struct dns_work *k,
					 bool named)
{
	const struct sock *sk = (const struct sock *)(unsigned long)c->sk;
	struct dns_part p;
	__u32 namelen;

	if (dns_part_of(c, i, &p))
		return 0;
	if (c->kind == DNS_MMSG)
		got = p.msg_len;
	/* the bytes in the first buffer (a plain buffer's length is what was read) */
	if (c->kind != DNS_BUF && got > p.len)
		got = p.len;
	k->n = got > DW_DNS_WINDOW ? DW_DNS_WINDOW : got;
	if (bpf_probe_read_user(k->w.b, k->n, (const void *)p.buf))
		return 0;
	/* the sender: the address the kernel wrote back, the connected peer, or not known */
	namelen = p.namelen;
	if (named && c->kind == DNS_BUF && p.name &&
	    bpf_probe_read_user(&namelen, sizeof(namelen), (const void *)c->namelen))
		namelen = 0;
	if (!(named && p.name && dns_peer_of_name(p.name, namelen, &k->peer))) {
		dest_of(sk, &k->peer);
		if (!k->peer.port)
			k->peer.family = 0;
	}
	k->sock = c->sk;
	k->quiet = 0;
	k->early = 0;
	return 1;
}

#endif /* DEPWATCH_DNSUSER_BPF_H */
