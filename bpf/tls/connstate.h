/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * TLS's per-connection state (tls/): its room in a connection's struct
 * dw_conn (core/conn.bpf.h), one sub-struct, reset in one assignment when
 * a connection begins. A TLS session's link (tls_links) is a copy of its
 * connection's struct dw_conn, whose ssl, tgid and sk say whose it is and
 * whose tx and rx count its plaintext.
 */
#ifndef DEPWATCH_TLS_CONNSTATE_H
#define DEPWATCH_TLS_CONNSTATE_H

#include "dwcompat.h"
#include "depwatch.h"

/* dw_conn_tls.own: whose the connection's calls are */
enum dw_tls_own {
	DW_TLS_NONE = 0,	/* not decided: no TLS send seen yet */
	DW_TLS_OWNED = 1,	/* tied to a session: its calls are the plaintext's (tls_links) */
	DW_TLS_UNLINKED = 2,	/* a TLS send with no session to tie: the record-level model */
};

struct dw_conn_tls {
	/* TLS plaintext (bpf/tls/tlslink.bpf.h): whose session owns its calls */
	__u64 ssl;		/* the SSL pointer of the session tied to it */
	__u64 sk;		/* the socket's address (a link's copy says whose it is) */
	__u64 next_ns;		/* multiplexed TLS: a request sent during the burst, the next burst's start;
				 * a link's copy: the peer's FIN came then, no call begins after it */
	__u32 tgid;		/* the process the session lives in */
	__u32 tx;		/* a link's copy: plaintext bytes written, the stream layer's sequence */
	__u32 rx;		/* a link's copy: plaintext bytes read */
	__u32 rx_mark;		/* multiplexed TLS, sock backend: rcv_nxt at the last data_ready */
	__u8 hello;		/* its first bytes were a TLS hello (bpf/tls/hello.h) */
	__u8 own;		/* enum dw_tls_own */
	__u8 live;		/* counted in dw_tls_live (issue 36: the receive's TLS gate) */
	__u8 looks;		/* sends left to look at for a TLS hello after plaintext (STARTTLS: h2detect.bpf.h) */
	__u8 pad[4];
};

/* The connection carries TLS: its first bytes were a hello (bpf/tls/hello.h). */
static inline bool dw_tls_hello(const struct dw_conn_tls *t)
{
	return t->hello;
}

/*
 * On a multiplexed TLS connection, len bytes one way are a control frame
 * (DW_TLS_SMALL, bpf/depwatch.h: a PING, a WINDOW_UPDATE), no request or
 * answer.
 */
static inline bool dw_tls_control(const struct dw_conn_tls *t, __u32 len)
{
	return t->hello && len <= DW_TLS_SMALL;
}

#endif /* DEPWATCH_TLS_CONNSTATE_H */
