/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stream layer's per-connection state (h2/): its room in a
 * connection's struct dw_conn (core/conn.bpf.h), one sub-struct, reset in
 * one assignment when a connection or a TLS session begins.
 */
#ifndef DEPWATCH_H2_CONNSTATE_H
#define DEPWATCH_H2_CONNSTATE_H

#include "dwcompat.h"

/*
 * Whether a connection's calls are HTTP/2 streams (bpf/h2/streams.bpf.h).
 * Connections open before the start are never looked at (their first
 * bytes went by); a new one is, once per direction.
 */
enum dw_h2_state {
	DW_H2_UNKNOWN = 0,	/* no first bytes looked at yet: today's model so far */
	DW_H2_NEVER = 1,	/* not cleartext HTTP/2: today's model */
	DW_H2_MAYBE = 2,	/* one direction's first bytes are HTTP/2's, the client's preface not whole yet */
	DW_H2_ON = 3,		/* h2c: a call per stream */
	DW_H2_LOST = 4,		/* h2c whose frames the parser lost step in: today's model, multiplexed */
	DW_H2_TLS = 5,		/* TLS: today's model; the server's hello still to be read (TLS 1.2's ALPN) */
};

/* dw_conn_h2.seen: a direction's first bytes looked at; a first read still to look at (sock backend) */
#define DW_H2_SEEN_TX 1
#define DW_H2_SEEN_RX 2
#define DW_H2_RX_PENDING 4

struct dw_conn_h2 {
	__u8 state;	/* enum dw_h2_state: whether its calls are HTTP/2 streams */
	__u8 seen;	/* DW_H2_SEEN_* bits: which directions' first bytes were looked at */
};

/* A new connection's, or a new TLS session's: not looked at yet, or never where the layer is off. */
static inline struct dw_conn_h2 dw_conn_h2_fresh(__u32 enabled)
{
	return (struct dw_conn_h2){ .state = enabled ? DW_H2_UNKNOWN : DW_H2_NEVER };
}

#endif /* DEPWATCH_H2_CONNSTATE_H */
