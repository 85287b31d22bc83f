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
#define DNS_NR_READ 0
#define DNS_NR_READV 19
#define DNS_NR_RECVFROM 45
#define DNS_NR_RECVMSG 47

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
 * The current system call's message, from its saved registers (x86-64), into c: where it is
 * (kind, arg, len), sendto's address, and whether it is a send; the registers, or NULL for a
 * call DNS does not read (recvmmsg: which of its messages is the one at hand is not known at
 * sock_recv_length; io_uring's, which pass no such registers).
 */
static __always_inline struct pt_regs *dns_regs_call(struct dns_sys_call *c)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	if (!regs)
		return NULL;
	c->arg = regs->si;
	c->len = regs->dx;
	switch (regs->orig_ax) {
	case DNS_NR_SENDTO:
		c->name = regs->r8;
		c->namelen = regs->r9;
		/* fall through */
	case DNS_NR_WRITE:
		c->send = 1;
		/* fall through */
	case DNS_NR_READ:
	case DNS_NR_RECVFROM:
		c->kind = DNS_BUF;
		return regs;
	case DNS_NR_WRITEV:
		c->send = 1;
		/* fall through */
	case DNS_NR_READV:
		c->kind = DNS_IOV;
		return regs;
	case DNS_NR_SENDMSG:
		c->send = 1;
		/* fall through */
	case DNS_NR_RECVMSG:
		c->kind = DNS_MSG;
		return regs;
	case DNS_NR_SENDMMSG:
		c->send = 1;
		c->kind = DNS_MMSG;
		return regs;
	}
	return NULL;
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
	regs = dns_regs_call(&c);
	if (!regs || !c.send)
		return;
	if (c.kind == DNS_MMSG) {
		i = dns_mmsg_now(c.arg, c.len);
		if (i >= DW_DNS_MMSG)
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

/*
 * An skb in a receive queue (sock backend, skb its address): its message and sender to dns_arrived().
 * False if it did not read (the reader freed it meanwhile, or its bytes are not in its head).
 */
static __always_inline bool dns_skb(struct dns_work *k, __u64 skb_addr, __u32 quiet)
{
	const struct sk_buff *skb = (const struct sk_buff *)(unsigned long)skb_addr;
	unsigned char *head = BPF_CORE_READ(skb, head), *data = BPF_CORE_READ(skb, data);
	__u16 nh = BPF_CORE_READ(skb, network_header), th = BPF_CORE_READ(skb, transport_header);
	__u32 len = BPF_CORE_READ(skb, len), n = len - BPF_CORE_READ(skb, data_len);
	__u16 sport;
	__u8 vihl;

	/* the linear part: every small datagram's whole */
	if (n > len)
		return false;
	k->n = n > DW_DNS_WINDOW ? DW_DNS_WINDOW : n;
	if (bpf_probe_read_kernel(k->w.b, k->n, data) || bpf_probe_read_kernel(&vihl, 1, head + nh) ||
	    bpf_probe_read_kernel(&sport, 2, head + th))
		return false;
	__builtin_memset(&k->peer, 0, sizeof(k->peer));
	k->peer.port = bpf_ntohs(sport);
	if ((vihl >> 4) == 4) {
		k->peer.family = AF_INET;
		if (bpf_probe_read_kernel(k->peer.addr, 4, head + nh + 12))
			return false;
	} else if ((vihl >> 4) == 6) {
		k->peer.family = AF_INET6;
		if (bpf_probe_read_kernel(k->peer.addr, 16, head + nh + 8))
			return false;
		dw_fold_v4mapped(&k->peer);
	} else {
		return false;
	}
	k->quiet = quiet;
	k->early = 1;
	dns_arrived(k);
	return true;
}

/* The datagram that woke the socket sock was read before its wake-up looked: its read looks. */
static __always_inline void dns_unseen_add(__u64 sock)
{
	__u32 one = 1, *n = bpf_map_lookup_elem(&dns_unseen, &sock);

	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&dns_unseen, &sock, &one, BPF_NOEXIST);
}

/*
 * A receive on the UDP socket sk returned ret (sock_recv_length, not a
 * peek), which may be an answer (dns_may_answer): its datagram is read
 * from the system call's own buffer, found through its saved registers as
 * dns_sock_send() finds a send's, and handed to dns_arrived(), quietly (its
 * arrival looked at it, so a match or a miss is counted there) unless its
 * arrival saw nothing (dns_unseen): then it is looked at here, and its
 * query, if any, ends at its read. recvfrom's and recvmsg's address is
 * written to the caller after this: the sender is the connected peer, or
 * not known (dns_arrived matches by the socket alone). recvmmsg (which of
 * its messages is the one now is not known here) and io_uring are not
 * read: their arrivals alone count. Global (sock, the socket's address):
 * verified once, not once more inside the receive program's TCP paths.
 */
__weak __noinline int dns_sock_recv(__u64 sock, int ret)
{
#if defined(__TARGET_ARCH_x86)
	const struct sock *sk = (const struct sock *)(unsigned long)sock;
	struct dns_sys_call c = { .sk = sock };
	struct dns_sys_rec *rec;
	struct pt_regs *regs;
	__u32 *unseen;
	bool fresh;

	if (ret <= 0 || !dns_may_answer(sk))
		return 0;
	regs = dns_regs_call(&c);
	if (!regs || c.send || !dns_fd_is(regs->di, sk))
		return 0;
	rec = dns_rec_of(bpf_get_current_pid_tgid(), &fresh);
	if (!rec || !dns_recv_read(&c, 0, ret, &rec->k, false))
		return 0;
	rec->k.quiet = 1;
	unseen = bpf_map_lookup_elem(&dns_unseen, &rec->k.sock);
	if (unseen) {
		__u32 v = *(volatile __u32 *)unseen;

		/* one read claims one (two readers of one socket: a compare-and-swap) */
		if (v && __sync_val_compare_and_swap(unseen, v, v - 1) == v)
			rec->k.quiet = 0;
	}
	dns_arrived(&rec->k);
#endif
	return 0;
}

/*
 * A receive on sk returned ret (sock_recv_length), not TCP: a UDP socket's, to DNS (dns_sock_recv).
 * One connected to a port that is no DNS port leaves here, as at its arrival (dns_sock_data).
 */
static __always_inline void dns_sock_read(const struct sock *sk, int ret, int flags)
{
	__u16 dport;

	if (!dw_dns_on || ret <= 0 || (flags & MSG_PEEK) || sk->sk_protocol != IPPROTO_UDP)
		return;
	dport = bpf_ntohs(sk->__sk_common.skc_dport);
	if (dport && !dns_port_on(dport))
		return;
	dns_sock_recv(dns_sock_id(sk), ret);
}

/*
 * A datagram arrived at the UDP socket at address sock, connected to a
 * DNS port or one that asked (dns_may_answer): the last two datagrams not
 * yet read are looked at, the last loudly, the one before quietly (its
 * misses counted when it was the last). Not yet read means in either of
 * UDP's two queues, in order: the socket's receive queue, where the
 * datagram was appended, and the reader's own queue (udp_sock's
 * reader_queue), to which a reader in recv moves the whole receive queue
 * when its own is empty. The datagram is appended and the lock released
 * before the wake-up this runs in, so a reader on another CPU can move it
 * in between: looked for in the receive queue alone, it was missed (19 999
 * of 20 000 cut-short answers counted, a reader spinning in recv; the
 * test_dns count of 4 for 5 once in about 15 full runs). Looking at the
 * one before too: 6.18 splices several producers' datagrams at once and
 * wakes the reader once each after (udp_prod_queue), so the newer would
 * hide the older. A datagram the reader took before this runs is in
 * neither queue: with none there at all, or the last one there not read
 * (freed meanwhile), the socket's next read is marked to be looked at
 * loudly (dns_unseen; dns_sock_recv). Global, with its
 * room per CPU (dns_arrivals): the sk_data_ready program's frame is the
 * call model's.
 */
__weak __noinline int dns_sock_arrival(__u64 sock)
{
	const struct sock *sk = (const struct sock *)(unsigned long)sock;
	const struct udp_sock *us = (const struct udp_sock *)sk;
	struct dns_work *k = bpf_map_lookup_elem(&dns_arrivals, &(__u32){ 0 });
	__u32 left, reader = 0;
	__u64 skb;

	if (!k || !dns_may_answer(sk))
		return 0;
	k->sock = sock;
	left = BPF_CORE_READ(sk, sk_receive_queue.qlen);
	skb = left ? (__u64)(unsigned long)BPF_CORE_READ(sk, sk_receive_queue.prev) : 0;
	for (__u32 i = 0; i < 2; i++) {
		if (!left && !reader) {
			/* the receive queue's oldest looked at (or none there): on to the reader's */
			reader = 1;
			left = BPF_CORE_READ(us, reader_queue.qlen);
			skb = left ? (__u64)(unsigned long)BPF_CORE_READ(us, reader_queue.prev) : 0;
		}
		if (!left || !skb) {
			if (!i)
				dns_unseen_add(sock);
			break;
		}
		if (!dns_skb(k, skb, i) && !i)
			dns_unseen_add(sock);
		left--;
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
