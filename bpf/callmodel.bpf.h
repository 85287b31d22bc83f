/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call model, in one place. Hooks (the sock backend's tracepoints in
 * depwatch.bpf.c, the syscalls backend's in syscalls.bpf.h) translate kernel
 * events into these dw_on_*() calls and nothing else.
 *
 * An outbound connection is a TCP socket this host connect()ed. A call starts
 * at the first send of request bytes with no call outstanding, completes at
 * the first response byte (data reaching the socket, or a successful
 * receive, whichever the kernel reports first) and fails when the connection
 * is reset, closed or errors while the call is outstanding.
 *
 * conn->call_start_ns is claimed and released with compare-and-swap, so each
 * started call is ended exactly once even when a send and a receive race on
 * two CPUs: the in-flight count (started - completed - failed) stays exact.
 */
#ifndef DEPWATCH_CALLMODEL_BPF_H
#define DEPWATCH_CALLMODEL_BPF_H

#include "maps.bpf.h"

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define RCV_SHUTDOWN 1
#define MSG_ERRQUEUE 0x2000

#define EPIPE 32
#define ENETUNREACH 101
#define ECONNABORTED 103
#define ECONNRESET 104
#define ETIMEDOUT 110
#define ECONNREFUSED 111
#define EHOSTUNREACH 113

static struct dw_dest_stats zero_stats;
static struct dw_dest_detail zero_detail;
static const struct dw_dest_key overflow_key;

static __always_inline void global_count(int field)
{
	__u32 zero = 0;
	struct dw_global_stats *g = bpf_map_lookup_elem(&globals, &zero);

	if (!g)
		return;
	if (field == 0)
		g->dest_map_full++;
	else if (field == 1)
		g->hist_map_full++;
	else
		g->conn_storage_fail++;
}

static __always_inline struct dw_conn *conn_of(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;

	/* dw_backend is read-only: the verifier drops the branch not taken */
	if (dw_backend == DW_BACKEND_SYSCALLS)
		return bpf_map_lookup_elem(&conns_sk, &key);
	return bpf_sk_storage_get(&conns, (struct sock *)sk, 0, 0);
}

static __always_inline struct dw_conn *conn_create(const struct sock *sk)
{
	static const struct dw_conn fresh;
	__u64 key = (__u64)(unsigned long)sk;
	long err;

	if (dw_backend != DW_BACKEND_SYSCALLS)
		return bpf_sk_storage_get(&conns, (struct sock *)sk, 0,
					  BPF_SK_STORAGE_GET_F_CREATE);
	err = bpf_map_update_elem(&conns_sk, &key, &fresh, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST: a reconnect, or a reused address; conn_adopt resets it */)
		return 0;
	return bpf_map_lookup_elem(&conns_sk, &key);
}

/* At TCP_CLOSE: socket storage stays with the socket, the syscalls backend's entry goes. */
static __always_inline void conn_forget(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;

	if (dw_backend == DW_BACKEND_SYSCALLS)
		bpf_map_delete_elem(&conns_sk, &key);
}

static __always_inline __u32 netns_of(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
}

/* The peer of sk; IPv4-mapped IPv6 counts as IPv4. */
static __always_inline void dest_of(const struct sock *sk, struct dw_dest_key *dest)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	__builtin_memset(dest, 0, sizeof(*dest));
	dest->netns = netns_of(sk);
	dest->port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == AF_INET) {
		dest->family = AF_INET;
		bpf_core_read(dest->addr, 4, &sk->__sk_common.skc_daddr);
		return;
	}
	bpf_core_read(dest->addr, 16, &sk->__sk_common.skc_v6_daddr);
	dest->family = AF_INET6;
	if (((__u32 *)dest->addr)[0] == 0 && ((__u32 *)dest->addr)[1] == 0 &&
	    ((__u32 *)dest->addr)[2] == bpf_htonl(0xffff)) {
		dest->family = AF_INET;
		((__u32 *)dest->addr)[0] = ((__u32 *)dest->addr)[3];
		((__u32 *)dest->addr)[2] = 0;
		((__u32 *)dest->addr)[3] = 0;
	}
}

/*
 * Makes sure the destination has its rows. A full map sends the connection
 * to the overflow row (which user space creates before attaching), counted.
 */
static __always_inline void dest_claim(struct dw_dest_key *dest)
{
	long err;

	if (bpf_map_lookup_elem(&dests, dest))
		return;
	err = bpf_map_update_elem(&dests, dest, &zero_stats, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST */) {
		global_count(0);
		__builtin_memcpy(dest, (const void *)&overflow_key, sizeof(*dest));
		return;
	}
	err = bpf_map_update_elem(&details, dest, &zero_detail, BPF_NOEXIST);
	if (err && err != -17)
		global_count(1);
}

static __always_inline struct dw_dest_stats *stats_of(struct dw_conn *conn)
{
	return bpf_map_lookup_elem(&dests, &conn->dest);
}

static __always_inline struct dw_dest_detail *detail_of(struct dw_conn *conn)
{
	struct dw_dest_detail *detail = bpf_map_lookup_elem(&details, &conn->dest);

	if (!detail)
		global_count(1);
	return detail;
}

static __always_inline void hist_add(__u32 *hist, __u64 ns)
{
	__u32 b = dw_hist_bucket(ns);

	/* keeps the compiler from checking one copy of b and indexing with another */
	barrier_var(b);
	if (b >= DW_HIST_BUCKETS)
		return;
	barrier_var(b);
	__sync_fetch_and_add(&hist[b], 1);
}

/*
 * Adds one to a (slice << 32 | count) counter. A counter still holding an
 * older slice restarts at 1; one already holding a newer slice means the
 * slot was reused while this call was outstanding: -1, the caller counts
 * the call as late.
 */
static __always_inline int slice_count(__u64 *counter, __u32 slice)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)counter;
		__u32 have = old >> 32;
		__u64 new;

		if (have == slice)
			new = old + 1;
		else if ((__s32)(slice - have) > 0)
			new = ((__u64)slice << 32) | 1;
		else
			return -1;
		if (__sync_val_compare_and_swap(counter, old, new) == old)
			return 0;
	}
	return -1;
}

static __always_inline struct dw_slice *slice_of(struct dw_dest_detail *detail, __u64 start_ns)
{
	return &detail->slices[(start_ns >> DW_SLICE_SHIFT) % DW_SLICES];
}

enum call_outcome { OUTCOME_COMPLETED, OUTCOME_FAILED };

static __always_inline __u64 slow_call_of(struct dw_conn *conn)
{
	__u32 dep_id = conn->dep_id;
	struct dw_dep_cfg *cfg = bpf_map_lookup_elem(&dep_cfg, &dep_id);

	return cfg ? cfg->slow_call_ns : 0;
}

/* Counts the end of a call that started at start_ns in its start slice; -1 if the slot moved on. */
static __always_inline int slice_end(struct dw_dest_detail *detail, __u64 start_ns, __u32 field)
{
	struct dw_slice *sl = slice_of(detail, start_ns);
	__u32 slice = start_ns >> DW_SLICE_SHIFT;

	if ((__u32)(*(volatile __u64 *)&sl->started >> 32) != slice)
		return -1;
	if (field == 0)
		return slice_count(&sl->fast, slice);
	if (field == 1)
		return slice_count(&sl->slow, slice);
	return slice_count(&sl->failed, slice);
}

/* Releases the outstanding call; returns its start, or 0 if someone else ended it. */
static __always_inline __u64 call_release(struct dw_conn *conn)
{
	__u64 start = conn->call_start_ns;

	if (!start)
		return 0;
	if (__sync_val_compare_and_swap(&conn->call_start_ns, start, 0) != start)
		return 0;
	return start;
}

static __always_inline void call_end(struct dw_conn *conn, enum call_outcome outcome)
{
	__u64 start = call_release(conn), slow_call, dur;
	struct dw_dest_detail *detail;
	struct dw_dest_stats *st;
	__u32 field = 2;	/* failed */
	int late = 1;

	if (!start)
		return;
	dur = bpf_ktime_get_ns() - start;
	if (outcome == OUTCOME_COMPLETED) {
		slow_call = slow_call_of(conn);
		field = slow_call && dur > slow_call;
	}
	detail = detail_of(conn);
	if (detail) {
		late = slice_end(detail, start, field);
		if (outcome == OUTCOME_COMPLETED)
			hist_add(detail->call, dur);
	}
	st = stats_of(conn);
	if (!st)
		return;
	if (late)
		st->calls_late++;
	if (outcome == OUTCOME_FAILED) {
		st->calls_failed++;
		return;
	}
	st->calls_completed++;
	st->calls_slow += field;
	st->call_ns_sum += dur;
}

static __always_inline void call_complete(struct dw_conn *conn)
{
	call_end(conn, OUTCOME_COMPLETED);
}

static __always_inline void call_fail(struct dw_conn *conn)
{
	call_end(conn, OUTCOME_FAILED);
}

/* The configured dependency of a destination: the trie's longest prefix, then its first rule holding the port. */
static __always_inline __u32 dep_of(const struct dw_dest_key *dest)
{
	struct dw_match_key key = { .prefixlen = 32 + (dest->family == AF_INET ? 32 : 128) };
	struct dw_match_rules *rules;

	if (dest->family == DW_FAMILY_OVERFLOW)
		return 0;
	*(__u32 *)key.data = bpf_htonl(dest->family);
	__builtin_memcpy(key.data + 4, dest->addr, 16);
	rules = bpf_map_lookup_elem(&dep_match, &key);
	if (!rules)
		return 0;
	for (int i = 0; i < DW_MATCH_RULES; i++) {
		if (i >= (int)rules->n)
			break;
		if (dest->port >= rules->rule[i].port_lo && dest->port <= rules->rule[i].port_hi)
			return rules->rule[i].dep_id;
	}
	return 0;
}

/* Connection level: marks sk outbound, towards its current peer. */
static __always_inline struct dw_conn *conn_adopt(const struct sock *sk)
{
	struct dw_conn *conn;

	conn = conn_create(sk);
	if (!conn) {
		global_count(2);
		return 0;
	}
	dest_of(sk, &conn->dest);
	conn->dep_id = dep_of(&conn->dest);
	dest_claim(&conn->dest);
	conn->role = DW_ROLE_OUTBOUND;
	conn->call_start_ns = 0;
	conn->connect_start_ns = 0;
	conn->established = 0;
	return conn;
}

static __always_inline void dw_on_connect_start(const struct sock *sk)
{
	struct dw_conn *conn;
	struct dw_dest_stats *st;

	if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return;
	conn = conn_adopt(sk);
	if (!conn)
		return;
	conn->connect_start_ns = bpf_ktime_get_ns();
	st = stats_of(conn);
	if (st)
		st->connect_attempts++;
}

static __always_inline void dw_on_connect_end(const struct sock *sk, int established)
{
	struct dw_conn *conn = conn_of(sk);
	struct dw_dest_detail *detail;
	struct dw_dest_stats *st;
	__u64 start, dur;
	int err;

	if (!conn || !conn->connect_start_ns)
		return;
	start = conn->connect_start_ns;
	conn->connect_start_ns = 0;
	st = stats_of(conn);
	if (!st)
		return;
	if (established) {
		dur = bpf_ktime_get_ns() - start;
		st->connects_ok++;
		st->conns_opened++;
		conn->established = 1;
		st->connect_ns_sum += dur;
		detail = detail_of(conn);
		if (detail)
			hist_add(detail->connect, dur);
		return;
	}
	err = BPF_CORE_READ(sk, sk_err);
	if (err == ECONNREFUSED)
		st->connect_refused++;
	else if (err == ETIMEDOUT)
		st->connect_timedout++;
	else
		st->connect_other++;
}

static __always_inline void dw_on_send(const struct sock *sk, int ret)
{
	struct dw_dest_detail *detail;
	struct dw_conn *conn;
	struct dw_dest_stats *st;
	__u64 now;

	if (ret <= 0)
		return;
	conn = conn_of(sk);
	if (!conn || conn->role != DW_ROLE_OUTBOUND || conn->call_start_ns)
		return;
	now = bpf_ktime_get_ns();
	if (__sync_val_compare_and_swap(&conn->call_start_ns, 0, now) != 0)
		return;
	detail = detail_of(conn);
	if (detail)
		slice_count(&slice_of(detail, now)->started, now >> DW_SLICE_SHIFT);
	st = stats_of(conn);
	if (!st)
		return;
	st->calls_started++;
	st->last_call_ns = now;
	st->last_pid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(st->last_comm, sizeof(st->last_comm));
}

/* Response bytes reached the socket. */
static __always_inline void dw_on_data(const struct sock *sk)
{
	struct dw_conn *conn = conn_of(sk);

	if (conn && conn->call_start_ns)
		call_complete(conn);
}

/* Errors that say the dependency or the path failed, not the caller's own use of the socket. */
static __always_inline int is_peer_error(int err)
{
	return err == ECONNRESET || err == ETIMEDOUT || err == EPIPE || err == ECONNABORTED ||
	       err == EHOSTUNREACH || err == ENETUNREACH || err == ECONNREFUSED;
}

static __always_inline void dw_on_recv(const struct sock *sk, int ret, int flags)
{
	struct dw_conn *conn;

	if (flags & MSG_ERRQUEUE)
		return;
	conn = conn_of(sk);
	if (!conn || !conn->call_start_ns)
		return;
	if (ret > 0) {
		call_complete(conn);
		return;
	}
	/* 0 is end of file only once the peer shut down; recv(fd, buf, 0) also returns 0 */
	if (ret == 0 && (BPF_CORE_READ(sk, sk_shutdown) & RCV_SHUTDOWN))
		call_fail(conn);
	else if (ret < 0 && is_peer_error(-ret))
		call_fail(conn);
}

/*
 * The peer's FIN came while a call was outstanding. Data and FIN can come in
 * one segment, and the kernel processes the FIN before it wakes the reader:
 * bytes not yet read (beyond the FIN's own sequence number) are a response.
 */
static __always_inline void peer_closed(const struct sock *sk, struct dw_conn *conn)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	__u32 unread = BPF_CORE_READ(tp, rcv_nxt) - BPF_CORE_READ(tp, copied_seq);

	if (unread > 1)
		call_complete(conn);
	else
		call_fail(conn);
}

static __always_inline void conn_closed(struct dw_conn *conn)
{
	struct dw_dest_stats *st;

	if (!conn->established)
		return;
	conn->established = 0;
	st = stats_of(conn);
	if (st)
		st->conns_closed++;
}

static __always_inline void dw_on_state(const struct sock *sk, int oldstate, int newstate)
{
	struct dw_conn *conn;

	if (newstate == TCP_SYN_SENT) {
		dw_on_connect_start(sk);
		return;
	}
	if (oldstate == TCP_SYN_SENT) {
		dw_on_connect_end(sk, newstate == TCP_ESTABLISHED);
		return;
	}
	if (newstate != TCP_CLOSE_WAIT && newstate != TCP_CLOSE && newstate != TCP_FIN_WAIT1 &&
	    newstate != TCP_LAST_ACK)
		return;
	conn = conn_of(sk);
	if (!conn)
		return;
	if (newstate == TCP_CLOSE)
		conn_closed(conn);
	if (!conn->call_start_ns)
		return;
	if (newstate == TCP_CLOSE_WAIT)
		peer_closed(sk, conn);
	else
		call_fail(conn);
}

static __always_inline void dw_on_retransmit(const struct sock *sk)
{
	struct dw_conn *conn = conn_of(sk);
	struct dw_dest_stats *st;

	if (!conn || conn->role != DW_ROLE_OUTBOUND)
		return;
	st = stats_of(conn);
	if (st)
		st->retransmits++;
}

#endif /* DEPWATCH_CALLMODEL_BPF_H */
