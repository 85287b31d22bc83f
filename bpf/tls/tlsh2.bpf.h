/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HTTP/2 inside TLS (issue 32): a tied session's plaintext fed to the
 * stream layer (streams.bpf.h's walker, h2walk.bpf.h), one call per
 * stream, both directions, as on h2c. The bytes are the application's own
 * buffers, read in the uprobes (bpf/tls/ssl.bpf.c): SSL_write's at its entry,
 * SSL_read's at its return, as many as it returned. Only what the frame
 * walker reads is read: the 9-byte frame headers and the first bytes of a
 * response's HEADERS (its :status); nothing is copied out of the kernel.
 *
 * Recognised as on h2c, from the plaintext: the client's first bytes the
 * connection preface, the server's a SETTINGS frame. The direction's
 * "sequence number" is the plaintext bytes written or read so far
 * (dw_conn.tls.tx, tls_rx in the link's copy): a write retried after
 * SSL_ERROR_WANT_WRITE gives the same bytes again at the same place, and
 * the walker skips what it walked.
 *
 * The state (struct dw_h2_conn, 2.9 KiB) lives in tls_h2 (tls/maps.bpf.h),
 * keyed as the link; it goes with the link (tls/tlsclose.bpf.h), or at a desync (the session is then timed
 * request to response on its plaintext, as multiplexed).
 *
 * Needs, included before it: tls/tlsclose.bpf.h, h2/h2detect.bpf.h, h2/h2walk.bpf.h.
 */
#ifndef DEPWATCH_TLSH2_BPF_H
#define DEPWATCH_TLSH2_BPF_H

/* The session's first plaintext bytes one way: HTTP/2's (its state made), or not (NEVER). */
static __always_inline struct dw_h2_conn *tls_h2_first(struct dw_conn *l, struct dw_tls_key *key,
						       enum h2_way way, __u64 addr, __u32 len, __u32 seq,
						       __u8 side)
{
	static const struct dw_h2_conn fresh;
	struct h2_bytes b = { .addr = addr, .len = len, .kind = H2_SRC_USER };
	struct dw_h2_conn *h2;
	__u8 buf[16] = {};
	__u32 n;

	l->h2.seen |= way == H2_TX ? DW_H2_SEEN_TX : DW_H2_SEEN_RX;
	n = first_bytes(&b, 0, buf, false);
	if (!first_bytes_h2(buf, n, side)) {
		tls_h2_free(l, key, DW_H2_NEVER);
		return 0;
	}
	if (l->h2.state != DW_H2_UNKNOWN)
		return bpf_map_lookup_elem(&tls_h2, key);
	if (bpf_map_update_elem(&tls_h2, key, &fresh, BPF_ANY) ||
	    !(h2 = bpf_map_lookup_elem(&tls_h2, key))) {
		global_count(G_h2_state_full);
		l->h2.state = DW_H2_NEVER;
		conn_mark_multiplexed(l);
		return 0;
	}
	l->h2.state = DW_H2_MAYBE;
	dw_h2_dir_init(&h2->tx, way == H2_TX ? seq : l->tls.tx, way == H2_TX ? side : !side);
	dw_h2_dir_init(&h2->rx, way == H2_TX ? l->tls.rx : seq, way == H2_TX ? !side : side);
	return h2;
}

/*
 * A tied session's plaintext, len bytes at addr one way, the direction's
 * bytes before them seq (the caller has counted them already), at now: true if the
 * stream layer took it (its calls are streams), and the request/response
 * model on the plaintext must leave it alone.
 */
static __always_inline bool tls_h2_bytes(struct dw_conn *l, struct dw_tls_key *key, enum h2_way way,
					 __u64 addr, __u32 len, __u32 seq, __u64 now)
{
	__u8 side = (way == H2_TX) == (l->role == DW_ROLE_OUTBOUND) ? DW_H2_CLIENT : DW_H2_SERVER;
	struct h2_bytes b = { .addr = addr, .len = len, .seq = seq, .kind = H2_SRC_USER };
	struct dw_h2_dir *client;
	struct dw_h2_conn *h2;
	bool lost;

	if (!dw_h2_enabled || l->h2.state == DW_H2_NEVER || l->h2.state == DW_H2_LOST || !len)
		return false;
	if (!(l->h2.seen & (way == H2_TX ? DW_H2_SEEN_TX : DW_H2_SEEN_RX)))
		h2 = tls_h2_first(l, key, way, addr, len, seq, side);
	else
		h2 = bpf_map_lookup_elem(&tls_h2, key);
	if (!h2)
		return false;
	/* the walk and its sweep: h2walk.bpf.h, as for h2c */
	lost = h2_walk_user(l, h2, &b, now, way);
	if (lost) {
		struct dw_dest_stats *st = stats_of(l);

		tls_h2_free(l, key, DW_H2_LOST);
		conn_mark_multiplexed(l);
		if (st)
			st->h2_desync++;
		return false;
	}
	client = l->role == DW_ROLE_OUTBOUND ? &h2->tx : &h2->rx;
	if (l->h2.state == DW_H2_MAYBE && !client->pre)
		h2_on(l, now);
	if (l->role == DW_ROLE_INBOUND && way == H2_TX)
		row_process(l, bpf_get_current_pid_tgid() >> 32);
	return true;
}

#endif /* DEPWATCH_TLSH2_BPF_H */
