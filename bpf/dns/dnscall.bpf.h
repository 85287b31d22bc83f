/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DNS over UDP as calls (issue 35), beside the stream layer: a query to a
 * resolver starts a call on the resolver's destination row at its send
 * (cgroup egress); its answer, matched by (socket cookie, resolver address
 * and port, id, question), ends it at its arrival at the socket (cgroup
 * ingress, before it is queued: the same on both backends). A query nobody
 * answers is in flight (a pending-table entry of its own, so the stall rule
 * sees its age) until its dependency's dns_timeout, when the sweep (run by
 * the daemon once a poll) fails it, timed at the timeout; or until its
 * socket closes (cgroup/sock_release: the client gave up, as glibc does
 * at its own timeout), when it fails as a timeout too, timed at the close
 * (issue 48). SERVFAIL and REFUSED fail; NXDOMAIN completes and is counted
 * by itself.
 *
 * Exactly once: whoever deletes the query's entry (its answer, the sweep
 * or the close) ends it. Retransmits of the same id and question on the same
 * socket are one call, timed from the first send. The datagrams are read
 * with bpf_skb_load_bytes into a window of DW_DNS_WINDOW bytes and parsed
 * by bpf/dns/dnsmsg.h; UDP off the dns_ports (QUIC, anything else) is never read
 * past its UDP header. The connection layer (struct dw_conn) is borrowed on
 * the stack only for the row numbers the counting functions index by.
 *
 * Needs, included before it: dns/maps.bpf.h, core/count.bpf.h.
 */
#ifndef DEPWATCH_DNSCALL_BPF_H
#define DEPWATCH_DNSCALL_BPF_H

#include "core/addr.h"
#include "dns/dnsmsg.h"

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IPPROTO_UDP 17

/* The datagram's resolver side (the destination's egress, the source's ingress) and where its payload starts. */
struct dns_dgram {
	struct dw_dest_key peer;
	__u32 off;		/* of the DNS message */
	__u32 len;		/* the message's length */
};

/*
 * len bytes at off: straight from the packet when its linear part holds
 * them (no helper call: what every datagram and TCP segment pays), else
 * through bpf_skb_load_bytes. 0 on success.
 */
#define dns_hdr(skb, off, dst)								\
	({										\
		void *data_ = (void *)(long)(skb)->data;				\
		void *end_ = (void *)(long)(skb)->data_end;				\
		int err_ = 0;								\
		if (data_ + (off) + sizeof(*(dst)) <= end_)				\
			__builtin_memcpy((dst), data_ + (off), sizeof(*(dst)));		\
		else									\
			err_ = bpf_skb_load_bytes((skb), (off), (dst), sizeof(*(dst)));	\
		err_;									\
	})

/* Outstanding queries (inserted, not yet deleted): the daemon skips the sweep at 0. */
__u32 dw_dns_live __weak;

/*
 * Set by user space before load: 1 when the close program (dw_dns_release)
 * is loaded. At 0 the sends keep no per-socket record, and the verifier
 * never sees their socket-storage call (a kernel that refuses it still
 * gets DNS, ended by answers and the sweep).
 */
const volatile __u32 dw_dns_close_on __weak = 1;

/* The UDP header's port on the resolver's side, if it is a DNS port: the whole cost for other UDP. */
static __always_inline int dns_udp(struct __sk_buff *skb, __u32 l4, bool egress, struct dns_dgram *d)
{
	struct { __u16 v[4]; } udp;
	__u32 port;
	__u8 *on;

	if (l4 > 60 || dns_hdr(skb, l4, &udp))
		return 0;
	port = bpf_ntohs(egress ? udp.v[1] : udp.v[0]);
	on = bpf_map_lookup_elem(&dns_ports, &port);
	if (!on || !*on)
		return 0;
	d->peer.port = port;
	d->off = l4 + 8;
	d->len = skb->len > d->off ? skb->len - d->off : 0;
	return 1;
}

/* An IPv4 or IPv6 UDP datagram to or from a DNS port (no IPv6 extension headers, no fragments). */
static __always_inline int dns_dgram_of(struct __sk_buff *skb, bool egress, struct dns_dgram *d)
{
	__u32 *addr = (__u32 *)d->peer.addr;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct { __u8 vihl, tos; __u16 len, id, frag; __u8 ttl, proto; __u16 csum; __u32 saddr, daddr; } ip;

		if (dns_hdr(skb, 0, &ip) || ip.proto != IPPROTO_UDP ||
		    (ip.frag & bpf_htons(0x3fff)))
			return 0;
		if ((ip.vihl & 0xf) < 5 || !dns_udp(skb, (ip.vihl & 0xf) * 4, egress, d))
			return 0;
		d->peer.family = AF_INET;
		addr[0] = egress ? ip.daddr : ip.saddr;
		return 1;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct { __u32 vtf; __u16 plen; __u8 next, hop; __u32 saddr[4], daddr[4]; } ip6;

		if (dns_hdr(skb, 0, &ip6) || ip6.next != IPPROTO_UDP)
			return 0;
		if (!dns_udp(skb, sizeof(ip6), egress, d))
			return 0;
		d->peer.family = AF_INET6;
		__builtin_memcpy(addr, egress ? ip6.daddr : ip6.saddr, 16);
		dw_fold_v4mapped(&d->peer);
		return 1;
	}
	return 0;
}

/* Reads the message's header and question; false (counted) if it is none depwatch reads. */
static __always_inline bool dns_msg_of(struct __sk_buff *skb, const struct dns_dgram *d, __u8 *buf,
				       struct dw_dns_msg *m)
{
	__u32 n = d->len;

	if (n > DW_DNS_WINDOW)
		n = DW_DNS_WINDOW;
	if (n < DW_DNS_HDR + 5 || bpf_skb_load_bytes(skb, d->off, buf, n) ||
	    dw_dns_read(buf, n, m) != DW_DNS_OK) {
		global_count(G_dns_unread);
		return false;
	}
	return true;
}

static __always_inline void dns_key_of(struct __sk_buff *skb, const struct dns_dgram *d,
				       const struct dw_dns_msg *m, struct dw_dns_key *key)
{
	key->cookie = bpf_get_socket_cookie(skb);
	key->qhash = m->qhash;
	key->id = m->id;
	key->port = d->peer.port;
	__builtin_memcpy(key->addr, d->peer.addr, 16);
}

/* The counting functions index by a connection's slot and caller: a query borrows one. */
static __always_inline void dns_conn(struct dw_conn *c, __u32 slot, __u32 caller)
{
	__builtin_memset(c, 0, sizeof(*c));
	c->slot = slot;
	c->caller = caller;
}

static __always_inline __u64 dns_timeout_of(__u32 slot)
{
	struct dw_slot_cfg *sc = bpf_map_lookup_elem(&slot_cfg, &slot);
	__u32 dep_id = sc ? sc->dep_id : 0;
	struct dw_dep_cfg *cfg = bpf_map_lookup_elem(&dep_cfg, &dep_id);

	return cfg && cfg->dns_timeout_ns ? cfg->dns_timeout_ns : DW_DNS_TIMEOUT_DEFAULT_NS;
}

/* The current task's network namespace: the sender's, in whose context the egress hook runs. */
static __always_inline __u32 dns_netns(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return BPF_CORE_READ(task, nsproxy, net_ns, ns.inum);
}

/*
 * A query went into the table: its key goes into its socket's record, for
 * the close (dns_closed). Only the last DW_DNS_SOCK_KEYS are kept: an
 * older query still outstanding then ends at dns_timeout, as before. Two
 * sends racing on one socket may tear a key: a torn key (its cookie is
 * still this socket's) matches nothing, or another query of this socket.
 */
static __always_inline void dns_remember(struct __sk_buff *skb, const struct dw_dns_key *key)
{
	struct bpf_sock *sk = skb->sk;
	struct dw_dns_sock *ds;

	if (!dw_dns_close_on || !sk)
		return;
	sk = bpf_sk_fullsock(sk);
	if (!sk)
		return;
	/* no record (no memory): the query still ends at its answer or its dns_timeout */
	ds = bpf_sk_storage_get(&dns_socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!ds)
		return;
	ds->keys[ds->next & (DW_DNS_SOCK_KEYS - 1)] = *key;
	ds->next++;
}

/* A query leaves: a call starts, unless it is a retransmit or the table is full. */
static __always_inline void dns_query(struct __sk_buff *skb, struct dns_dgram *d, const struct dw_dns_msg *m)
{
	struct dw_dns_query q = {};
	struct dw_pending_entry *e;
	struct dw_dest_stats *st;
	struct dw_dns_key key;
	struct dw_conn c;
	__u64 now;

	dns_key_of(skb, d, m, &key);
	if (bpf_map_lookup_elem(&dns_queries, &key)) {
		global_count(G_dns_retransmits);
		return;
	}
	now = bpf_ktime_get_ns();
	d->peer.netns = dns_netns();
	q.slot = dest_claim(&d->peer);
	q.caller = caller_claim(q.slot, bpf_skb_cgroup_id(skb));
	q.timeout_ns = dns_timeout_of(q.slot);
	q.start_ns = now;
	q.pend = pend_take();
	if (bpf_map_update_elem(&dns_queries, &key, &q, BPF_NOEXIST)) {
		/* a racing send of the same query won; or the table is full */
		if (!bpf_map_lookup_elem(&dns_queries, &key))
			global_count(G_dns_table_full);
		if (q.pend)
			pend_release(q.pend);
		return;
	}
	__sync_fetch_and_add(&dw_dns_live, 1);
	dns_remember(skb, &key);
	e = pend_entry(q.pend);
	if (e) {
		e->connect_start_ns = 0;
		e->slot = q.slot;
		e->caller = q.caller;
		e->caller_netns = 0;
		e->caller_port = 0;
		e->flags = 0;
		e->call_start_ns = now;
	}
	dns_conn(&c, q.slot, q.caller);
	st = count_start(&c, now);
	if (st)
		st->calls_dns++;
}

/*
 * DNS_CLOSED: its socket closed unanswered before its dns_timeout (the
 * client gave up): failed, counted as a timeout, timed at the close.
 */
enum dns_end { DNS_ANSWERED, DNS_NXDOMAIN, DNS_RCODE_FAILED, DNS_TIMEOUT, DNS_CLOSED };

/* Ends a query whose entry the caller deleted: exactly once. */
static __always_inline void dns_end(const struct dw_dns_query *q, enum dns_end how, __u64 now)
{
	struct dw_dest_stats *st;
	struct dw_conn c;

	__sync_fetch_and_sub(&dw_dns_live, 1);
	if (q->pend)
		pend_release(q->pend);
	dns_conn(&c, q->slot, q->caller);
	if (how == DNS_TIMEOUT)
		now = q->start_ns + q->timeout_ns;
	count_end(&c, q->start_ns, how == DNS_ANSWERED || how == DNS_NXDOMAIN ? OUTCOME_COMPLETED : OUTCOME_FAILED,
		  now, false);
	st = stats_of(&c);
	if (!st)
		return;
	if (how == DNS_NXDOMAIN)
		st->dns_nxdomain++;
	else if (how == DNS_RCODE_FAILED)
		st->dns_rcode_failed++;
	else if (how == DNS_TIMEOUT || how == DNS_CLOSED)
		st->dns_timeouts++;
}

/* An answer arrives at its socket: the call it matches ends, if any does. */
static __always_inline void dns_answer(struct __sk_buff *skb, const struct dns_dgram *d, const struct dw_dns_msg *m)
{
	struct dw_dns_query *found, q;
	struct dw_dns_key key;
	enum dns_end how;
	__u64 now;

	dns_key_of(skb, d, m, &key);
	found = bpf_map_lookup_elem(&dns_queries, &key);
	if (!found) {
		global_count(G_dns_unmatched);
		return;
	}
	q = *found;
	if (bpf_map_delete_elem(&dns_queries, &key))
		return;	/* the sweep, or a duplicate answer on another CPU, ended it */
	now = bpf_ktime_get_ns();
	if (now - q.start_ns > q.timeout_ns)
		how = DNS_TIMEOUT;	/* answered after its timeout, before the sweep saw it */
	else if (m->rcode == DW_DNS_SERVFAIL || m->rcode == DW_DNS_REFUSED)
		how = DNS_RCODE_FAILED;
	else if (m->rcode == DW_DNS_NXDOMAIN)
		how = DNS_NXDOMAIN;
	else
		how = DNS_ANSWERED;
	dns_end(&q, how, now);
}

/* Every datagram through the cgroup hooks: the DNS ones are read, the rest cost a port lookup. */
static __always_inline void dw_on_dns_skb(struct __sk_buff *skb, bool egress)
{
	struct dw_dns_msg m = {};
	struct dns_dgram d = {};
	__u8 buf[DW_DNS_WINDOW];

	if (!dns_dgram_of(skb, egress, &d))
		return;
	__builtin_memset(buf, 0, sizeof(buf));
	if (!dns_msg_of(skb, &d, buf, &m))
		return;
	if (egress && !m.qr)
		dns_query(skb, &d, &m);
	else if (!egress && m.qr)
		dns_answer(skb, &d, &m);
}

struct dns_sweep_ctx {
	__u64 now;
	__u32 ended;
};

static long dns_sweep_one(struct bpf_map *map, struct dw_dns_key *key, struct dw_dns_query *val,
			  struct dns_sweep_ctx *ctx)
{
	struct dw_dns_query q = *val;

	if (ctx->now - q.start_ns <= q.timeout_ns)
		return 0;
	if (bpf_map_delete_elem(map, key))
		return 0;
	dns_end(&q, DNS_TIMEOUT, ctx->now);
	ctx->ended++;
	return 0;
}

/*
 * A UDP socket closes (cgroup/sock_release, in the closing task): its
 * queries still in the table will never be answered, and end now as
 * failed, a timeout timed at the close, or at their dns_timeout if that
 * came first (the sweep had not run yet). At most DW_DNS_SOCK_KEYS lookups
 * and deletes; a socket that sent no query has no record. The delete is
 * what makes it exactly once against a racing answer or sweep.
 */
static __always_inline void dns_closed(struct bpf_sock *sk)
{
	struct dw_dns_query *found, q;
	struct dw_dns_sock *ds;
	__u64 now = 0;

	ds = bpf_sk_storage_get(&dns_socks, sk, 0, 0);
	if (!ds)
		return;
	for (__u32 i = 0; i < DW_DNS_SOCK_KEYS; i++) {
		struct dw_dns_key key = ds->keys[i];

		if (!key.cookie)
			continue;
		found = bpf_map_lookup_elem(&dns_queries, &key);
		if (!found)
			continue;	/* answered, or swept */
		q = *found;
		if (bpf_map_delete_elem(&dns_queries, &key))
			continue;	/* its answer or the sweep, on another CPU, just ended it */
		if (!now)
			now = bpf_ktime_get_ns();
		dns_end(&q, now - q.start_ns > q.timeout_ns ? DNS_TIMEOUT : DNS_CLOSED, now);
		global_count(G_dns_closed);
	}
}

#endif /* DEPWATCH_DNSCALL_BPF_H */
