/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * TLS sessions tied to their TCP connections (issue 32): the TCP side of
 * the TLS plaintext model, whose uprobes are bpf/tls/ssl.bpf.c.
 *
 * The uprobes on SSL_write, SSL_read, SSL_do_handshake (and the _ex forms)
 * mark the calling thread with the session's SSL pointer while the call
 * runs (ssl_threads, keyed by pid_tgid). A library that owns its socket
 * (SSL_set_fd: OpenSSL's socket BIO) sends and receives the ciphertext
 * inside those calls, from that thread: the first TCP send on a connection
 * whose first bytes were a TLS hello (conn->tls.hello, bpf/tls/hello.h) made while the
 * thread is marked ties {ssl, tgid} to that socket. The socket, its
 * destination, its caller and its state are the connection's own: nothing
 * is guessed but which session it carries. A library with memory BIOs
 * (grpc-core, Python's asyncio SSLObject) writes the ciphertext itself after
 * SSL_write returns: there the thread's last SSL call, if it returned less
 * than DW_TLS_LATE_NS before and its session is tied to nothing yet, ties
 * it (tls_linked_late). A connection sending TLS with neither is counted
 * tls_unlinked once and keeps the record-level model.
 *
 * The link (tls_links) holds a copy of the connection's struct dw_conn:
 * its destination slot, pending entry and caller row, and the call state
 * of the plaintext calls, which the uprobes (which cannot reach socket
 * storage) drive with the call model's own call_begin/call_complete. The
 * connection itself is marked DW_TLS_OWNED, and its record-level events
 * stop making calls. SSL_free, and the socket's TCP_CLOSE, end the link's
 * outstanding call and drop the link.
 *
 * A hash, not an LRU: an evicted link would strand its outstanding call in
 * flight. It is bounded (DW_TLS_LINKS_MAX) and a session that finds it full
 * is counted (tls_links_full) and left to the record-level model.
 *
 * Its maps and their values' layouts (struct dw_ssl_thread, dw_tls_key) are
 * tls/maps.bpf.h's; a session's end is tls/tlsclose.bpf.h's.
 *
 * Needs, included before it: tls/maps.bpf.h, core/call.bpf.h, core/cascade.bpf.h.
 */
#ifndef DEPWATCH_TLSLINK_BPF_H
#define DEPWATCH_TLSLINK_BPF_H

#define DW_TLS_LATE_NS 20000000ULL	/* memory BIOs: the ciphertext of the thread's last SSL call, 20 ms */

/*
 * The socket's tie made by an SSL call (memory BIOs), if any. Not in the
 * syscalls backend's programs (syscalls.bpf.c defines DW_TLS_NO_OWNER):
 * its exit programs, which serve both directions, have no room left under
 * the verifier's limit; there the SSL call ties the connection itself
 * (tls_sys_rx above).
 */
#ifdef DW_TLS_NO_OWNER
#define tls_owner_of(skey) ((void)(skey), (struct dw_tls_key *)0)
#else
#define tls_owner_of(skey) ((struct dw_tls_key *)bpf_map_lookup_elem(&tls_owner, (skey)))
#endif

/* The Go session its handshake named for this socket, in the sending process (tls_go_owner). */
static __always_inline struct dw_tls_key *tls_go_owner_of(__u64 skey, __u32 tgid)
{
	struct dw_tls_key *k;

	if (!*(volatile __u32 *)&dw_go_owners)
		return 0;
	k = bpf_map_lookup_elem(&tls_go_owner, &skey);

	return k && k->tgid == tgid ? k : 0;
}

static __always_inline struct dw_conn *tls_link_of(__u64 ssl, __u32 tgid)
{
	struct dw_tls_key key = { .ssl = ssl, .tgid = tgid };

	return bpf_map_lookup_elem(&tls_links, &key);
}

/*
 * The thread's SSL call that this send is part of: the one it is inside,
 * or (memory BIOs) its last, returned within DW_TLS_LATE_NS, whose session
 * is tied to no socket yet.
 */
static __always_inline struct dw_ssl_thread *tls_sender(__u64 id, __u64 skey, bool *late)
{
	struct dw_ssl_thread *t = bpf_map_lookup_elem(&ssl_threads, &id);

	*late = false;
	/* a Go goroutine's mark names its socket: the thread may send for another goroutine */
	if (t && t->op == DW_SSL_GO)
		return t->inside && t->sk == skey ? t : 0;
	if (!t || t->inside)
		return t;
	if (bpf_ktime_get_ns() - t->done_ns > DW_TLS_LATE_NS || tls_link_of(t->ssl, id >> 32))
		return 0;
	*late = true;
	return t;
}

/* A new link's call state: none yet, its plaintext not looked at. */
static __always_inline void tls_link_init(struct dw_conn *l)
{
	l->call_start_ns = 0;
	l->closed = 0;
	/* its plaintext is looked at afresh: HTTP/2 or not (the stream layer's state, whole) */
	l->h2 = dw_conn_h2_fresh(dw_h2_enabled);
	/* the connection's tie (ssl, tgid, sk, own) stays: it says whose the link is */
	l->tls.next_ns = 0;
	l->tls.tx = 0;
	l->tls.rx = 0;
	l->answer.status = 0;	/* the plaintext's own status lines, from now on (tls_plain()) */
}

/*
 * Ties a session to sk; false (counted) if it cannot: the thread's
 * (tls_sender), or one an SSL call already took the socket for (tls_owner:
 * memory BIOs that read the ciphertext before the SSL call, see
 * tls_rx_candidate()).
 */
static __always_inline bool tls_link(const struct sock *sk, struct dw_conn *conn)
{
	__u64 id = bpf_get_current_pid_tgid(), skey = (__u64)(unsigned long)sk;
	struct dw_tls_key key = { .tgid = id >> 32 }, *o, *g = 0;
	struct dw_ssl_thread *t = 0;
	struct dw_conn *l;
	bool late = false;

	o = tls_owner_of(&skey);
	if (o) {
		key = *o;
		bpf_map_delete_elem(&tls_owner, &skey);
	} else {
		t = tls_sender(id, skey, &late);
		if (!t)
			g = tls_go_owner_of(skey, key.tgid);
		if (!t && !g) {
			global_count(G_tls_unlinked);
			conn->tls.own = DW_TLS_UNLINKED;
			return false;
		}
		key.ssl = t ? t->ssl : g->ssl;
		if (g || t->op == DW_SSL_GO)
			bpf_map_delete_elem(&tls_go_owner, &skey);
	}
	/*
	 * A record-level call begun before the tie (the ClientHello's arrival, inbound): no call of
	 * its own.
	 */
	if (conn->call_start_ns)
		call_end(conn, OUTCOME_DROPPED, bpf_ktime_get_ns());
	conn->tls.ssl = key.ssl;
	conn->tls.tgid = key.tgid;
	conn->tls.sk = skey;
	conn->tls.own = DW_TLS_OWNED;
	if (o)
		return true;
	if (bpf_map_update_elem(&tls_links, &key, conn, BPF_ANY)) {
		conn->tls.own = DW_TLS_UNLINKED;
		global_count(G_tls_links_full);
		global_count(G_tls_unlinked);
		return false;
	}
	l = bpf_map_lookup_elem(&tls_links, &key);
	if (l)
		tls_link_init(l);
	global_count(G_tls_linked);
	if (late)
		global_count(G_tls_linked_late);
	return true;
}

/*
 * A Go session whose handshake's sends found no tie (tls_unlinked) ties at a
 * later send on this very socket: one inside a probed Write, or any once a
 * handshakeContext entry named the socket (tls_go_owner).
 */
static __always_inline bool tls_go_sending(__u64 skey)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dw_ssl_thread *t = bpf_map_lookup_elem(&ssl_threads, &id);

	if (t && t->op == DW_SSL_GO && t->inside && t->sk == skey)
		return true;
	return tls_go_owner_of(skey, id >> 32) != 0;
}

/*
 * Whether the connection's calls are its TLS session's plaintext ones: the
 * record-level events then leave it alone. A send (in the sending task)
 * decides it the first time, and takes a later tie (tls_owner) over; other
 * events only look.
 */
static __always_inline bool tls_owned(const struct sock *sk, struct dw_conn *conn, bool send)
{
	__u64 skey = (__u64)(unsigned long)sk;

	if (!dw_tls_on || !conn->tls.hello)
		return false;
	if (conn->tls.own == DW_TLS_OWNED || !send)
		return conn->tls.own == DW_TLS_OWNED;
	if (conn->tls.own == DW_TLS_UNLINKED && !tls_owner_of(&skey) && !tls_go_sending(skey))
		return false;
	if (conn->role != DW_ROLE_OUTBOUND && conn->role != DW_ROLE_INBOUND)
		return false;
	return tls_link(sk, conn);
}

/*
 * A receive with bytes on a TLS connection no session owns, made outside
 * any SSL call (a library with memory BIOs reads the ciphertext, then hands
 * it to its SSL call in the same thread: grpc-core): the connection is the
 * thread's candidate (ssl_cands), which its next SSL call within
 * DW_TLS_LATE_NS, on a session tied to nothing, takes (ssl_take_cand() in
 * bpf/tls/ssl.bpf.c). A socket BIO's reads are inside SSL calls, and a peek
 * (nginx's, before the handshake) is no read: neither makes a candidate.
 */
static __always_inline void tls_rx_candidate(const struct sock *sk, struct dw_conn *conn, int ret, int flags)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dw_ssl_thread *t;
	struct dw_conn *c;

	/* not on the syscalls backend: tls_sys_rx_note() at the enter there */
	if (dw_backend == DW_BACKEND_SYSCALLS)
		return;
	if (!dw_tls_on || !conn->tls.hello || conn->tls.own == DW_TLS_OWNED || ret <= 0 || (flags & MSG_PEEK) ||
	    (conn->role != DW_ROLE_OUTBOUND && conn->role != DW_ROLE_INBOUND))
		return;
	t = bpf_map_lookup_elem(&ssl_threads, &id);
	if (t && t->inside)
		return;
	if (bpf_map_update_elem(&ssl_cands, &id, conn, BPF_ANY))
		return;
	c = bpf_map_lookup_elem(&ssl_cands, &id);
	if (c) {
		c->tls.sk = (__u64)(unsigned long)sk;
		c->last_ns = bpf_ktime_get_ns();
	}
}

/* syscalls backend, a receive's enter: the thread's candidate socket (tls_sys_rx above), not inside an SSL call. */
static __always_inline void tls_sys_rx_note(const struct sock *sk, const struct dw_conn *conn)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dw_tls_rx r = { .sk = (__u64)(unsigned long)sk };
	struct dw_ssl_thread *t;

	if (!dw_tls_on || !conn->tls.hello || conn->tls.own == DW_TLS_OWNED ||
	    (conn->role != DW_ROLE_OUTBOUND && conn->role != DW_ROLE_INBOUND))
		return;
	t = bpf_map_lookup_elem(&ssl_threads, &id);
	if (t && t->inside)
		return;
	r.ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&tls_sys_rx, &id, &r, BPF_ANY);
}

/* At TCP_CLOSE: a tie no send took over goes (the address may be another socket's next). */
static __always_inline void tls_owner_forget(const struct sock *sk, struct dw_conn *conn)
{
	__u64 skey = (__u64)(unsigned long)sk;

	if (dw_tls_on && conn->tls.hello && conn->tls.own != DW_TLS_OWNED) {
		bpf_map_delete_elem(&tls_owner, &skey);
		bpf_map_delete_elem(&tls_go_owner, &skey);
	}
}

/* At TCP_CLOSE (layers_forget()): the connection no longer counts in dw_tls_live. */
static __always_inline void tls_forget(struct dw_conn *conn)
{
	if (conn->tls.live) {
		conn->tls.live = 0;
		__sync_fetch_and_add(&dw_tls_live, -1);
	}
}

/* The record-level model of TLS connections (no session tied), from the call model through the seam (layers/bytes.bpf.h). */

/*
 * A multiplexed TLS connection's bursts (DW_TLS_SMALL): a request sent while
 * a burst is outstanding is noted, and when the burst ends at an answer
 * (which may be to an earlier request), the next burst starts at that
 * send. Requests sent during a burst are never left unwatched, so a hang
 * after them stays visible.
 */
static __always_inline void tls_note_send(struct dw_conn *conn, __u64 now, __u32 len)
{
	if (conn->tls.hello && conn->multiplexed && conn->call_start_ns && len > DW_TLS_SMALL && !conn->tls.next_ns)
		conn->tls.next_ns = now;
}

/*
 * A send behind the outstanding call on a TLS connection (no session tied): no new call, but a
 * multiplexed one's next burst may start at it (tls_note_send()). True if it was TLS's.
 */
static __always_inline bool tls_send_behind(struct dw_conn *conn, __u64 began_ns, __u32 len)
{
	if (!conn->tls.hello)
		return false;
	tls_note_send(conn, began_ns ? began_ns : bpf_ktime_get_ns(), len);
	return true;
}

/* A multiplexed TLS connection's send of at most DW_TLS_SMALL bytes: a control frame, nothing answers it. */
static __always_inline bool tls_unanswered(const struct dw_conn *conn, __u32 len)
{
	return conn->tls.hello && conn->multiplexed && len <= DW_TLS_SMALL;
}

/* The bytes that reached a TLS connection's socket since the last time (data_ready): DW_TLS_SMALL's measure. */
static __always_inline __u32 tls_rx_len(const struct sock *sk, struct dw_conn *conn)
{
	__u32 rcv_nxt, n;

	if (!conn->tls.hello)
		return 0;
	rcv_nxt = tcp_of(sk)->rcv_nxt;
	n = conn->tls.rx_mark ? rcv_nxt - conn->tls.rx_mark : DW_TLS_SMALL + 1;
	conn->tls.rx_mark = rcv_nxt;
	return n;
}

/*
 * Whether a receive of ret bytes may make a TLS candidate (tls_rx_candidate()), whatever else
 * it says: a TLS connection is live. Never in the syscalls backend's programs (DW_TLS_NO_OWNER).
 */
static __always_inline bool tls_recv_wants(int ret)
{
#ifdef DW_TLS_NO_OWNER
	return false;
#else
	return dw_tls_on && ret > 0 && *(volatile __u32 *)&dw_tls_live;
#endif
}

static __always_inline void tls_next_burst(struct dw_conn *conn)
{
	__u64 start = conn->tls.next_ns;

	if (!start)
		return;
	conn->tls.next_ns = 0;
	if (!*(volatile __u32 *)&conn->closed)
		call_begin(conn, start, 0, 0);
}

#endif /* DEPWATCH_TLSLINK_BPF_H */
