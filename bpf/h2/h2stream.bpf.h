/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HTTP/2 streams as calls: a connection's stream slots (struct
 * dw_h2_stream), a stream's start at the client's HEADERS and its end at
 * the server's answer, reset or GOAWAY, or the connection's; each counted
 * like any call (count_start, count_end in call.bpf.h), a frame owing the
 * count to the walk's next step; and every open stream at once (a sweep).
 *
 * Needs, included before it: h2/h2conn.bpf.h, core/cascade.bpf.h.
 */
#ifndef DEPWATCH_H2STREAM_BPF_H
#define DEPWATCH_H2STREAM_BPF_H

static __always_inline struct dw_h2_stream *stream_slot(struct dw_h2_conn *h2, __u32 id, __u32 i)
{
	__u32 idx = dw_h2_probe(id, i) & (DW_H2_STREAMS - 1);

	return &h2->s[idx];
}

/*
 * Claims back the start of the stream in slot s (exactly once: a frame and
 * a close may race on two CPUs in the syscalls backend) and frees the
 * slot; its start, and its pending-table entry in *pend; 0 if someone else
 * ended it.
 */
static __always_inline __u64 stream_release(struct dw_h2_stream *s, __u32 *pend)
{
	__u64 start = s->start_ns;

	if (!start || __sync_val_compare_and_swap(&s->start_ns, start, 0) != start)
		return 0;
	*pend = __sync_lock_test_and_set(&s->pend, 0);
	barrier();
	*(volatile __u32 *)&s->id = 0;
	return start;
}

/* Ends the stream in slot s now, if nobody else did: counted at once (closes, sweeps). */
static __always_inline void stream_close(struct dw_conn *conn, struct dw_h2_stream *s,
					 enum call_outcome outcome, __u64 now)
{
	__u32 pend = 0;
	__u64 start = stream_release(s, &pend);

	if (!start)
		return;
	pend_release(pend);
	dw_count_end(conn, start, outcome, now, false);
}

/*
 * The slot holding stream id (early: its early answer instead), or
 * DW_H2_STREAMS. Finding and acting are apart so that the verifier walks
 * each action once, not once a probe.
 */
static __always_inline __u32 stream_find(struct dw_h2_conn *h2, __u32 id, bool early)
{
	for (__u32 i = 0; i < DW_H2_PROBES; i++) {
		__u32 idx = dw_h2_probe(id, i) & (DW_H2_STREAMS - 1);

		if (h2->s[idx].id == id && !h2->s[idx].early_ns == !early)
			return idx;
	}
	return DW_H2_STREAMS;
}

/* A free slot of stream id's window, claimed for it; DW_H2_STREAMS if none is free. */
static __always_inline __u32 stream_claim(struct dw_h2_conn *h2, __u32 id)
{
	for (__u32 i = 0; i < DW_H2_PROBES; i++) {
		__u32 idx = dw_h2_probe(id, i) & (DW_H2_STREAMS - 1);

		if (!h2->s[idx].id && __sync_val_compare_and_swap(&h2->s[idx].id, 0, id) == 0)
			return idx;
	}
	return DW_H2_STREAMS;
}

/* What the walk owes (struct dw_h2_cursor.owed). */
enum h2_owed {
	H2_OWE_NONE = 0,
	H2_OWE_START,		/* a stream started: its pending entry, its start counted */
	H2_OWE_END,		/* a stream ended */
	H2_OWE_CANCEL,		/* a stream ended, reset by its client */
	H2_OWE_EARLY,		/* a stream started whose answer came first: both counted */
};

static __always_inline void owe(struct dw_h2_cursor *c, __u8 what, __u64 start, __u64 end)
{
	c->owed = what;
	c->owed_start = start;
	c->owed_end = end;
}

/* The client opened stream id: its slot now, the rest owed. */
static __always_inline void stream_open(struct h2_walk *w, __u32 id)
{
	struct dw_h2_stream *s;
	struct dw_dest_stats *st;
	__u32 idx = stream_find(w->h2, id, true);
	__u64 early;

	if (idx < DW_H2_STREAMS) {
		s = &w->h2->s[idx];
		early = s->early_ns;
		if (!early || __sync_val_compare_and_swap(&s->early_ns, early, 0) != early)
			return;
		*(volatile __u32 *)&s->id = 0;
		w->cur->owed_outcome = early & 1 ? OUTCOME_FAILED : OUTCOME_COMPLETED;
		owe(w->cur, H2_OWE_EARLY, w->now, early & ~1ULL);
		return;
	}
	idx = stream_claim(w->h2, id);
	if (idx < DW_H2_STREAMS) {
		*(volatile __u64 *)&w->h2->s[idx].start_ns = w->now;
		w->cur->owed_slot = idx;
		owe(w->cur, H2_OWE_START, w->now, 0);
		return;
	}
	st = stats_of(w->conn);
	if (st)
		st->streams_untracked++;
}

/* A frame ended stream id (or answered one not opened yet, as far as the walk has seen). */
static __always_inline void stream_end(struct h2_walk *w, __u32 id, enum call_outcome outcome,
				       bool cancelled)
{
	__u32 idx = stream_find(w->h2, id, false), pend = 0;
	__u64 start;

	if (idx < DW_H2_STREAMS) {
		start = stream_release(&w->h2->s[idx], &pend);
		if (!start)
			return;
		w->cur->owed_pend = pend;
		w->cur->owed_outcome = outcome;
		owe(w->cur, cancelled ? H2_OWE_CANCEL : H2_OWE_END, start, w->now);
		return;
	}
	/* client ids only grow: a server frame above the newest is for a start not walked yet */
	if (cancelled || !(id & 1) || id <= w->h2->newest)
		return;
	idx = stream_claim(w->h2, id);
	if (idx < DW_H2_STREAMS)
		w->h2->s[idx].early_ns = (w->now & ~1ULL) | (outcome == OUTCOME_FAILED);
}

/*
 * A stream's start, owed: its own pending-table entry (in flight, with its
 * age: the oldest, the slow sample, the stall count it) and its start in
 * the counters. A close that raced the walk may have ended the stream
 * already: its entry then goes straight back.
 */
static __always_inline void pay_start(struct h2_walk *w, struct dw_h2_cursor *c)
{
	const struct dw_thread_req *caller = w->in_task ? caller_of() : 0;
	struct dw_h2_stream *s = &w->h2->s[c->owed_slot & (DW_H2_STREAMS - 1)];
	struct dw_pending_entry *e;
	struct dw_dest_stats *st;
	__u32 pend = pend_take();

	e = pend_entry(pend);
	if (e) {
		e->connect_start_ns = 0;
		e->slot = w->conn->slot;
		e->caller = w->conn->caller;
		e->caller_netns = caller ? caller->netns : 0;
		e->caller_port = caller ? caller->port : 0;
		e->flags = 0;
		e->call_start_ns = c->owed_start;
	}
	s->pend = pend;
	barrier();
	if (*(volatile __u64 *)&s->start_ns != c->owed_start &&
	    __sync_val_compare_and_swap(&s->pend, pend, 0) == pend)
		pend_release(pend);
	st = count_start(w->conn, c->owed_start);
	if (!st)
		return;
	st->calls_streams++;
	if (w->in_task)
		retry_check(w->conn, st, c->owed_start);
}

/* What the walk owes, paid: one of a start, an end, or both (an early answer). */
static __always_inline void pay(struct h2_walk *w, struct dw_h2_cursor *c)
{
	struct dw_dest_stats *st;
	__u8 what = c->owed;

	c->owed = H2_OWE_NONE;
	if (what == H2_OWE_START) {
		pay_start(w, c);
		return;
	}
	if (what == H2_OWE_EARLY) {
		st = count_start(w->conn, c->owed_start);
		if (st)
			st->calls_streams++;
	} else {
		pend_release(c->owed_pend);
	}
	count_end(w->conn, c->owed_start, c->owed_outcome, c->owed_end, false);
	if (what != H2_OWE_CANCEL)
		return;
	/* the client reset the stream: it gave up waiting (a gRPC deadline, a cancel) */
	st = stats_of(w->conn);
	if (st)
		st->calls_cancelled++;
	if (w->in_task)
		call_abandon(w->conn);
}

static __always_inline void h2_frame(struct h2_walk *w)
{
	struct dw_h2_frame f;
	__u32 last;

	int act;

	dw_h2_frame_of(w->dir, &f);
	act = dw_h2_action(&f, w->dir->side, w->h2->newest);
	if (act == DW_H2_ACT_OPEN) {
		w->h2->newest = f.id;
		stream_open(w, f.id);
	} else if (act == DW_H2_ACT_GOAWAY) {
		last = dw_h2_goaway_last(&f);
		if (last < w->cur->goaway)
			w->cur->goaway = last;
	} else if (act != DW_H2_ACT_NONE) {
		stream_end(w, f.id, act == DW_H2_ACT_ANSWER ? OUTCOME_COMPLETED : OUTCOME_FAILED,
			   act == DW_H2_ACT_CANCEL);
	}
}

/* ---- A connection's streams, all at once ---- */

struct h2_sweep {
	struct dw_conn *conn;
	struct dw_h2_conn *h2;
	__u64 now;
	__u32 above;		/* streams above this id end; 0: all of them (and early answers go) */
	__u32 outcome;
};

/* Stream i of a sweep: ended as outcome if its id is above above (0: all; early answers go). */
static __always_inline void sweep_step(struct h2_sweep *c, __u32 i, __u32 above, enum call_outcome outcome)
{
	struct dw_h2_stream *s = &c->h2->s[i & (DW_H2_STREAMS - 1)];

	if (!s->id || s->id <= above)
		return;
	if (s->early_ns) {
		if (!above) {
			s->early_ns = 0;
			*(volatile __u32 *)&s->id = 0;
		}
		return;
	}
	stream_close(c->conn, s, outcome, c->now);
}

static long sweep_one(__u32 i, void *ctx)
{
	struct h2_sweep *c = ctx;

	sweep_step(c, i, c->above, c->outcome);
	return 0;
}

/* Ends every open stream above id above (0: all) as outcome. */
static __always_inline void h2_sweep_at(struct dw_conn *conn, struct dw_h2_conn *h2, __u32 above,
					enum call_outcome outcome, __u64 now)
{
	struct h2_sweep c = { .conn = conn, .h2 = h2, .now = now, .above = above, .outcome = outcome };

	bpf_loop(DW_H2_STREAMS, sweep_one, &c, 0);
}

/* A connection's end: every stream failed, the constants in the callback (below). */
static long sweep_failed_one(__u32 i, void *ctx)
{
	sweep_step(ctx, i, 0, OUTCOME_FAILED);
	return 0;
}

/*
 * Every open stream ends failed, at a connection's or a session's end (h2_on_state,
 * tls/tlsclose.bpf.h). A global function: verified once per program rather than at every path
 * that reaches its callers (issues 45, 46). What it ends and how are constants in its callback,
 * not values read from the loop's context: a value the callback loads from the context and
 * needs precise (the outcome) trips this kernel's precision tracking when the context is a
 * global function's stack ("verifier bug: backtracking call unexpected regs", 6.18); for the
 * same reason the walk's own sweep (h2walk.bpf.h's walk_sweep) is a static subprogram.
 */
__weak __noinline int h2_sweep_failed(struct dw_conn *conn, struct dw_h2_conn *h2, __u64 now)
{
	struct h2_sweep c = { .conn = conn, .h2 = h2, .now = now };

	if (!conn || !h2)
		return 0;
	bpf_loop(DW_H2_STREAMS, sweep_failed_one, &c, 0);
	return 0;
}

/*
 * The connection's TCP state moved: nothing more answers its open streams
 * once the server closed (outbound: the peer's FIN or reset; inbound: the
 * socket is gone), and at TCP_CLOSE its state goes.
 */
static __always_inline void h2_on_state(const struct sock *sk, struct dw_conn *conn, int newstate)
{
	struct dw_h2_conn *h2;

	if (conn->h2.state != DW_H2_MAYBE && conn->h2.state != DW_H2_ON)
		return;
	if (newstate != TCP_CLOSE && !(newstate == TCP_CLOSE_WAIT && conn->role == DW_ROLE_OUTBOUND))
		return;
	h2 = h2_of(sk);
	if (h2)
		h2_sweep_failed(conn, h2, bpf_ktime_get_ns());
	if (newstate == TCP_CLOSE)
		h2_free(sk, conn, DW_H2_NEVER);
}

#endif /* DEPWATCH_H2STREAM_BPF_H */
