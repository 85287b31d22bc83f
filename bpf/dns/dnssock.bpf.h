/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DNS on the sock backend (issue 46): a query is read at its send's end
 * (tp_btf/sock_send_length, dns/dns.bpf.c's dw_dns_send), from the system
 * call's own buffers through its saved registers (x86-64: the system call's
 * number says where the message is; the descriptor must be the socket sent
 * on, which no kernel-internal send and no io_uring one passes); an answer
 * at its arrival at the socket, in the UDP branch of core/sock.bpf.c's
 * sk_data_ready program (which TCP runs anyway, and leaves before this).
 *
 * A query is timed from its send's end, not its start: the few microseconds
 * the send itself takes are left out, and an answer processed inside the
 * send (a resolver on loopback whose reply the sender's own softirq
 * delivers) comes before its query: it waits in dns_early for the send's
 * end, which counts the call as answered in about 0 ms.
 *
 * Needs, included before it: dns/maps.bpf.h, core/sockread.bpf.h, dns/dnscall.bpf.h, dns/dnsuser.bpf.h.
 */
#ifndef DEPWATCH_DNSSOCK_BPF_H
#define DEPWATCH_DNSSOCK_BPF_H

#define DNS_NR_WRITE 1
#define DNS_NR_WRITEV 20
#define DNS_NR_SENDTO 44
#define DNS_NR_SENDMSG 46
#define DNS_NR_SENDMMSG 307

/* Whether the current task's descriptor fd is the socket sk (the send it is in is the system call's). */
static __always_inline bool dns_fd_is(__u64 fd_arg, const struct sock *sk)
{
	struct fdtable *fdt = bpf_get_current_task_btf()->files->fdt;
	int fd = (int)fd_arg;
	struct socket *sock;
	struct file *file;

	if (fd < 0 || !fdt || (unsigned int)fd >= fdt->max_fds)
		return false;
	if (bpf_probe_read_kernel(&file, sizeof(file), &fdt->fd[fd]) || !file)
		return false;
	sock = BPF_CORE_READ(file, private_data);
	return (__u64)(unsigned long)BPF_CORE_READ(sock, sk) == dns_sock_id(sk);
}

/*
 * sendmmsg's message now being sent: the first whose msg_len is still 0
 * (the kernel writes each one's after its send; glibc and libuv clear them).
 */
static __always_inline __u32 dns_mmsg_now(__u64 vec, __u64 vlen)
{
	for (__u32 i = 0; i < DW_DNS_MMSG; i++) {
		__u32 sent = 1;

		if (i >= vlen)
			break;
		bpf_probe_read_user(&sent, sizeof(sent),
				    (const void *)(vec + (__u64)i * sizeof(struct mmsghdr) +
						   __builtin_offsetof(struct mmsghdr, msg_len)));
		if (!sent)
			return i;
	}
	return DW_DNS_MMSG;
}

/* A send on sk returned ret (sock_send_length): a query to a DNS port starts a call. */
static __always_inline void dns_sock_send(const struct sock *sk, int ret)
{
#if defined(__TARGET_ARCH_x86)
	struct dns_sys_call c = {};
	struct dns_sys_rec *rec;
	struct pt_regs *regs;
	__u32 i = 0;
	bool fresh;
	__u64 now;

	if (!dw_dns_on || ret <= 0 || sk->sk_protocol != IPPROTO_UDP)
		return;
	now = bpf_ktime_get_ns();
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return;
	c.arg = regs->si;
	c.len = regs->dx;
	switch (regs->orig_ax) {
	case DNS_NR_WRITE:
		c.kind = DNS_BUF;
		break;
	case DNS_NR_SENDTO:
		c.kind = DNS_BUF;
		c.name = regs->r8;
		c.namelen = regs->r9;
		break;
	case DNS_NR_WRITEV:
		c.kind = DNS_IOV;
		break;
	case DNS_NR_SENDMSG:
		c.kind = DNS_MSG;
		break;
	case DNS_NR_SENDMMSG:
		c.kind = DNS_MMSG;
		i = dns_mmsg_now(c.arg, c.len);
		if (i >= DW_DNS_MMSG)
			return;
		break;
	default:
		return;
	}
	if (!dns_fd_is(regs->di, sk))
		return;
	/* the thread's room to read it in, kept (the syscalls backend's records; LRU) */
	rec = dns_rec_of(bpf_get_current_pid_tgid(), &fresh);
	if (rec && dns_send_read(sk, &c, i, now, &rec->k))
		dns_sent(&rec->k);
#endif
}

/* An skb in a receive queue (sock backend, skb its address): its message and sender to dns_arrived(). */
static __always_inline void dns_skb(struct dns_work *k, __u64 skb_addr, __u32 quiet)
{
	const struct sk_buff *skb = (const struct sk_buff *)(unsigned long)skb_addr;
	unsigned char *head = BPF_CORE_READ(skb, head), *data = BPF_CORE_READ(skb, data);
	__u16 nh = BPF_CORE_READ(skb, network_header), th = BPF_CORE_READ(skb, transport_header);
	__u32 len = BPF_CORE_READ(skb, len), n = len - BPF_CORE_READ(skb, data_len);
	__u16 sport;
	__u8 vihl;

	/* the linear part: every small datagram's whole */
	if (n > len)
		return;
	k->n = n > DW_DNS_WINDOW ? DW_DNS_WINDOW : n;
	if (bpf_probe_read_kernel(k->w.b, k->n, data) || bpf_probe_read_kernel(&vihl, 1, head + nh) ||
	    bpf_probe_read_kernel(&sport, 2, head + th))
		return;
	__builtin_memset(&k->peer, 0, sizeof(k->peer));
	k->peer.port = bpf_ntohs(sport);
	if ((vihl >> 4) == 4) {
		k->peer.family = AF_INET;
		if (bpf_probe_read_kernel(k->peer.addr, 4, head + nh + 12))
			return;
	} else if ((vihl >> 4) == 6) {
		k->peer.family = AF_INET6;
		if (bpf_probe_read_kernel(k->peer.addr, 16, head + nh + 8))
			return;
		dw_fold_v4mapped(&k->peer);
	} else {
		return;
	}
	k->quiet = quiet;
	k->early = 1;
	dns_arrived(k);
}

/*
 * A datagram arrived at the UDP socket at address sock, connected to a
 * DNS port or one that asked (dns_may_answer): the last datagrams of its
 * receive queue are looked at. The last is the one that woke it; the one before too,
 * quietly, because 6.18 splices several producers' datagrams at once and
 * wakes the reader once each after (udp_prod_queue): the newer would hide
 * the older. Global, with its room per CPU (dns_arrivals): the sk_data_ready
 * program's frame is the call model's.
 */
__weak __noinline int dns_sock_arrival(__u64 sock)
{
	const struct sock *sk = (const struct sock *)(unsigned long)sock;
	struct dns_work *k = bpf_map_lookup_elem(&dns_arrivals, &(__u32){ 0 });
	__u64 skb;
	__u32 qlen;

	if (!k || !dns_may_answer(sk))
		return 0;
	k->sock = sock;
	qlen = BPF_CORE_READ(sk, sk_receive_queue.qlen);
	skb = (__u64)(unsigned long)BPF_CORE_READ(sk, sk_receive_queue.prev);
	for (__u32 i = 0; i < 2; i++) {
		if (i >= qlen || !skb)
			break;
		dns_skb(k, skb, i);
		skb = (__u64)(unsigned long)BPF_CORE_READ((const struct sk_buff *)(unsigned long)skb, prev);
	}
	return 0;
}

/*
 * Data reached sk (sk_data_ready), not TCP: a UDP socket's, to DNS. One
 * connected to a port that is no DNS port leaves here (an array lookup).
 */
static __always_inline void dns_sock_data(const struct sock *sk)
{
	__u16 dport;

	if (!dw_dns_on || sk->sk_protocol != IPPROTO_UDP)
		return;
	dport = bpf_ntohs(sk->__sk_common.skc_dport);
	if (dport && !dns_port_on(dport))
		return;
	dns_sock_arrival(dns_sock_id(sk));
}

#endif /* DEPWATCH_DNSSOCK_BPF_H */
