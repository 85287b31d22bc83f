/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Aborting a TCP connection through the kernel's socket diagnostics
 * (netlink NETLINK_SOCK_DIAG, message SOCK_DESTROY: what `ss -K` sends),
 * for kernels without the bpf_sock_destroy kfunc (before 6.5). The kernel
 * finds the socket by its 4-tuple, checks its cookie (the same socket, not
 * a new one on the same ports) and runs tcp_abort() on it, as the kfunc
 * does: the local caller gets ECONNABORTED, the peer a reset. It needs
 * CONFIG_INET_DIAG_DESTROY and CAP_NET_ADMIN, and acts in the network
 * namespace the netlink socket was created in.
 *
 * The messages are built and the answers parsed by the pure functions
 * below (unit-tested); the I/O is one send and one non-blocking receive:
 * the kernel answers inside the send.
 */
#ifndef DW_SOCKDIAG_H
#define DW_SOCKDIAG_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

struct dw_abort_sock;

/* Room for any request built here. */
#define DW_SOCKDIAG_REQ_LEN 128

/*
 * The SOCK_DESTROY request for s into buf (at least DW_SOCKDIAG_REQ_LEN):
 * its length, or 0 for a family sock_diag cannot look up.
 */
size_t dw_sockdiag_destroy_req(void *buf, const struct dw_abort_sock *s, uint32_t seq);
/* A dump request for TCP sockets in no state (it lists nothing): whether tcp_diag answers at all. */
size_t dw_sockdiag_probe_req(void *buf, uint32_t seq);
/*
 * The kernel's answer to request seq: 0 (acknowledged, or a dump's end
 * without error), the negative errno it answered, -EPROTO for anything
 * else (too short, another sequence number, another message type).
 */
int dw_sockdiag_answer(const void *buf, size_t len, uint32_t seq);

/* A NETLINK_SOCK_DIAG socket in the caller's network namespace; -errno. */
int dw_sockdiag_open(void);
/* Destroys the socket s names, through fd (from dw_sockdiag_open): 0 or -errno. */
int dw_sockdiag_destroy(int fd, const struct dw_abort_sock *s);
/*
 * Whether this kernel can destroy TCP sockets through sock_diag: 0, or
 * -errno with why (for the start line) in why.
 */
int dw_sockdiag_probe(char *why, size_t len);

#endif /* DW_SOCKDIAG_H */
