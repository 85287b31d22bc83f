// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The seam's entries for a connection's TCP events (declared in
 * layers/state.bpf.h, called by core/states.bpf.h in the TCP program,
 * core/tcp.bpf.c): no program of its own, only the two entries, linked
 * into the object with the programs. Here, not in tcp.bpf.c, so that the
 * TCP program's source includes the transport and this seam's declaration
 * and nothing of the layers: what a state change ends of HTTP/2, TLS and
 * the answers is the layers' business, reached through the seam.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
/* the transport a layer's end uses: a connection, its socket, its calls and their end */
#include "core/maps.bpf.h"
#include "core/conn.bpf.h"
#include "layers/conn.bpf.h"
#include "core/sockread.bpf.h"
#include "core/slots.bpf.h"
#include "core/count.bpf.h"
#include "core/call.bpf.h"
#include "core/cascade.bpf.h"
#include "core/bytes.bpf.h"
#include "core/readend.bpf.h"
/* the layers' ends at a state change: an owed answer, HTTP/2's open streams, a TLS session */
#include "answer/outcome.bpf.h"
#include "layers/callend.bpf.h"
#include "answer/answer.bpf.h"
#include "h2/maps.bpf.h"
#include "h2/h2conn.bpf.h"
#include "h2/h2stream.bpf.h"
#include "tls/maps.bpf.h"
#include "tls/tlslink.bpf.h"
#include "tls/tlsclose.bpf.h"
/* the seam's declarations, which these definitions must match */
#include "layers/state.bpf.h"

/*
 * The connection's TCP state moved, before the transport looks at its
 * outstanding call (core/states.bpf.h): a TLS session's end (its link goes
 * at TCP_CLOSE, its calls admit no new one after the peer's FIN); at
 * TCP_CLOSE an answer owed to a read nobody makes any more, settled
 * unread, and a first read never looked at no longer pending; then
 * HTTP/2's open streams, which nothing answers once the server closed.
 * The order is today's: the three touch state of their own (a link's
 * copy, the owed call, the streams), so no one's result depends on
 * another's.
 */
__noinline __hidden int layers_state(const struct sock *sk, struct dw_conn *conn, int oldstate, int newstate)
{
	if (!conn)
		return 0;
	tls_on_state(sk, conn, oldstate, newstate);
	if (newstate == TCP_CLOSE) {
		dw_answer_settle_unread(conn);	/* nobody reads an owed answer's status any more */
		h2_forget(conn);
	}
	h2_on_state(sk, conn, newstate);
	return 0;
}

/* At TCP_CLOSE, the connection let go (conn_forget()): TLS's count of live connections. */
__noinline __hidden int layers_forget(struct dw_conn *conn)
{
	if (conn)
		tls_forget(conn);
	return 0;
}
