/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Connection state: a tracked connection's struct dw_conn (socket storage,
 * or the syscalls backend's hash keyed by the socket's address), its entry
 * in the pending table (taken at adoption, given back at TCP_CLOSE), its
 * destination's counters and detail row, and the global error counters.
 * Who a connection is (its role, destination, slot, caller) is decided in
 * slots.bpf.h; what its calls do, in call.bpf.h and callmodel.bpf.h.
 *
 * Needs, included before it: core/maps.bpf.h.
 */
#ifndef DEPWATCH_CONN_BPF_H
#define DEPWATCH_CONN_BPF_H

#include "depwatch.h"
#include "h2/connstate.h"
#include "answer/connstate.h"
#include "tls/connstate.h"

enum dw_role {
	DW_ROLE_NONE = 0,
	DW_ROLE_OUTBOUND = 1,	/* this host called connect() */
	DW_ROLE_INBOUND = 2,	/* accepted from a listener: calls are requests this host answers */
};

/*
 * Socket-local state (SK_STORAGE): lives and dies with the socket. The
 * transport's fields, then each layer above TCP's, one sub-struct each
 * (their types in each layer's connstate.h: the one place the transport
 * names the layers' state), each reset in one assignment when a
 * connection begins (slots.bpf.h). The transport reads none of them: what
 * it needs to know of a layer it asks the seam (layers/conn.bpf.h).
 */
struct dw_conn {
	struct dw_dest_key dest;	/* its peer (the overflow key if no slot was left for it) */
	__u32 slot;			/* its row in dest_stats, dest_details and slot_cfg (DW_SLOT_OVERFLOW: none left) */
	__u32 pend;			/* its entry in the pending table + 1; 0: none (table full) */
	__u64 call_start_ns;		/* 0: no call outstanding */
	__u64 connect_start_ns;		/* 0: not connecting */
	__u64 last_ns;			/* its newest event: adoption or a call's end (CLOCK_MONOTONIC) */
	__u32 req_seq;			/* outbound: TCP sequence number of the outstanding call's first byte */
	__u32 rcv_seq;			/* outbound, syscalls backend: rcv_nxt when the outstanding call's send began */
	__u32 closed;			/* 1 once nothing can answer: TCP_CLOSE, or outbound the peer's FIN */
	__u32 sender_tid;		/* outbound: the thread that sent the outstanding call (0: unknown) */
	__u32 sender_nvcsw;		/* its voluntary context switches then (low 32 bits): did it wait since */
	__u32 caller;			/* its row in caller_stats (issue 16), taken once; 0: none */
	__u8 role;			/* enum dw_role */
	__u8 established;		/* counted in conns_opened, not yet in conns_closed */
	__u8 process_noted;		/* inbound: its first request's process went to the row */
	__u8 multiplexed;		/* seen carrying overlapping requests: its calls are burst timings */
	__u8 goodbye;			/* inbound: the client closed right behind the outstanding request */
	__u8 overlaps;			/* outbound: data seen that the peer sent before it had the request */
	__u8 abort_failed;		/* bpf_sock_destroy() refused it once, or it went to sock_diag: the abort iterators leave it alone */
	struct dw_conn_h2 h2;		/* the stream layer's (h2/connstate.h): whether its calls are HTTP/2 streams */
	struct dw_conn_answer answer;	/* the answers' (answer/connstate.h): status lines, owed answers, goodbyes */
	struct dw_conn_tls tls;		/* TLS's (tls/connstate.h): a hello seen, the session tied */
};

/* The kernel's constants the call model reads (vmlinux.h has no #defines). */
#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define RCV_SHUTDOWN 1
#define MSG_PEEK 0x2
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

/* A pending-table entry by its number + 1 (0: none), as a stream keeps it (streams.bpf.h). */
static __always_inline struct dw_pending_entry *pend_entry(__u32 pend)
{
	__u32 idx = pend - 1;

	return pend ? bpf_map_lookup_elem(&pending, &idx) : 0;
}

/* A stream's entry goes back: it ended. */
static __always_inline void pend_release(__u32 pend)
{
	struct dw_pending_entry *e = pend_entry(pend);
	__u32 idx = pend - 1;

	if (!e)
		return;
	e->call_start_ns = 0;
	bpf_map_push_elem(&pending_free, &idx, 0);
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

#endif /* DEPWATCH_CONN_BPF_H */
