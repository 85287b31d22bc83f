/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A tied TLS session's plaintext, fed to the call model: what OpenSSL's
 * uprobes (bpf/tls/ssl.bpf.c) and Go's crypto/tls uprobes (bpf/tls/go/gotls.bpf.c)
 * both call once they know how many bytes were written or read. One
 * model for both: HTTP/2 goes to the stream layer's walker (tail call,
 * dw_tls_walk, tls/walk.bpf.c), anything else is the request/response model here.
 *
 * Needs, included before it: tls/tlslink.bpf.h, answer/goodbye.bpf.h.
 */
#ifndef DEPWATCH_TLSPLAIN_BPF_H
#define DEPWATCH_TLSPLAIN_BPF_H

/* Plaintext is being written at now: an outbound call's start, an inbound request's answer. */
static __always_inline void tls_write_begins(struct dw_conn *l, __u64 now)
{
	struct dw_dest_stats *st;

	if (l->role == DW_ROLE_INBOUND) {
		if (l->call_start_ns)
			call_complete(l, now);
		row_process(l, bpf_get_current_pid_tgid() >> 32);
		return;
	}
	/* none after the peer's FIN (tls_on_state()) */
	if (l->call_start_ns || *(volatile __u32 *)&l->closed || (l->tls.next_ns && l->tls.next_ns < now))
		return;
	st = call_begin(l, now, 0, caller_of());
	if (!st)
		return;
	retry_check(l, st, now);
	/* the link went (TCP_CLOSE, SSL_free on another thread) as the call began: see outbound_start() */
	if (*(volatile __u32 *)&l->closed)
		call_end(l, OUTCOME_DROPPED, now);
}

/* Plaintext was read: an outbound call's answer, an inbound request. */
static __always_inline void tls_read_done(struct dw_conn *l, __u64 now)
{
	if (l->role == DW_ROLE_OUTBOUND) {
		if (l->call_start_ns)
			call_complete(l, now);
		return;
	}
	if (l->call_start_ns || *(volatile __u32 *)&l->closed)
		return;
	if (call_begin(l, now, 0, 0) && *(volatile __u32 *)&l->closed)
		call_end(l, OUTCOME_DROPPED, now);
}

/*
 * Plaintext not walked (not HTTP/2): an outbound call's start or answer, an inbound request or
 * answer. An outbound call's answer begins with its HTTP/1 status line, if it is HTTP/1: read
 * by the outcomes decoder (outcome.bpf.h), whose status the call's end counts.
 */
static __always_inline void tls_plain(struct dw_conn *l, __u8 way, __u64 addr, __u32 len, __u64 now)
{
	struct h2_bytes b = { .kind = H2_SRC_USER, .addr = addr, .len = len };

	/*
	 * A call or request that starts here: a protocol's goodbye if its bytes are one, whole
	 * (goodbye.h: PostgreSQL's Terminate, MySQL's COM_QUIT, memcached's quit), which the close
	 * that answers it then drops (tls_unlink()), as on cleartext.
	 */
	if (!l->call_start_ns && (way == H2_TX) == (l->role == DW_ROLE_OUTBOUND))
		l->answer.bye = dw_goodbye_size(len) && dw_goodbye_read(&b) == (int)len ? DW_BYE_YES : DW_BYE_NO;
	if (way == H2_TX) {
		tls_write_begins(l, now);
		return;
	}
	if (l->role == DW_ROLE_OUTBOUND && l->call_start_ns && l->answer.http1 != DW_HTTP1_NEVER)
		answer_read_user(l, &b);
	tls_read_done(l, now);
}

/*
 * len bytes of plaintext at addr one way, after seq: to the walker if the
 * session is or may be HTTP/2 (this program ends there), else, or if the
 * tail call fails, to the request/response model here.
 */
static __always_inline void tls_bytes(void *ctx, struct dw_conn *l, struct dw_tls_key *key, __u8 way,
				      __u64 addr, __u32 len, __u32 seq, __u64 now)
{
	__u32 zero = 0;
	struct dw_tls_job *j;

	if (dw_h2_enabled && l->h2.state != DW_H2_NEVER && l->h2.state != DW_H2_LOST &&
	    (j = bpf_map_lookup_elem(&tls_jobs, &zero))) {
		j->key = *key;
		j->addr = addr;
		j->len = len;
		j->seq = seq;
		j->now = now;
		j->way = way;
		bpf_tail_call(ctx, &tls_walkers, 0);
	}
	tls_plain(l, way, addr, len, now);
}

#endif /* DEPWATCH_TLSPLAIN_BPF_H */
