/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call model, in one place. Hooks (the sock backend's tracepoints in
 * depwatch.bpf.c, the syscalls backend's in syscalls.bpf.h) translate kernel
 * events into these dw_on_*() calls and nothing else.
 *
 * An outbound connection is a TCP socket this host connect()ed. A call starts
 * when a send of request bytes begins with no call outstanding, completes at
 * the first response byte (data reaching the socket, or a successful
 * receive, whichever the kernel reports first) and fails when the connection
 * is reset, closed or errors while the call is outstanding. Invariants, on
 * every path:
 * - a call starts only where its answer can still come (outbound:
 *   ESTABLISHED; inbound: ESTABLISHED or CLOSE_WAIT), and none is left
 *   outstanding once nothing can answer it: the socket reached TCP_CLOSE,
 *   or, outbound, the peer's FIN came (conn->closed, see outbound_start());
 * - a call starts before any of its request bytes leave (tcp_sendmsg_locked
 *   runs with the socket locked, before the copy; the syscalls backend takes
 *   the send's entry time), so its answer, even one processed inside the
 *   send itself (loopback), can never precede it;
 * - its answer is data the peer sent after it had the request: the segment
 *   that brings it acknowledges the request's first byte (snd_una past
 *   req_seq). Data that does not was sent before the peer had the request:
 *   another request's answer or a frame of the peer's own (HTTP/2), so the
 *   connection carries overlapping requests: it is marked multiplexed and
 *   its calls are burst timings, kept out of the slow-call rate unless the
 *   dependency says multiplexed = judge;
 * - a request is not a request until request bytes arrive: a bare FIN or
 *   RST on an idle connection starts and fails nothing;
 * - a message its sender closes the connection behind at once (TLS
 *   close_notify, then close()), or without having blocked since, is no
 *   call: dropped, not failed (DW_GOODBYE_NS, call_drop_goodbye()).
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

/* A global counter (DW_GLOBAL_COUNTERS): its index in struct dw_global_stats. */
enum dw_global {
#define DW_GLOBAL_INDEX(field, metric, help) G_##field,
	DW_GLOBAL_COUNTERS(DW_GLOBAL_INDEX)
#undef DW_GLOBAL_INDEX
	G_COUNT,
};

_Static_assert(sizeof(struct dw_global_stats) == G_COUNT * sizeof(__u64),
	       "struct dw_global_stats is DW_GLOBAL_COUNTERS's __u64s and nothing else");

/* field is a constant at every call: one load and one store at a fixed offset */
static __always_inline void global_count(enum dw_global field)
{
	__u32 zero = 0;
	__u64 *g = bpf_map_lookup_elem(&globals, &zero);

	if (g && field < G_COUNT)
		g[field]++;
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
	/*
	 * EEXIST: a reconnect, or a reused address; conn_adopt resets it. Its low
	 * 32 bits: before Linux 6.4 the map ops return int, and the verifier calls
	 * them directly, so r0 holds -17 zero-extended (4294967279, seen on 6.1).
	 */
	if (err && (int)err != -17)
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
		global_count(G_pending_table_full);
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
 * How a program may read its socket, a constant at every call site.
 * DW_SK_BTF: sk is a sock-backend tracepoint's own (BTF-typed) socket,
 * read with plain loads through bpf_rdonly_cast(). DW_SK_PROBED: probe
 * reads, for the syscalls backend's socket (an address it found) and for
 * the programs both backends load.
 */
enum dw_sk { DW_SK_PROBED, DW_SK_BTF };

/*
 * A read-only view of an object as another BTF type (Linux 6.2+); the
 * verifier inlines it. Weak, and called only under DW_SK_BTF (programs the
 * sock backend alone loads, 6.3+), so that the syscalls backend's
 * programs hold no call to it and load on older kernels.
 */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

static __always_inline const struct tcp_sock *tcp_of(const struct sock *sk)
{
	return bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
}

#define TCP_FIELD(sk, via, field) \
	((via) == DW_SK_BTF ? tcp_of(sk)->field : BPF_CORE_READ((const struct tcp_sock *)(sk), field))

static __always_inline int state_of(const struct sock *sk, enum dw_sk via)
{
	if (via == DW_SK_BTF)
		return sk->__sk_common.skc_state;
	return BPF_CORE_READ(sk, __sk_common.skc_state);
}

/* Received bytes the application has not read, not counting the peer's FIN. */
static __always_inline __u32 unread_of(const struct sock *sk, enum dw_sk via)
{
	__u32 unread = TCP_FIELD(sk, via, rcv_nxt) - TCP_FIELD(sk, via, copied_seq);
	__u8 shut = via == DW_SK_BTF ? sk->sk_shutdown : BPF_CORE_READ(sk, sk_shutdown);

	/* the FIN takes a sequence number of its own */
	if ((shut & RCV_SHUTDOWN) && unread)
		unread--;
	return unread;
}

/*
 * Whether an outbound call may start on sk now: only where its answer can
 * still come, ESTABLISHED (after the peer's FIN nothing more comes back: a
 * send in CLOSE_WAIT is a goodbye such as TLS close_notify). Inbound, see
 * request_begin().
 */
static __always_inline int can_be_answered(const struct sock *sk, enum dw_sk via)
{
	return state_of(sk, via) == TCP_ESTABLISHED;
}

/*
 * Time stamps without a clock read where they are right: TCP keeps
 * tcp_clock_cache, its ktime_get_ns() (the clock of bpf_ktime_get_ns()),
 * refreshed when it starts processing a received segment. At sk_data_ready
 * it is when the segment that brought the data began to be processed; a
 * value not newer than not_before (the connection's previous event) was not
 * refreshed for this event, and the clock is read instead. A send's start
 * has no such stamp (the cache then holds an earlier event): it reads the
 * clock.
 */
static __always_inline __u64 rx_time(const struct sock *sk, __u64 not_before)
{
	__u64 t = tcp_of(sk)->tcp_clock_cache;

	return t > not_before ? t : bpf_ktime_get_ns();
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
		global_count(G_hist_map_full);
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
 * Adds n to a (slice << 32 | count) counter. A counter still holding an
 * older slice restarts at n; one already holding a newer slice means the
 * slot was reused while this call was outstanding: -1, the caller counts
 * the call as late.
 */
static __always_inline int slice_add(__u64 *counter, __u32 slice, __u32 n)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)counter;
		__u32 have = old >> 32;
		__u64 new;

		if (have == slice)
			new = old + n;
		else if ((__s32)(slice - have) > 0)
			new = ((__u64)slice << 32) | n;
		else
			return -1;
		if (__sync_val_compare_and_swap(counter, old, new) == old)
			return 0;
	}
	return -1;
}

static __always_inline int slice_count(__u64 *counter, __u32 slice)
{
	return slice_add(counter, slice, 1);
}

static __always_inline struct dw_slice *slice_of(struct dw_dest_detail *detail, __u64 start_ns)
{
	return &detail->slices[(start_ns >> DW_SLICE_SHIFT) % DW_SLICES];
}

enum call_outcome { OUTCOME_COMPLETED, OUTCOME_FAILED, OUTCOME_DROPPED };

/* The configured dependency of the connection's destination, 0 for none. */
static __always_inline __u32 dep_id_of(const struct dw_conn *conn)
{
	__u32 slot = conn->slot;
	struct dw_slot_cfg *cfg = bpf_map_lookup_elem(&slot_cfg, &slot);

	return cfg ? cfg->dep_id : 0;
}

static __always_inline struct dw_dep_cfg *dep_cfg_of(struct dw_conn *conn)
{
	__u32 dep_id = dep_id_of(conn);

	return bpf_map_lookup_elem(&dep_cfg, &dep_id);
}

/*
 * Counts the end of a call that started at start_ns in its shared start
 * slice; -1 if the slot moved on. The slot may still show an older slice:
 * the call's start may be in a CPU's row (struct dw_cpu_row), not folded yet.
 */
static __always_inline int slice_end(struct dw_dest_detail *detail, __u64 start_ns, __u32 field)
{
	struct dw_slice *sl = slice_of(detail, start_ns);
	__u32 slice = start_ns >> DW_SLICE_SHIFT;
	__u32 have = *(volatile __u64 *)&sl->started >> 32;

	if ((__s32)(slice - have) < 0)
		return -1;
	if (field == 0)
		return slice_count(&sl->fast, slice);
	if (field == 1)
		return slice_count(&sl->slow, slice);
	return slice_count(&sl->failed, slice);
}

/*
 * ---- Per-CPU rows of the per-call counters (struct dw_cpu_row, issue 17) ----
 * The reasoning (who may interleave with whom on one CPU, and what a reader
 * on another CPU may see) is in bpf/depwatch.h, above struct dw_cpu_row.
 */

/*
 * Claims this CPU's row of the connection's slot; 0 if there is none, or it
 * is busy: then this program interrupted the row's holder on this CPU, which
 * cannot go on before this program returns, so waiting would never end. The
 * caller counts in the shared row instead.
 */
static __always_inline bool seq_claim(__u32 *seqp)
{
	__u32 seq = *(volatile __u32 *)seqp;

	if (seq & DW_ROW_BUSY)
		return false;
	/* fails only if a program that interrupted us between the load and here folded the row */
	return __sync_val_compare_and_swap(seqp, seq, seq | DW_ROW_BUSY) == seq;
}

static __always_inline struct dw_cpu_row *row_claim(const struct dw_conn *conn)
{
	__u32 idx = conn->slot * dw_ncpus + bpf_get_smp_processor_id();
	struct dw_cpu_row *row = bpf_map_lookup_elem(&cpu_rows, &idx);

	return row && seq_claim(&row->seq) ? row : 0;
}

/* Nothing else writes seq while the row is busy: a plain store releases it. */
static __always_inline void seq_release(__u32 *seqp)
{
	__u32 seq = *(volatile __u32 *)seqp;

	barrier();
	*(volatile __u32 *)seqp = seq & ~DW_ROW_BUSY;
}

/* Readers retry while DW_ROW_FOLDING is set: what the row holds is moving to the shared row. */
static __always_inline void seq_fold_begin(__u32 *seqp)
{
	__sync_fetch_and_or(seqp, DW_ROW_FOLDING);
}

/* Clears DW_ROW_FOLDING and counts one more fold (the readers' seqcount); the row stays busy. */
static __always_inline void seq_fold_end(__u32 *seqp)
{
	__sync_fetch_and_add(seqp, DW_ROW_GEN - DW_ROW_FOLDING);
}

/*
 * slice_add for a fold. Every CPU that called the destination folds the
 * same slice into the same counters at the same moment (when the clock
 * enters the next slice), so a compare-and-swap loop would fail there under
 * contention: once the counter holds the slice (after the first fold), the
 * others add to it with one atomic add instead, which cannot fail. If the
 * counter moved to a newer slice between the load and the add (its ring
 * position reused: this row sat still for 8.6 s, and another CPU took the
 * position at that very moment), the add is taken back and the counts are
 * dropped, as a reader would have dropped them anyway.
 */
static __always_inline void fold_add(__u64 *counter, __u32 slice, __u32 n)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)counter;
		__u32 have = old >> 32;

		if (have == slice) {
			old = __sync_fetch_and_add(counter, n);
			if ((__u32)(old >> 32) == slice)
				return;
			__sync_fetch_and_add(counter, -(__u64)n);
			return;
		}
		if ((__s32)(slice - have) < 0)
			return;
		if (__sync_val_compare_and_swap(counter, old, ((__u64)slice << 32) | n) == old)
			return;
	}
}

/*
 * Folds the claimed row's slice counts into the shared slice they belong to
 * and moves the row to slice. Always under the seqcount, even with nothing
 * to fold: a reader must never see the new slice number with the old
 * counts, or the reverse. A shared counter already on a newer slice (the
 * ring position was reused: the row sat still for 8.6 s) takes nothing: a
 * reader would ignore those counts anyway.
 */
static __always_inline void row_move(struct dw_cpu_row *row, struct dw_dest_detail *detail,
				     __u32 slice)
{
	struct dw_slice *sl = &detail->slices[row->slice % DW_SLICES];
	__u32 was = row->slice;

	seq_fold_begin(&row->seq);
	if (row->started)
		fold_add(&sl->started, was, row->started);
	if (row->fast)
		fold_add(&sl->fast, was, row->fast);
	if (row->slow)
		fold_add(&sl->slow, was, row->slow);
	if (row->failed)
		fold_add(&sl->failed, was, row->failed);
	row->started = row->fast = row->slow = row->failed = 0;
	row->slice = slice;
	seq_fold_end(&row->seq);
}

/*
 * Brings the claimed row to slice if it is behind; false if the row is
 * already on a newer slice (a call that started before the row's slice
 * counts in the shared one).
 */
static __always_inline bool row_at(struct dw_cpu_row *row, struct dw_dest_detail *detail,
				   __u32 slice)
{
	if (row->slice == slice)
		return true;
	if ((__s32)(slice - row->slice) < 0)
		return false;
	row_move(row, detail, slice);
	return true;
}

/* A call's start at now in this CPU's row; false: count it in the shared row. */
static __always_inline bool row_start(struct dw_conn *conn, struct dw_dest_detail *detail,
				      __u64 now)
{
	struct dw_cpu_row *row = row_claim(conn);
	bool counted;

	if (!row)
		return false;
	counted = row_at(row, detail, now >> DW_SLICE_SHIFT);
	if (counted)
		row->started++;
	seq_release(&row->seq);
	return counted;
}

/* An end in its start slice, in the claimed row (field: 0 fast, 1 slow, 2 failed); false: not. */
static __always_inline bool row_slice_end(struct dw_cpu_row *row, struct dw_dest_detail *detail,
					  __u32 slice, __u32 field)
{
	if (!row_at(row, detail, slice))
		return false;
	if (field == 0)
		row->fast++;
	else if (field == 1)
		row->slow++;
	else
		row->failed++;
	return true;
}

/*
 * Counts bucket b (< nbuckets, a constant once inlined) in runs, the
 * DW_ROW_RUNS runs of a claimed row whose seq is seqp. A run holding
 * another bucket, or full, is flushed to the shared histogram hist first,
 * under the seqcount (a reader sees its count in one place only).
 */
static __always_inline void runs_add(__u32 *seqp, __u32 *runs, __u32 *hist, __u32 nbuckets, __u32 b)
{
	__u32 i, run, want, old;

	barrier_var(b);
	if (b >= nbuckets)
		return;
	want = (b + 1) << DW_ROW_RUN_SHIFT;
	i = b % DW_ROW_RUNS;
	barrier_var(i);
	if (i >= DW_ROW_RUNS)
		return;
	run = runs[i];
	if (!run) {
		runs[i] = want | 1;
		return;
	}
	if ((run & ~DW_ROW_RUN_MAX) == want && (run & DW_ROW_RUN_MAX) < DW_ROW_RUN_MAX) {
		runs[i] = run + 1;
		return;
	}
	old = (run >> DW_ROW_RUN_SHIFT) - 1;
	barrier_var(old);
	seq_fold_begin(seqp);
	if (old < nbuckets)
		__sync_fetch_and_add(&hist[old], run & DW_ROW_RUN_MAX);
	runs[i] = want | 1;
	seq_fold_end(seqp);
}

/* A completed call's duration in the claimed row's run of its bucket (runs_add). */
static __always_inline void row_hist_add(struct dw_cpu_row *row, struct dw_dest_detail *detail,
					 __u64 ns)
{
	runs_add(&row->seq, row->run, detail->call, DW_HIST_BUCKETS, dw_hist_bucket(ns));
}

/*
 * A call's end in the per-call counters: its start slice (field: 0 fast,
 * 1 slow, 2 failed, DW_NO_SLICE: none) and, if hist, its duration in the
 * histogram; in this CPU's row where it can, in the shared row otherwise.
 * -1 if its start slice is gone: it started DW_SLICES slices (8.6 s) or more
 * before now, or the shared slot already holds a newer slice (late).
 */
#define DW_NO_SLICE 3
static __always_inline int end_count(struct dw_conn *conn, struct dw_dest_detail *detail,
				     __u64 start, __u64 now, __u32 field, bool hist, __u64 dur)
{
	__u32 slice = start >> DW_SLICE_SHIFT;
	struct dw_cpu_row *row;
	int late = 0;

	/* its ring position may be a newer slice's in some CPU's row, which this CPU cannot see */
	if (field != DW_NO_SLICE && (__s32)((__u32)(now >> DW_SLICE_SHIFT) - slice) >= DW_SLICES) {
		late = -1;
		field = DW_NO_SLICE;
	}
	if (field == DW_NO_SLICE && !hist)
		return late;
	row = row_claim(conn);
	if (field != DW_NO_SLICE && !(row && row_slice_end(row, detail, slice, field)))
		late = slice_end(detail, start, field);
	if (hist) {
		if (row)
			row_hist_add(row, detail, dur);
		else
			hist_add(detail->call, dur);
	}
	if (row)
		seq_release(&row->seq);
	return late;
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

/*
 * A call's end in this CPU's row of its caller row (struct
 * dw_caller_cpu_row); false if that row is busy (see row_claim): the
 * caller counts in the shared caller row then.
 */
static __always_inline bool caller_end_mine(__u32 idx, struct dw_caller_stats *row, int failed,
					    __u32 slow, __u64 dur)
{
	__u32 at = idx * dw_ncpus + bpf_get_smp_processor_id();
	struct dw_caller_cpu_row *mine = bpf_map_lookup_elem(&caller_cpu_rows, &at);

	if (!mine || !seq_claim(&mine->seq))
		return false;
	if (failed) {
		mine->failed++;
	} else {
		mine->slow += slow;
		runs_add(&mine->seq, mine->run, row->call, DW_CALLER_BUCKETS,
			 dw_caller_bucket(dur));
	}
	seq_release(&mine->seq);
	return true;
}

/* A call's end in its caller's row: the one array update per call that callers cost. */
static __always_inline void caller_end(const struct dw_conn *conn, int failed, __u32 slow, __u64 dur)
{
	__u32 idx = conn->caller, b;
	struct dw_caller_stats *row;

	if (!idx)
		return;
	row = bpf_map_lookup_elem(&caller_stats, &idx);
	if (!row)
		return;
	if (caller_end_mine(idx, row, failed, slow, dur))
		return;
	if (failed) {
		__sync_fetch_and_add(&row->calls_failed, 1);
		return;
	}
	if (slow)
		__sync_fetch_and_add(&row->calls_slow, 1);
	/* the completed calls are the histogram's sum */
	b = dw_caller_bucket(dur);
	barrier_var(b);
	if (b >= DW_CALLER_BUCKETS)
		return;
	barrier_var(b);
	__sync_fetch_and_add(&row->call[b], 1);
}

/*
 * Whether a completed call of conn counts in its start slice, which the
 * slow-call rate is judged from: not a burst timing on a multiplexed
 * connection, unless its dependency says multiplexed = judge.
 */
static __always_inline int judged(const struct dw_conn *conn, const struct dw_dep_cfg *cfg)
{
	return !conn->multiplexed || (cfg && cfg->multiplexed);
}

/* Ends the outstanding call at now (CLOCK_MONOTONIC). */
static __always_inline void call_end(struct dw_conn *conn, enum call_outcome outcome, __u64 now)
{
	__u64 start = call_release(conn), dur;
	struct dw_dest_detail *detail;
	struct dw_dep_cfg *cfg = 0;
	struct dw_dest_stats *st;
	__u32 field = 2;	/* failed */
	int late = 0, sliced;

	if (!start)
		return;
	/* a racing end may have read its clock before this call's start was claimed */
	dur = now > start ? now - start : 0;
	conn->last_ns = now;
	if (outcome == OUTCOME_COMPLETED) {
		cfg = dep_cfg_of(conn);
		field = cfg && cfg->slow_call_ns && dur > cfg->slow_call_ns;
	}
	sliced = outcome == OUTCOME_FAILED || judged(conn, cfg);
	detail = detail_of(conn);
	if (detail && outcome != OUTCOME_DROPPED)
		late = end_count(conn, detail, start, now, sliced ? field : DW_NO_SLICE,
				  outcome == OUTCOME_COMPLETED, dur);
	if (outcome != OUTCOME_DROPPED)
		caller_end(conn, outcome == OUTCOME_FAILED, field == 1, dur);
	st = stats_of(conn);
	if (!st)
		return;
	if (late)
		st->calls_late++;
	if (outcome == OUTCOME_DROPPED) {
		st->calls_dropped++;
		return;
	}
	if (outcome == OUTCOME_FAILED) {
		st->calls_failed++;
		return;
	}
	st->calls_completed++;
	st->calls_burst += conn->multiplexed;
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

/*
 * The sending thread, noted before a call is claimed (process context;
 * 0 where there is none): a thread that waits for an answer blocks (in
 * recv(), poll(), epoll_wait() or a futex), which counts a voluntary
 * context switch; being preempted does not.
 */
static __always_inline void note_sender(struct dw_conn *conn, int in_task)
{
	struct task_struct *task = bpf_get_current_task_btf();

	conn->sender_tid = in_task ? task->pid : 0;
	conn->sender_nvcsw = (__u32)task->nvcsw;
}

/* Whether the current thread sent the outstanding call and has not blocked since. */
static __always_inline int sender_never_waited(const struct dw_conn *conn)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return conn->sender_tid && (__u32)task->pid == conn->sender_tid &&
	       (__u32)task->nvcsw == conn->sender_nvcsw;
}

/*
 * The caller closed the connection under its outstanding call: within
 * DW_GOODBYE_NS of its start, or from the thread that sent it without
 * having blocked since (a goodbye whose close was preempted on a loaded
 * host), it was a goodbye nobody waited for, dropped. Returns 1 if it was.
 */
static __always_inline int call_drop_goodbye(struct dw_conn *conn, __u64 now)
{
	__u64 start = conn->call_start_ns;

	if (!start)
		return 0;
	if (now - start > DW_GOODBYE_NS && !sender_never_waited(conn))
		return 0;
	call_end(conn, OUTCOME_DROPPED, now);
	return 1;
}

/*
 * Whether data reaching an outbound connection answers its outstanding
 * call: the peer had the request's first byte when it sent it, so the
 * segment acknowledged it (snd_una is updated before the data is queued).
 */
static __always_inline int answers_call(const struct sock *sk, const struct dw_conn *conn, enum dw_sk via)
{
	return (__s32)(TCP_FIELD(sk, via, snd_una) - conn->req_seq) > 0;
}

/*
 * Data came that the peer sent before it had the outstanding request:
 * another request's answer still streaming (pipelining, HTTP/2), or a
 * frame of the peer's own. Once is no pattern (two goodbyes that cross,
 * TLS close_notify both ways); the second time the connection is counted
 * multiplexed, once.
 */
static __always_inline void conn_overlap(struct dw_conn *conn)
{
	struct dw_pending_entry *e;
	struct dw_dest_stats *st;

	if (conn->multiplexed || ++conn->overlaps < 2)
		return;
	conn->multiplexed = 1;
	e = pend_of(conn);
	if (e)
		e->flags |= DW_PEND_MULTIPLEXED;
	st = stats_of(conn);
	if (st)
		st->conns_multiplexed++;
}

/*
 * Data reached an outbound connection with a call outstanding: its answer,
 * or an overlap. On a connection known to be multiplexed any data ends the
 * burst: a send there may be a control frame that nothing answers (an
 * HTTP/2 WINDOW_UPDATE), and it must not stay outstanding for that.
 */
static __always_inline int call_answered(const struct sock *sk, struct dw_conn *conn, enum dw_sk via)
{
	if (conn->multiplexed || answers_call(sk, conn, via))
		return 1;
	conn_overlap(conn);
	return 0;
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
		global_count(G_dest_map_full);
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
 * The cgroup v2 id of the socket's owner: the cgroup of the task that
 * created it (an accepted socket is a copy of its listener's). 0 where the
 * kernel keeps none (no CONFIG_SOCK_CGROUP_DATA): an unknown caller.
 */
static __always_inline __u64 sk_cgroup_id(const struct sock *sk)
{
	if (!bpf_core_field_exists(sk->sk_cgrp_data.cgroup))
		return 0;
	return BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
}

/*
 * The caller row of (slot, cgroup_id), taken on first sight like a
 * destination's slot (see dest_claim); 0 with none left, counted.
 */
static __always_inline __u32 caller_claim(__u32 slot, __u64 cgroup_id)
{
	struct dw_caller_key key = { .cgroup_id = cgroup_id, .slot = slot };
	struct dw_caller_stats *row;
	__u32 *have, idx;

	have = bpf_map_lookup_elem(&caller_slots, &key);
	if (have)
		return *have;
	idx = *(volatile __u32 *)&dw_callers_taken + 1;
	if (idx < DW_CALLER_ROWS_DEFAULT)
		idx = __sync_fetch_and_add(&dw_callers_taken, 1) + 1;
	if (idx >= DW_CALLER_ROWS_DEFAULT ||
	    bpf_map_update_elem(&caller_slots, &key, &idx, BPF_NOEXIST)) {
		have = bpf_map_lookup_elem(&caller_slots, &key);
		if (have)
			return *have;
		global_count(G_caller_map_full);
		return 0;
	}
	row = bpf_map_lookup_elem(&caller_stats, &idx);
	if (row) {
		row->cgroup_id = cgroup_id;
		row->slot = slot;
		/* after the insert and the key: a taken row is never a race's loser */
		__sync_fetch_and_add(&row->taken, 1);
	}
	return idx;
}

/*
 * Connection level: marks sk outbound, towards its current peer, or
 * inbound, on its listening port's row, called by cgroup_id.
 */
static __always_inline struct dw_conn *conn_adopt_as(const struct sock *sk, __u8 role, __u64 cgroup_id)
{
	struct dw_pending_entry *e;
	struct dw_conn *conn;

	conn = conn_create(sk);
	if (!conn) {
		global_count(G_conn_storage_fail);
		return 0;
	}
	if (role == DW_ROLE_INBOUND)
		inbound_row_of(sk, &conn->dest);
	else
		dest_of(sk, &conn->dest);
	conn->slot = dest_claim(&conn->dest);
	conn->caller = caller_claim(conn->slot, cgroup_id);
	conn->role = role;
	conn->call_start_ns = 0;
	conn->connect_start_ns = 0;
	conn->req_seq = 0;
	conn->closed = 0;
	conn->established = 0;
	conn->process_noted = 0;
	conn->multiplexed = 0;
	conn->overlaps = 0;
	conn->goodbye = 0;
	conn->last_ns = bpf_ktime_get_ns();
	if (!conn->pend)
		conn->pend = pend_take();
	e = pend_of(conn);
	if (e) {
		e->call_start_ns = 0;
		e->connect_start_ns = 0;
		e->slot = conn->slot;
		e->caller = conn->caller;
		e->flags = 0;
	}
	return conn;
}

/* The same, the caller being the socket's owner: accepted and adopted connections. */
static __always_inline struct dw_conn *conn_adopt(const struct sock *sk, __u8 role)
{
	return conn_adopt_as(sk, role, sk_cgroup_id(sk));
}

static __always_inline void dw_on_connect_start(const struct sock *sk)
{
	struct dw_pending_entry *e;
	struct dw_conn *conn;
	struct dw_dest_stats *st;

	if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return;
	/* connect() runs in the calling task: its cgroup is the caller */
	conn = conn_adopt_as(sk, DW_ROLE_OUTBOUND, bpf_get_current_cgroup_id());
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
 * Claims the connection's call slot for a call starting now whose first
 * byte is req_seq, on behalf of the inbound row caller (0 for none); its
 * counters, or 0.
 */
static __always_inline struct dw_dest_stats *call_begin(struct dw_conn *conn, __u64 now, __u32 req_seq,
							 const struct dw_thread_req *caller)
{
	struct dw_pending_entry *e;
	struct dw_dest_detail *detail;
	struct dw_dest_stats *st;

	/* before the claim: whoever sees the call sees its sequence number */
	conn->req_seq = req_seq;
	if (__sync_val_compare_and_swap(&conn->call_start_ns, 0, now) != 0)
		return 0;
	e = pend_of(conn);
	if (e) {
		e->caller_netns = caller ? caller->netns : 0;
		e->caller_port = caller ? caller->port : 0;
		e->call_start_ns = now;
	}
	detail = detail_of(conn);
	if (detail && !row_start(conn, detail, now))
		slice_count(&slice_of(detail, now)->started, now >> DW_SLICE_SHIFT);
	st = stats_of(conn);
	if (!st)
		return 0;
	st->calls_started++;
	return st;
}

/*
 * An inbound request starts now, where the connection can still answer
 * it. One that comes with (or after) its client's FIN is marked a goodbye:
 * dropped, not failed, if it is never answered.
 */
static __always_inline void request_begin(const struct sock *sk, struct dw_conn *conn, __u64 now,
					  enum dw_sk via)
{
	int state = state_of(sk, via);

	if (state != TCP_ESTABLISHED && state != TCP_CLOSE_WAIT)
		return;
	if (call_begin(conn, now, 0, 0) && state == TCP_CLOSE_WAIT)
		conn->goodbye = 1;
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

/*
 * An answer on an inbound connection, begun at began_ns (0: now): the
 * request it answers is complete.
 */
static __always_inline void inbound_answer(const struct sock *sk, struct dw_conn *conn, __u64 began_ns)
{
	if (conn->call_start_ns)
		call_complete(conn, began_ns ? began_ns : bpf_ktime_get_ns());
	if (!conn->process_noted)
		row_process(conn, bpf_get_current_pid_tgid() >> 32);
	if (is_service_conn(conn))
		thread_release(sk);
}

/*
 * Whether answer bytes came before the peer's FIN: bytes not read yet, or,
 * where a call completes at the receive's return (the syscalls backend),
 * any bytes received since the call started: a receive may have taken them
 * and not returned yet when the FIN is processed on another CPU.
 */
static __always_inline int answer_came(const struct sock *sk, const struct dw_conn *conn)
{
	__u32 fin = (BPF_CORE_READ(sk, sk_shutdown) & RCV_SHUTDOWN) ? 1 : 0;

	if (dw_backend == DW_BACKEND_SYSCALLS)
		return BPF_CORE_READ((const struct tcp_sock *)sk, rcv_nxt) - fin != conn->rcv_seq;
	return unread_of(sk, DW_SK_PROBED) > 0;
}

/*
 * An outbound call starts at began_ns, its first byte at req_seq, with
 * rcv_seq received so far.
 */
static __always_inline void outbound_start(const struct sock *sk, struct dw_conn *conn, __u64 began_ns,
					   __u32 req_seq, __u32 rcv_seq)
{
	struct dw_dest_stats *st;

	conn->rcv_seq = rcv_seq;
	note_sender(conn, 1);
	st = call_begin(conn, began_ns, req_seq, caller_of());
	if (!st)
		return;
	retry_check(conn, st, began_ns);
	/*
	 * Hooks outside the socket lock (the syscalls backend) can race the
	 * peer's FIN or a close on another CPU. Both sides write (the claim,
	 * conn->closed) with a full barrier before they read the other's: one
	 * of them sees the call and ends it. Seen here, the peer closed while
	 * the send was under way, before the call could be claimed: an answer
	 * that came with it completes the call (see answer_came()); otherwise
	 * nothing can answer it any more (a FIN that crossed the request, the
	 * reset a closed peer answers a TLS close_notify with): dropped, as in
	 * peer_closed(), since the peer's close cannot be told to have
	 * followed the request.
	 */
	if (!*(volatile __u32 *)&conn->closed)
		return;
	if (answer_came(sk, conn))
		call_complete(conn, bpf_ktime_get_ns());
	else
		call_end(conn, OUTCOME_DROPPED, bpf_ktime_get_ns());
}

/*
 * A connect that carried its request in the SYN (TCP Fast Open): no send
 * of it began after the connect, so its call starts with the connect
 * (conn->last_ns). Any data after the SYN-ACK acknowledges snd_una - 1.
 */
static __always_inline void syn_data_call(const struct sock *sk)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	struct dw_conn *conn;

	if (!BPF_CORE_READ_BITFIELD_PROBED(tp, syn_data))
		return;
	conn = conn_of(sk);
	/* the SYN-ACK may be processed in softirq: no current thread to attribute it to */
	if (conn && conn->role == DW_ROLE_OUTBOUND && !conn->call_start_ns) {
		conn->rcv_seq = BPF_CORE_READ(tp, rcv_nxt);
		note_sender(conn, 0);
		call_begin(conn, conn->last_ns, BPF_CORE_READ(tp, snd_una) - 1, 0);
	}
}

/*
 * A send begins on sk (tcp_sendmsg_locked): the socket is locked and none
 * of its bytes are queued yet, so no answer can be processed before this.
 */
static __always_inline void dw_on_send_begin(const struct sock *sk)
{
	struct dw_conn *conn = conn_of(sk);

	if (!conn)
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		inbound_answer(sk, conn, 0);
		return;
	}
	if (conn->role != DW_ROLE_OUTBOUND || conn->call_start_ns ||
	    !can_be_answered(sk, DW_SK_BTF))
		return;
	/* rcv_seq serves only where a call completes at the receive (see answer_came()) */
	outbound_start(sk, conn, bpf_ktime_get_ns(), tcp_of(sk)->write_seq, 0);
}

/*
 * A send returned ret. The syscalls backend's exit gives began_ns, when it
 * began, 0 where its socket could not be answered then (the socket's state
 * at the exit may already show the answer's FIN), and rcv_seq, what the
 * socket had received then (the answer may have come since). The sock
 * backend's sock_send_length, where the kernel lacks tcp_sendmsg_locked,
 * gives 0: the call starts now, if the socket can still be answered (an
 * answer processed inside the send itself then comes first: see the
 * kernel table in doc/callmodel.md).
 */
static __always_inline void dw_on_send(const struct sock *sk, int ret, __u64 began_ns, __u32 rcv_seq,
				       enum dw_sk via)
{
	struct dw_conn *conn;

	if (ret <= 0)
		return;
	conn = conn_of(sk);
	if (!conn)
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		inbound_answer(sk, conn, began_ns);
		return;
	}
	if (conn->role != DW_ROLE_OUTBOUND || conn->call_start_ns)
		return;
	if (via == DW_SK_PROBED ? !began_ns : !can_be_answered(sk, via))
		return;
	if (!began_ns) {
		began_ns = bpf_ktime_get_ns();
		rcv_seq = TCP_FIELD(sk, via, rcv_nxt);
	}
	outbound_start(sk, conn, began_ns, TCP_FIELD(sk, via, write_seq) - (__u32)ret, rcv_seq);
}

/* Bytes reached the socket: an outbound call's response, or an inbound request. */
static __always_inline void dw_on_data(const struct sock *sk)
{
	struct dw_conn *conn = conn_of(sk);

	if (!conn)
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		/* a bare FIN wakes the reader too: no request without request bytes */
		if (!conn->call_start_ns && unread_of(sk, DW_SK_BTF))
			request_begin(sk, conn, rx_time(sk, conn->last_ns), DW_SK_BTF);
		return;
	}
	if (conn->call_start_ns && call_answered(sk, conn, DW_SK_BTF))
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
static __always_inline void inbound_recv(const struct sock *sk, struct dw_conn *conn, int ret,
					 enum dw_sk via)
{
	__u64 id;

	if (ret > 0) {
		if (!conn->call_start_ns)
			request_begin(sk, conn, bpf_ktime_get_ns(), via);
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

static __always_inline void dw_on_recv(const struct sock *sk, int ret, int flags, enum dw_sk via)
{
	struct dw_conn *conn;

	if (!recv_matters(ret, flags))
		return;
	conn = conn_of(sk);
	if (!conn)
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		inbound_recv(sk, conn, ret, via);
		return;
	}
	if (!conn->call_start_ns)
		return;
	if (ret > 0) {
		/* with sk_data_ready traced, data that did not end the call there does not here */
		if (!*(volatile __u32 *)&dw_data_ready_on && call_answered(sk, conn, via))
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
 * The peer closed (FIN, or a reset: reset) while a call was outstanding.
 * Data and FIN can come in one segment, and the kernel processes the FIN
 * before it wakes the reader: bytes not yet read (beyond the FIN's own
 * sequence number) that answer the call are its response. A close the peer
 * sent before it had the request (it does not acknowledge its first byte)
 * is no failure of the request: the peer was closing already (two TLS
 * goodbyes that cross, the reset a closed peer answers a goodbye with, a
 * keep-alive connection the server closed as the request went out, which
 * clients retry): dropped. So is a close under a multiplexed connection's
 * burst (maybe a control frame, see call_answered()). A FIN that had the
 * request and brings no answer is a failure, even one that answers a
 * goodbye (HTTP/2's GOAWAY): on the wire the two are the same.
 */
static __always_inline void peer_closed(const struct sock *sk, struct dw_conn *conn, int reset)
{
	__u64 now = bpf_ktime_get_ns();
	int had_request = answers_call(sk, conn, DW_SK_PROBED);

	if (!reset && had_request && answer_came(sk, conn))
		call_complete(conn, now);
	else if (conn->multiplexed || !had_request)
		call_end(conn, OUTCOME_DROPPED, now);
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
 * The caller closed the connection under its outstanding call: close()
 * (FIN, with the receive side shut too: shutdown(SHUT_WR) alone still waits
 * for the answer, and the call goes on), or an abort (a reset it sent:
 * state CLOSE with no error, where one the peer sent or a timeout leaves
 * sk_err set).
 */
static __always_inline int caller_closed(const struct sock *sk, int oldstate, int newstate)
{
	if (newstate == TCP_FIN_WAIT1)
		return BPF_CORE_READ(sk, sk_shutdown) & RCV_SHUTDOWN;
	return newstate == TCP_CLOSE && oldstate == TCP_ESTABLISHED && !BPF_CORE_READ(sk, sk_err);
}

/*
 * The caller closed under its outstanding call: an answer that had arrived
 * unread completes it (the syscalls backend completes at the receive), a
 * goodbye is dropped, anything else it gave up on.
 */
static __always_inline void outbound_caller_closed(const struct sock *sk, struct dw_conn *conn)
{
	__u64 now = bpf_ktime_get_ns();

	if (unread_of(sk, DW_SK_PROBED) && answers_call(sk, conn, DW_SK_PROBED)) {
		call_complete(conn, now);
		return;
	}
	if (conn->multiplexed) {
		call_end(conn, OUTCOME_DROPPED, now);	/* maybe a control frame: see call_answered() */
		return;
	}
	if (call_drop_goodbye(conn, now))
		return;
	call_abandon(conn);
	call_fail(conn);
}

/*
 * An inbound connection's state moved with a request outstanding. The
 * client's FIN or reset right behind its request marks a goodbye (TLS
 * close_notify then close()), and so does the server's own close within
 * DW_GOODBYE_NS of the request with its bytes unread (two goodbyes that
 * cross): if it is never answered it is dropped, not failed. A client that
 * only shut down its sending side still waits for the answer.
 */
static __always_inline void inbound_state(const struct sock *sk, struct dw_conn *conn, int oldstate,
					  int newstate)
{
	int client_left = newstate == TCP_CLOSE_WAIT ||
			  (newstate == TCP_CLOSE && oldstate == TCP_ESTABLISHED && BPF_CORE_READ(sk, sk_err));
	__u64 now = bpf_ktime_get_ns();

	if (client_left && now - conn->call_start_ns <= DW_GOODBYE_NS)
		conn->goodbye = 1;
	/* the server closing as it came, without having read it: it never saw the request */
	if (!client_left && now - conn->call_start_ns <= DW_GOODBYE_NS && unread_of(sk, DW_SK_PROBED))
		conn->goodbye = 1;
	if (newstate == TCP_CLOSE_WAIT)
		return;
	if (conn->goodbye)
		call_end(conn, OUTCOME_DROPPED, now);
	else
		call_fail(conn);
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
		if (newstate == TCP_ESTABLISHED)
			syn_data_call(sk);
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
	/* before looking for a call: see outbound_start() */
	if (newstate == TCP_CLOSE || (newstate == TCP_CLOSE_WAIT && conn->role == DW_ROLE_OUTBOUND))
		__sync_lock_test_and_set(&conn->closed, 1);
	if (newstate == TCP_CLOSE)
		conn_closed(conn);
	if (!conn->call_start_ns)
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		inbound_state(sk, conn, oldstate, newstate);
		return;
	}
	if (newstate == TCP_CLOSE_WAIT) {
		peer_closed(sk, conn, 0);
		return;
	}
	if (newstate == TCP_CLOSE && BPF_CORE_READ(sk, sk_err) == ECONNRESET) {
		peer_closed(sk, conn, 1);
		return;
	}
	if (caller_closed(sk, oldstate, newstate)) {
		outbound_caller_closed(sk, conn);
		return;
	}
	/* shutdown(SHUT_WR): the answer may still come */
	if (newstate != TCP_FIN_WAIT1)
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
