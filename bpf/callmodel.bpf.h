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
 * An inbound connection is one a listener accepted; the same model mirrored:
 * a request starts at its first bytes (reaching the socket, or received) and
 * completes at the first bytes of the answer sent; its counters go to the
 * listening port's row (DW_FAMILY_INBOUND). The thread that receives a
 * request holds it (threads map) until it answers: an outbound call it
 * starts meanwhile is attributed to that row, which is how user space tells
 * who waits on whom.
 *
 * A call the caller abandons (closes the connection while it is outstanding)
 * is remembered per (process, dependency) for DW_RETRY_WINDOW_NS: the next
 * call the process starts to that dependency within it is a retry.
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

static const struct dw_dest_key overflow_key;

enum dw_global { G_DEST_MAP_FULL, G_HIST_MAP_FULL, G_CONN_STORAGE_FAIL, G_PENDING_TABLE_FULL };

static __always_inline void global_count(enum dw_global field)
{
	__u32 zero = 0;
	struct dw_global_stats *g = bpf_map_lookup_elem(&globals, &zero);

	if (!g)
		return;
	if (field == G_DEST_MAP_FULL)
		g->dest_map_full++;
	else if (field == G_HIST_MAP_FULL)
		g->hist_map_full++;
	else if (field == G_CONN_STORAGE_FAIL)
		g->conn_storage_fail++;
	else
		g->pending_table_full++;
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

/* The connection's pending-table entry, or 0 if it got none. */
static __always_inline struct dw_pending_entry *pend_of(const struct dw_conn *conn)
{
	__u32 idx = conn->pend - 1;

	if (!conn->pend)
		return 0;
	return bpf_map_lookup_elem(&pending, &idx);
}

/* A free entry of the pending table, + 1; 0 when none is left (counted). */
static __always_inline __u32 pend_take(void)
{
	__u32 idx;

	if (!bpf_map_pop_elem(&pending_free, &idx))
		return idx + 1;
	/* checked before taking one, so the counter stops near the limit (no wrap) */
	idx = *(volatile __u32 *)&dw_pend_taken;
	if (idx < dw_max_pend)
		idx = __sync_fetch_and_add(&dw_pend_taken, 1);
	if (idx >= dw_max_pend) {
		global_count(G_PENDING_TABLE_FULL);
		return 0;
	}
	return idx + 1;
}

/* Gives the entry back: the connection is gone (TCP_CLOSE). */
static __always_inline void pend_give_back(struct dw_conn *conn)
{
	struct dw_pending_entry *e = pend_of(conn);
	__u32 idx = conn->pend - 1;

	if (!e)
		return;
	conn->pend = 0;
	e->call_start_ns = 0;
	e->connect_start_ns = 0;
	bpf_map_push_elem(&pending_free, &idx, 0);
}

/*
 * At TCP_CLOSE, which every TCP socket passes before it is freed: the
 * pending entry goes back; socket storage stays with the socket, the
 * syscalls backend's entry goes.
 */
static __always_inline void conn_forget(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;
	struct dw_conn *conn = conn_of(sk);

	if (conn)
		pend_give_back(conn);
	if (dw_backend == DW_BACKEND_SYSCALLS)
		bpf_map_delete_elem(&conns_sk, &key);
}

/*
 * Time stamps without a clock read, which costs as much here as the rest
 * of a program: TCP keeps tcp_clock_cache, its ktime_get_ns() (the clock
 * of bpf_ktime_get_ns()), refreshed when it starts processing a received
 * segment and when it starts transmitting. A value that is not newer than
 * not_before (the connection's previous event) was not refreshed for this
 * event, and the clock is read instead.
 */
/*
 * A read-only view of an object as another BTF type (Linux 6.2+); the
 * verifier inlines it. Weak, and called only where the clock source is
 * the constant DW_CLOCK_TCP (the sock backend, 6.3+), so that the
 * syscalls backend's programs hold no call to it and load on older kernels.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

enum dw_clock { DW_CLOCK_READ, DW_CLOCK_TCP };

static __always_inline const struct tcp_sock *tcp_of(const struct sock *sk)
{
	return bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
}

/* When the segment whose data just reached sk began to be processed (sk_data_ready). */
static __always_inline __u64 rx_time(const struct sock *sk, __u64 not_before)
{
	__u64 t = tcp_of(sk)->tcp_clock_cache;

	return t > not_before ? t : bpf_ktime_get_ns();
}

/*
 * After a send: when the bytes just queued went out. Only with nothing
 * left queued (write_seq == snd_nxt) was the transmit that sent them in
 * this send; otherwise now. clock is a constant at every call site.
 */
static __always_inline __u64 tx_time(const struct sock *sk, __u64 not_before, enum dw_clock clock)
{
	const struct tcp_sock *tp;
	__u64 t;

	if (clock == DW_CLOCK_READ)
		return bpf_ktime_get_ns();
	tp = tcp_of(sk);
	t = tp->tcp_clock_cache;
	if (tp->write_seq != tp->snd_nxt || t <= not_before)
		return bpf_ktime_get_ns();
	return t;
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

static __always_inline struct dw_dest_stats *stats_of(struct dw_conn *conn)
{
	__u32 slot = conn->slot;

	return bpf_map_lookup_elem(&dest_stats, &slot);
}

static __always_inline struct dw_dest_detail *detail_of(struct dw_conn *conn)
{
	__u32 slot = conn->slot;
	struct dw_dest_detail *detail = bpf_map_lookup_elem(&dest_details, &slot);

	if (!detail)
		global_count(G_HIST_MAP_FULL);
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

/* The configured dependency of the connection's destination, 0 for none. */
static __always_inline __u32 dep_id_of(const struct dw_conn *conn)
{
	__u32 slot = conn->slot;
	struct dw_slot_cfg *cfg = bpf_map_lookup_elem(&slot_cfg, &slot);

	return cfg ? cfg->dep_id : 0;
}

static __always_inline __u64 slow_call_of(struct dw_conn *conn)
{
	__u32 dep_id = dep_id_of(conn);
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

/*
 * Releases the outstanding call; returns its start, or 0 if someone else
 * ended it. The pending entry is cleared only if it still shows this call:
 * a racing send may have published the next one already.
 */
static __always_inline __u64 call_release(struct dw_conn *conn)
{
	__u64 start = conn->call_start_ns;
	struct dw_pending_entry *e;

	if (!start)
		return 0;
	if (__sync_val_compare_and_swap(&conn->call_start_ns, start, 0) != start)
		return 0;
	e = pend_of(conn);
	if (e)
		__sync_val_compare_and_swap(&e->call_start_ns, start, 0);
	return start;
}

/* Ends the outstanding call at now (CLOCK_MONOTONIC). */
static __always_inline void call_end(struct dw_conn *conn, enum call_outcome outcome, __u64 now)
{
	__u64 start = call_release(conn), slow_call, dur;
	struct dw_dest_detail *detail;
	struct dw_dest_stats *st;
	__u32 field = 2;	/* failed */
	int late = 1;

	if (!start)
		return;
	/* a racing end may have read its clock before this call's start was claimed */
	dur = now > start ? now - start : 0;
	conn->last_ns = now;
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

static __always_inline void call_complete(struct dw_conn *conn, __u64 now)
{
	call_end(conn, OUTCOME_COMPLETED, now);
}

/* Failures are rare: they read the clock. */
static __always_inline void call_fail(struct dw_conn *conn)
{
	call_end(conn, OUTCOME_FAILED, bpf_ktime_get_ns());
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

/* The row of sk's listening port: requests are counted per (netns, port). */
static __always_inline void inbound_row_of(const struct sock *sk, struct dw_dest_key *row)
{
	__builtin_memset(row, 0, sizeof(*row));
	row->netns = netns_of(sk);
	row->family = DW_FAMILY_INBOUND;
	row->port = BPF_CORE_READ(sk, __sk_common.skc_num);
}

static __always_inline __u16 is_service_port(__u32 port)
{
	__u8 *svc = bpf_map_lookup_elem(&service_ports, &port);

	return svc && *svc;
}

/* What the per-call path needs of a new slot's configuration; user space rewrites it at reloads. */
static __always_inline void slot_cfg_fill(__u32 slot, const struct dw_dest_key *dest)
{
	struct dw_slot_cfg *cfg = bpf_map_lookup_elem(&slot_cfg, &slot);

	if (!cfg)
		return;
	if (dest->family == DW_FAMILY_INBOUND) {
		cfg->dep_id = 0;
		cfg->service = is_service_port(dest->port);
		return;
	}
	cfg->dep_id = dep_of(dest);
	cfg->service = 0;
}

/*
 * The destination's slot, taken on first sight. With none left (or the
 * dest_slots map full) it goes to the overflow row, dest becomes the
 * overflow key, counted. Two CPUs racing for a new destination both take a
 * number; the loser's insert fails and it uses the winner's slot, leaving
 * its own unused (all zero, user space skips it).
 */
static __always_inline __u32 dest_claim(struct dw_dest_key *dest)
{
	struct dw_dest_detail *detail;
	__u32 *have, slot;

	have = bpf_map_lookup_elem(&dest_slots, dest);
	if (have)
		return *have;
	/* checked before taking one, so the counter stops at the limit (no wrap) */
	slot = *(volatile __u32 *)&dw_slots_taken + 1;
	if (slot < dw_max_slots)
		slot = __sync_fetch_and_add(&dw_slots_taken, 1) + 1;
	if (slot >= dw_max_slots || bpf_map_update_elem(&dest_slots, dest, &slot, BPF_NOEXIST)) {
		have = bpf_map_lookup_elem(&dest_slots, dest);
		if (have)
			return *have;
		global_count(G_DEST_MAP_FULL);
		__builtin_memcpy(dest, (const void *)&overflow_key, sizeof(*dest));
		return DW_SLOT_OVERFLOW;
	}
	slot_cfg_fill(slot, dest);
	/* after the insert: a slot whose dest is set is never a race's loser */
	detail = bpf_map_lookup_elem(&dest_details, &slot);
	if (detail)
		detail->dest = *dest;
	return slot;
}

/*
 * Connection level: marks sk outbound, towards its current peer, or
 * inbound, on its listening port's row.
 */
static __always_inline struct dw_conn *conn_adopt(const struct sock *sk, __u8 role)
{
	struct dw_pending_entry *e;
	struct dw_conn *conn;

	conn = conn_create(sk);
	if (!conn) {
		global_count(G_CONN_STORAGE_FAIL);
		return 0;
	}
	if (role == DW_ROLE_INBOUND)
		inbound_row_of(sk, &conn->dest);
	else
		dest_of(sk, &conn->dest);
	conn->slot = dest_claim(&conn->dest);
	conn->role = role;
	conn->call_start_ns = 0;
	conn->connect_start_ns = 0;
	conn->established = 0;
	conn->process_noted = 0;
	conn->last_ns = bpf_ktime_get_ns();
	if (!conn->pend)
		conn->pend = pend_take();
	e = pend_of(conn);
	if (e) {
		e->call_start_ns = 0;
		e->connect_start_ns = 0;
		e->slot = conn->slot;
	}
	return conn;
}

static __always_inline void dw_on_connect_start(const struct sock *sk)
{
	struct dw_pending_entry *e;
	struct dw_conn *conn;
	struct dw_dest_stats *st;

	if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return;
	conn = conn_adopt(sk, DW_ROLE_OUTBOUND);
	if (!conn)
		return;
	conn->connect_start_ns = conn->last_ns;
	e = pend_of(conn);
	if (e)
		e->connect_start_ns = conn->connect_start_ns;
	st = stats_of(conn);
	if (!st)
		return;
	st->connect_attempts++;
	/* the connecting process is current here (not when adopted by the iterator) */
	st->last_conn_ns = conn->connect_start_ns;
	st->last_pid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(st->last_comm, sizeof(st->last_comm));
}

static __always_inline void dw_on_connect_end(const struct sock *sk, int established)
{
	struct dw_conn *conn = conn_of(sk);
	struct dw_pending_entry *e;
	struct dw_dest_detail *detail;
	struct dw_dest_stats *st;
	__u64 start, dur;
	int err;

	if (!conn || !conn->connect_start_ns)
		return;
	start = conn->connect_start_ns;
	conn->connect_start_ns = 0;
	e = pend_of(conn);
	if (e)
		e->connect_start_ns = 0;
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

/*
 * Claims the connection's call slot for a call starting now, on behalf of
 * the inbound row caller (0 for none); its counters, or 0.
 */
static __always_inline struct dw_dest_stats *call_begin(struct dw_conn *conn, __u64 now,
							 const struct dw_thread_req *caller)
{
	struct dw_pending_entry *e;
	struct dw_dest_detail *detail;
	struct dw_dest_stats *st;

	if (__sync_val_compare_and_swap(&conn->call_start_ns, 0, now) != 0)
		return 0;
	e = pend_of(conn);
	if (e) {
		e->caller_netns = caller ? caller->netns : 0;
		e->caller_port = caller ? caller->port : 0;
		e->call_start_ns = now;
	}
	detail = detail_of(conn);
	if (detail)
		slice_count(&slice_of(detail, now)->started, now >> DW_SLICE_SHIFT);
	st = stats_of(conn);
	if (!st)
		return 0;
	st->calls_started++;
	return st;
}

/* The sending thread's inbound request, if it holds one: the call waits on its behalf. */
static __always_inline const struct dw_thread_req *caller_of(void)
{
	struct dw_thread_req *req;
	__u32 tid;

	if (!*(volatile __u32 *)&dw_services_on)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	req = bpf_map_lookup_elem(&threads, &tid);
	return req && req->active ? req : 0;
}

static __always_inline void abandon_key_of(struct dw_conn *conn, __u32 tgid,
					   struct dw_abandon_key *key)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->tgid = tgid;
	key->dep_id = dep_id_of(conn);
	if (!key->dep_id)
		__builtin_memcpy(&key->dest, &conn->dest, sizeof(key->dest));
}

/* A new call from a process that abandoned one to the same dependency lately: a retry. */
static __always_inline void retry_check(struct dw_conn *conn, struct dw_dest_stats *st, __u64 now)
{
	__u32 dep_id = dep_id_of(conn);
	__u64 *newest = bpf_map_lookup_elem(&dep_abandoned, &dep_id);
	struct dw_abandon_key key;
	__u64 *at;

	if (!newest || now - *newest > DW_RETRY_WINDOW_NS)
		return;
	abandon_key_of(conn, bpf_get_current_pid_tgid() >> 32, &key);
	at = bpf_map_lookup_elem(&abandons, &key);
	if (!at || now - *at > DW_RETRY_WINDOW_NS)
		return;
	bpf_map_delete_elem(&abandons, &key);
	st->calls_retried++;
}

/* The caller closed the connection while its call was outstanding (process context). */
static __always_inline void call_abandon(struct dw_conn *conn)
{
	__u64 now = bpf_ktime_get_ns();
	struct dw_abandon_key key;
	struct dw_dest_stats *st;
	__u64 *newest;

	abandon_key_of(conn, bpf_get_current_pid_tgid() >> 32, &key);
	bpf_map_update_elem(&abandons, &key, &now, BPF_ANY);
	newest = bpf_map_lookup_elem(&dep_abandoned, &key.dep_id);
	if (newest)
		*newest = now;
	st = stats_of(conn);
	if (st)
		st->calls_abandoned++;
}

/* The thread took an inbound request of a service: it holds it until it answers. */
static __always_inline void thread_hold(const struct sock *sk, struct dw_conn *conn, __u32 tid)
{
	struct dw_thread_req *req = bpf_map_lookup_elem(&threads, &tid);
	struct dw_thread_req fresh = {
		.sk = (__u64)(unsigned long)sk,
		.netns = conn->dest.netns,
		.port = conn->dest.port,
		.active = 1,
	};

	if (req)
		*req = fresh;
	else
		bpf_map_update_elem(&threads, &tid, &fresh, BPF_ANY);
}

/*
 * The row's process, who answers on this port: noted once per connection
 * (like an outbound connection's at connect), at its first answer, or at
 * its first request where the receive is looked at anyway. Not at the
 * accept: that runs in softirq, where no process is current.
 */
static __always_inline void row_process(struct dw_conn *conn, __u32 tgid)
{
	struct dw_dest_stats *st;

	if (conn->process_noted)
		return;
	conn->process_noted = 1;
	st = stats_of(conn);
	if (!st)
		return;
	st->last_conn_ns = bpf_ktime_get_ns();
	st->last_pid = tgid;
	bpf_get_current_comm(st->last_comm, sizeof(st->last_comm));
}

/* The row is a configured [service]'s: its requests' threads are tracked. */
static __always_inline int is_service_conn(const struct dw_conn *conn)
{
	__u32 slot = conn->slot;
	struct dw_slot_cfg *cfg;

	/* no lookup at all on hosts without a [service] */
	if (!*(volatile __u32 *)&dw_services_on)
		return 0;
	cfg = bpf_map_lookup_elem(&slot_cfg, &slot);
	return cfg && cfg->service;
}

static __always_inline void thread_release(const struct sock *sk)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct dw_thread_req *req = bpf_map_lookup_elem(&threads, &tid);

	if (req && req->sk == (__u64)(unsigned long)sk)
		req->active = 0;
}

/* An answer on an inbound connection: the request it answers is complete. */
static __always_inline void inbound_answer(const struct sock *sk, struct dw_conn *conn,
					   enum dw_clock clock)
{
	if (conn->call_start_ns)
		call_complete(conn, tx_time(sk, conn->call_start_ns, clock));
	if (!conn->process_noted)
		row_process(conn, bpf_get_current_pid_tgid() >> 32);
	if (is_service_conn(conn))
		thread_release(sk);
}

/* clock: DW_CLOCK_TCP where sk is the tracepoint's own (BTF-typed) socket. */
static __always_inline void dw_on_send(const struct sock *sk, int ret, enum dw_clock clock)
{
	struct dw_conn *conn;
	struct dw_dest_stats *st;
	__u64 now;

	if (ret <= 0)
		return;
	conn = conn_of(sk);
	if (!conn)
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		inbound_answer(sk, conn, clock);
		return;
	}
	if (conn->role != DW_ROLE_OUTBOUND || conn->call_start_ns)
		return;
	now = tx_time(sk, conn->last_ns, clock);
	st = call_begin(conn, now, caller_of());
	if (!st)
		return;
	retry_check(conn, st, now);
}

/* Bytes reached the socket: an outbound call's response, or an inbound request. */
static __always_inline void dw_on_data(const struct sock *sk)
{
	struct dw_conn *conn = conn_of(sk);

	if (!conn)
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		if (!conn->call_start_ns)
			call_begin(conn, rx_time(sk, conn->last_ns), 0);
		return;
	}
	if (conn->call_start_ns)
		call_complete(conn, rx_time(sk, conn->call_start_ns));
}

/* Errors that say the dependency or the path failed, not the caller's own use of the socket. */
static __always_inline int is_peer_error(int err)
{
	return err == ECONNRESET || err == ETIMEDOUT || err == EPIPE || err == ECONNABORTED ||
	       err == EHOSTUNREACH || err == ENETUNREACH || err == ECONNREFUSED;
}

/*
 * A request received: it started when its bytes arrived (sk_data_ready), or
 * now where that is not traced (the syscalls backend).
 */
static __always_inline void inbound_recv(const struct sock *sk, struct dw_conn *conn, int ret)
{
	__u64 id;

	if (ret > 0) {
		if (!conn->call_start_ns)
			call_begin(conn, bpf_ktime_get_ns(), 0);
		id = bpf_get_current_pid_tgid();
		if (is_service_conn(conn))
			thread_hold(sk, conn, (__u32)id);
		row_process(conn, id >> 32);
		return;
	}
	/* end of file: the client may have only shut down its sending side; it is answered or reset later */
	if (ret < 0 && conn->call_start_ns && is_peer_error(-ret))
		call_fail(conn);
}

/*
 * Whether a receive can tell anything the other hooks have not, decided
 * before the socket's state is looked up (the lookup is most of the cost).
 * With sk_data_ready traced, bytes reaching the socket already started or
 * ended the call, so a successful receive only says which thread took a
 * [service]'s request; a failed one that is no peer error (EAGAIN) says
 * nothing. An end of file and peer errors go on (a reset or a timeout also
 * changes the state, an ICMP error with IP_RECVERR does not).
 */
static __always_inline int recv_matters(int ret, int flags)
{
	if (flags & MSG_ERRQUEUE)
		return 0;
	if (ret > 0)
		return !*(volatile __u32 *)&dw_data_ready_on || *(volatile __u32 *)&dw_services_on;
	return ret == 0 || is_peer_error(-ret);
}

static __always_inline void dw_on_recv(const struct sock *sk, int ret, int flags)
{
	struct dw_conn *conn;

	if (!recv_matters(ret, flags))
		return;
	conn = conn_of(sk);
	if (!conn)
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		inbound_recv(sk, conn, ret);
		return;
	}
	if (!conn->call_start_ns)
		return;
	if (ret > 0) {
		call_complete(conn, bpf_ktime_get_ns());
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
		call_complete(conn, bpf_ktime_get_ns());
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

/* A listener's child completed its handshake: an inbound connection. */
static __always_inline void dw_on_accepted(const struct sock *sk)
{
	struct dw_conn *conn = conn_adopt(sk, DW_ROLE_INBOUND);
	struct dw_dest_stats *st;

	if (!conn)
		return;
	conn->established = 1;
	st = stats_of(conn);
	if (st)
		st->conns_opened++;
}

/*
 * The caller gave up on its outstanding call: it closed (FIN), or aborted
 * (a reset it sent: state CLOSE with no error, where one the peer sent or
 * a timeout leaves sk_err set).
 */
static __always_inline int caller_abandoned(const struct sock *sk, int oldstate, int newstate)
{
	if (newstate == TCP_FIN_WAIT1)
		return 1;
	return newstate == TCP_CLOSE && oldstate == TCP_ESTABLISHED && !BPF_CORE_READ(sk, sk_err);
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
	if (oldstate == TCP_SYN_RECV && newstate == TCP_ESTABLISHED) {
		dw_on_accepted(sk);
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
	if (conn->role == DW_ROLE_INBOUND) {
		/* a client that only shut down its sending side may still wait for the answer */
		if (newstate != TCP_CLOSE_WAIT)
			call_fail(conn);
		return;
	}
	if (newstate == TCP_CLOSE_WAIT) {
		peer_closed(sk, conn);
		return;
	}
	if (caller_abandoned(sk, oldstate, newstate))
		call_abandon(conn);
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
