/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DNS over UDP as calls (issue 35), beside the stream layer: a query to a
 * resolver starts a call on the resolver's destination row at its send;
 * its answer, matched by (socket, resolver address and port, id, question),
 * ends it. Where each is seen (issue 46: nothing on the packet path, TCP
 * pays no program for DNS): the sock backend reads a query at its send's
 * end (sock_send_length, dns/dnssock.bpf.h) and an answer at its arrival at
 * the socket (the UDP branch of sk_data_ready); the syscalls backend both
 * from the system calls' own buffers (dns/dnssys.bpf.h), a query timed from
 * its send's entry and ended at its read. Both come here with the message's
 * first bytes and the resolver's address: dns_sent() and dns_arrived(),
 * global functions (verified once per program). A query nobody answers is
 * in flight (a pending-table entry of its own, so the stall rule sees its
 * age) until its dependency's dns_timeout, when the sweep (run by the
 * daemon once a poll) fails it, timed at the timeout; or until its socket
 * closes (cgroup/sock_release: the client gave up, as glibc does at its own
 * timeout), when it fails as a timeout too, timed at the close (issue 48).
 * SERVFAIL and REFUSED fail; NXDOMAIN completes and is counted by itself.
 *
 * Exactly once: whoever deletes the query's entry (its answer, the sweep
 * or the close) ends it. Retransmits of the same id and question on the same
 * socket are one call, timed from the first send. The messages are parsed
 * by bpf/dns/dnsmsg.h from a window of DW_DNS_WINDOW bytes; UDP to other
 * ports than the dns_ports (QUIC, anything else) is never read. The
 * connection layer (struct dw_conn) is borrowed on the stack only for the
 * row numbers the counting functions index by.
 *
 * Needs, included before it: dns/maps.bpf.h, core/sockread.bpf.h, core/count.bpf.h.
 */
#ifndef DEPWATCH_DNSCALL_BPF_H
#define DEPWATCH_DNSCALL_BPF_H

#include "core/addr.h"
#include "dns/dnsmsg.h"

#define IPPROTO_UDP 17

/* Outstanding queries (inserted, not yet deleted): the daemon skips the sweep at 0. */
__u32 dw_dns_live __weak;
/* Answers waiting in dns_early, about: one more at each wait, recounted by each sweep (which runs while either is not 0) */
__u32 dw_dns_early_n __weak;

/*
 * Set by user space before load: 0 when DNS is off (user/kernel/parts.c).
 * The DNS branches of the sock and syscalls programs test it first, so the
 * verifier never walks them then.
 */
const volatile __u32 dw_dns_on __weak = 1;

/* Set by user space before load: 1 when the close program (dw_dns_release) is loaded. */
const volatile __u32 dw_dns_close_on __weak = 1;

/* Whether port (host order) is one of the dns_ports: what UDP to any other port costs. */
static __always_inline bool dns_port_on(__u32 port)
{
	__u8 *on = bpf_map_lookup_elem(&dns_ports, &port);

	return on && *on;
}

static __always_inline void dns_key_of(__u64 sock, const struct dw_dest_key *peer, const struct dw_dns_msg *m,
				       struct dw_dns_key *key)
{
	key->sock = sock;
	key->qhash = m->qhash;
	key->id = m->id;
	key->port = peer->port;
	__builtin_memcpy(key->addr, peer->addr, 16);
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
 * the close (dns_closed) and for an answer whose sender is not known
 * (dns_arrived). Only the last DW_DNS_SOCK_KEYS are kept. Two sends racing
 * on one socket may tear a key: a torn key (its socket is still this one)
 * matches nothing, or another query of this socket.
 */
static __always_inline void dns_remember(const struct dw_dns_key *key)
{
	struct dw_dns_sock fresh = {}, *ds;

	ds = bpf_map_lookup_elem(&dns_socks, &key->sock);
	if (!ds) {
		/* no room: the query still ends at its answer (its sender known) or its dns_timeout */
		bpf_map_update_elem(&dns_socks, &key->sock, &fresh, BPF_NOEXIST);
		ds = bpf_map_lookup_elem(&dns_socks, &key->sock);
		if (!ds)
			return;
	}
	ds->keys[ds->next & (DW_DNS_SOCK_KEYS - 1)] = *key;
	ds->next++;
}

/*
 * DNS_CLOSED: its socket closed unanswered before its dns_timeout (the
 * client gave up): failed, counted as a timeout, timed at the close.
 */
enum dns_end { DNS_ANSWERED, DNS_NXDOMAIN, DNS_RCODE_FAILED, DNS_TIMEOUT, DNS_CLOSED };

/* Ends a query whose entry the caller deleted: exactly once. c: room for a borrowed connection. */
static __always_inline void dns_end(const struct dw_dns_query *q, enum dns_end how, __u64 now, struct dw_conn *c)
{
	struct dw_dest_stats *st;

	__sync_fetch_and_sub(&dw_dns_live, 1);
	if (q->pend)
		pend_release(q->pend);
	dns_conn(c, q->slot, q->caller);
	if (how == DNS_TIMEOUT)
		now = q->start_ns + q->timeout_ns;
	count_end(c, q->start_ns, how == DNS_ANSWERED || how == DNS_NXDOMAIN ? OUTCOME_COMPLETED : OUTCOME_FAILED,
		  now, false);
	st = stats_of(c);
	if (!st)
		return;
	if (how == DNS_NXDOMAIN)
		st->dns_nxdomain++;
	else if (how == DNS_RCODE_FAILED)
		st->dns_rcode_failed++;
	else if (how == DNS_TIMEOUT || how == DNS_CLOSED)
		st->dns_timeouts++;
}

/* How an answer of rcode ends its query (answered in time). */
static __always_inline enum dns_end dns_how(__u32 rcode)
{
	if (rcode == DW_DNS_SERVFAIL || rcode == DW_DNS_REFUSED)
		return DNS_RCODE_FAILED;
	if (rcode == DW_DNS_NXDOMAIN)
		return DNS_NXDOMAIN;
	return DNS_ANSWERED;
}

/* An answer came: the query of key ends, if it is still outstanding. False: no such query. */
static __always_inline bool dns_answer(const struct dw_dns_key *key, __u32 rcode, struct dw_conn *c)
{
	struct dw_dns_query *found, q;
	enum dns_end how;
	__u64 now;

	found = bpf_map_lookup_elem(&dns_queries, key);
	if (!found)
		return false;
	q = *found;
	if (bpf_map_delete_elem(&dns_queries, key))
		return true;	/* the sweep, or a duplicate answer on another CPU, ended it */
	now = bpf_ktime_get_ns();
	if (now - q.start_ns > q.timeout_ns)
		how = DNS_TIMEOUT;	/* answered after its timeout, before the sweep saw it */
	else
		how = dns_how(rcode);
	dns_end(&q, how, now, c);
	return true;
}

/* A query left at now: a call starts, unless it is a retransmit or the table is full. */
static __always_inline void dns_query(struct dns_work *k, const struct dw_dns_msg *m)
{
	/* on the stack: 6.1 takes a map key from there (or a map value), not from a global's argument */
	struct dw_dest_key peer = k->peer;
	struct dw_dns_query q = {};
	struct dw_pending_entry *e;
	struct dw_dest_stats *st;
	struct dw_dns_early *early;
	struct dw_dns_key key;
	__u64 now = k->now;
	__u32 rcode = 0;

	dns_key_of(k->sock, &peer, m, &key);
	if (bpf_map_lookup_elem(&dns_queries, &key)) {
		global_count(G_dns_retransmits);
		return;
	}
	/* only the sock backend leaves early answers (dns_arrived's k->early, set by dnssock.bpf.h):
	 * on syscalls both looks would find nothing; dw_backend is read-only, the verifier drops them */
	early = dw_backend != DW_BACKEND_SYSCALLS ? bpf_map_lookup_elem(&dns_early, &key) : 0;
	if (early) {
		rcode = early->rcode;
		if (bpf_map_delete_elem(&dns_early, &key))
			early = 0;	/* another send of the same query took it */
	}
	/* the sender's network namespace and cgroup: these programs run in the sending task */
	peer.netns = dns_netns();
	q.slot = dest_claim(&peer);
	q.caller = caller_claim(q.slot, bpf_get_current_cgroup_id());
	q.timeout_ns = dns_timeout_of(q.slot);
	q.start_ns = now;
	if (early) {
		/* its answer came inside this send: a call, ended as it starts */
		dns_conn(&k->conn, q.slot, q.caller);
		st = count_start(&k->conn, now);
		if (st)
			st->calls_dns++;
		__sync_fetch_and_add(&dw_dns_live, 1);
		dns_end(&q, dns_how(rcode), now, &k->conn);
		return;
	}
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
	dns_remember(&key);
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
	dns_conn(&k->conn, q.slot, q.caller);
	st = count_start(&k->conn, now);
	if (st)
		st->calls_dns++;
	/*
	 * Its answer, on another CPU, may have looked for it between the look
	 * above and the insert, found none and gone to dns_early (2 calls of 220
	 * failed at the close in test_dns, on loopback). So each side looks
	 * again after its own insert and an atomic add (a locked instruction:
	 * the look is not done before the insert is seen); the early entry's
	 * delete says which of the two ends the call.
	 */
	early = dw_backend != DW_BACKEND_SYSCALLS ? bpf_map_lookup_elem(&dns_early, &key) : 0;
	if (early) {
		rcode = early->rcode;
		if (!bpf_map_delete_elem(&dns_early, &key))
			dns_answer(&key, rcode, &k->conn);
	}
}

/*
 * An answer whose sender is not known (a read of an unconnected socket
 * that asked for no address): the socket's last queries with its id and
 * question, whatever resolver each went to.
 */
static __always_inline bool dns_answer_any(__u64 sock, const struct dw_dns_msg *m, struct dw_conn *c)
{
	struct dw_dns_sock *ds = bpf_map_lookup_elem(&dns_socks, &sock);

	if (!ds)
		return false;
	for (__u32 i = 0; i < DW_DNS_SOCK_KEYS; i++) {
		struct dw_dns_key key = ds->keys[i];

		if (key.sock == sock && key.id == m->id && key.qhash == m->qhash && dns_answer(&key, m->rcode, c))
			return true;
	}
	return false;
}

/*
 * A datagram sent on the UDP socket k->sock to k->peer (a dns_ports port),
 * its first k->n bytes in k->w, at k->now (the send's entry on the syscalls
 * backend, its end on the sock backend): a query starts a call. Global:
 * each program that sends here verifies it once. 1: a query.
 */
__weak __noinline int dns_sent(struct dns_work *k)
{
	struct dw_dns_msg m = {};

	if (!k)
		return 0;
	if (dw_dns_read(k->w.b, k->n, &m) != DW_DNS_OK) {
		global_count(G_dns_unread);
		return 0;
	}
	if (m.qr)
		return 0;	/* an answer: the resolver's own socket, sending */
	dns_query(k, &m);
	return 1;
}

/*
 * A datagram arrived at (sock backend) or was read from (syscalls) the UDP
 * socket k->sock, which sent a query still outstanding: its first k->n
 * bytes in k->w, its sender k->peer (family 0: not known). An answer ends
 * the query it matches. Global, as dns_sent().
 */
__weak __noinline int dns_arrived(struct dns_work *k)
{
	struct dw_dns_msg m = {};
	struct dw_dns_key key;

	if (!k)
		return 0;
	if (k->peer.family && !dns_port_on(k->peer.port))
		return 0;	/* not from a DNS port: nothing depwatch reads */
	if (dw_dns_read(k->w.b, k->n, &m) != DW_DNS_OK) {
		if (!k->quiet)
			global_count(G_dns_unread);
		return 0;
	}
	if (!m.qr)
		return 0;	/* a query: a resolver's socket, receiving */
	if (k->peer.family) {
		dns_key_of(k->sock, &k->peer, &m, &key);
		if (dns_answer(&key, m.rcode, &k->conn))
			return 1;
		if (k->early) {
			/* a quiet look's datagram may have matched its query at its first: the sweep
			 * drops it uncounted, as the look would have */
			struct dw_dns_early e = { .at_ns = bpf_ktime_get_ns(), .rcode = m.rcode, .quiet = k->quiet };

			/* its query's send may not have ended yet: that end, or the sweep, counts it;
			 * one waits for a send already (a retransmit's answer): a send claims one */
			if (!bpf_map_update_elem(&dns_early, &key, &e, BPF_NOEXIST)) {
				__sync_fetch_and_add(&dw_dns_early_n, 1);
				/* its query, inserted meanwhile on another CPU (dns_query looks again too) */
				if (bpf_map_lookup_elem(&dns_queries, &key) && !bpf_map_delete_elem(&dns_early, &key))
					return dns_answer(&key, m.rcode, &k->conn);
				return 0;
			}
		}
	} else if (dns_answer_any(k->sock, &m, &k->conn)) {
		return 1;
	}
	if (!k->quiet)
		global_count(G_dns_unmatched);
	return 0;
}

/*
 * A UDP socket closes (cgroup/sock_release, in the closing task; sock, its
 * address): its queries still in the table will never be answered, and end
 * now as failed, a timeout timed at the close, or at their dns_timeout if
 * that came first (the sweep had not run yet). At most DW_DNS_SOCK_KEYS
 * lookups and deletes; a socket that sent no query has no record. The
 * delete is what makes it exactly once against a racing answer or sweep.
 */
static __always_inline void dns_closed(__u64 sock)
{
	struct dw_dns_query *found, q;
	struct dw_dns_sock *ds;
	struct dw_conn c;
	__u64 now = 0;

	ds = bpf_map_lookup_elem(&dns_socks, &sock);
	if (!ds)
		return;
	for (__u32 i = 0; i < DW_DNS_SOCK_KEYS; i++) {
		struct dw_dns_key key = ds->keys[i];

		if (key.sock != sock)
			continue;
		found = bpf_map_lookup_elem(&dns_queries, &key);
		if (!found)
			continue;	/* answered, or swept */
		q = *found;
		if (bpf_map_delete_elem(&dns_queries, &key))
			continue;	/* its answer or the sweep, on another CPU, just ended it */
		if (!now)
			now = bpf_ktime_get_ns();
		dns_end(&q, now - q.start_ns > q.timeout_ns ? DNS_TIMEOUT : DNS_CLOSED, now, &c);
		global_count(G_dns_closed);
	}
	/* the address may be a new socket's soon: its record starts empty */
	bpf_map_delete_elem(&dns_socks, &sock);
}

#endif /* DEPWATCH_DNSCALL_BPF_H */
