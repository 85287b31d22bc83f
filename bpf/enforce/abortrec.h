/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The abort records' ABI (enforce = abort, abort_after, ejection): what
 * bpf/enforce/abort.bpf.c writes of each connection it chose and user/daemon/abort.c and
 * user/kernel/sockdiag.c read. Apart from depwatch.h because only they need it.
 */
#ifndef DEPWATCH_ABORTREC_H
#define DEPWATCH_ABORTREC_H

#include "depwatch.h"

/*
 * The abort iterators (iter/tcp, run by the daemon on demand: at a breaker
 * opening, at each poll while open, and when an abort_after deadline is
 * due) write one of these for each connection they chose: dw_abort for each
 * it aborted (bpf_sock_destroy) or failed to, dw_abort_list (kernels
 * without the kfunc) for each the daemon is to abort through sock_diag's
 * SOCK_DESTROY, which finds it by its 4-tuple and checks its cookie.
 */
enum dw_abort_reason { DW_ABORT_BREAKER = 1, DW_ABORT_TIMEOUT = 2, DW_ABORT_EJECT = 3 };

/* The socket as sock_diag looks it up (struct inet_diag_sockid). */
struct dw_abort_sock {
	__u64 cookie;			/* bpf_get_socket_cookie(): the same socket, not one reusing its 4-tuple */
	__u8 saddr[16];			/* local; AF_INET: the first 4 bytes */
	__u8 daddr[16];			/* remote */
	__u16 family;			/* the socket's: AF_INET, or AF_INET6 (also for IPv4-mapped peers) */
	__u16 sport, dport;		/* network byte order, as sock_diag takes them */
	__u16 pad;
	__u32 ifindex;			/* the device it is bound to, 0: none */
	__u32 pad2;
};

struct dw_abort_record {
	struct dw_dest_key dest;	/* the connection's destination (its row's key) */
	__u32 dep_id;			/* its configured dependency, 0: none */
	__u32 slot;
	__u8 reason;			/* enum dw_abort_reason */
	__u8 had_call;			/* a call was outstanding: its caller got the error */
	__u8 failed;			/* bpf_sock_destroy() refused: counted, not retried */
	__u8 pad;
	__s32 err;			/* what bpf_sock_destroy() returned */
	struct dw_abort_sock sock;
};

#endif /* DEPWATCH_ABORTREC_H */
