/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The seam between the transport call model (core/) and the layers above
 * TCP, for a connection's TCP events: what HTTP/2's streams (h2/), TLS
 * sessions (tls/) and the answers (answer/) do when the connection's state
 * moves (core/states.bpf.h) and when it is let go at TCP_CLOSE. The events
 * of a call's bytes are layers/bytes.bpf.h's, a call's end
 * layers/callend.bpf.h's.
 *
 * Declarations only: the entries are defined in layers/state.bpf.c, which
 * includes the layers, and reach the TCP program (core/tcp.bpf.c) through
 * the static linker (bpftool gen object). The state program needs the
 * layers, honestly: a connection that closes must end its HTTP/2 streams
 * (nothing answers them once the server closed), its TLS session's
 * outstanding call and link, and an answer owed to a read nobody makes.
 * But it needs them only at those ends, so its source sees this seam and
 * nothing of HTTP/2 or TLS (no frame walker, stream table or session
 * map): a program includes only what it uses. __hidden: after the link
 * the verifier checks each entry as a static subprogram, in its caller's
 * context (the trusted socket pointer socket storage needs), as it did
 * when they were inlined; the call is one frame more on the stack.
 *
 * Needs, included before it: core/conn.bpf.h.
 */
#ifndef DEPWATCH_LAYERS_STATE_BPF_H
#define DEPWATCH_LAYERS_STATE_BPF_H

/*
 * The connection's TCP state moved, before the transport looks at its
 * outstanding call: each layer's own end (layers/state.bpf.c says in
 * which order and why).
 */
__hidden int layers_state(const struct sock *sk, struct dw_conn *conn, int oldstate, int newstate);

/* At TCP_CLOSE, the connection let go (conn_forget()): what the layers count of it. */
__hidden int layers_forget(struct dw_conn *conn);

#endif /* DEPWATCH_LAYERS_STATE_BPF_H */
