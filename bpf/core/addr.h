/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Destination addresses, the one rule both places that build a struct
 * dw_dest_key follow: a connection's peer (sockread.bpf.h) and a connect()'s
 * target (enforce.bpf.c) must name the same row and the same breaker. A
 * pure header (dwcompat.h): the unit tests build it on the host.
 */
#ifndef DEPWATCH_ADDR_H
#define DEPWATCH_ADDR_H

#include "depwatch.h"

/*
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d, a dual-stack socket talking
 * to an IPv4 peer) counts as IPv4: the same destination, whichever socket
 * family reached it. Folds dest in place; anything else stays as it is.
 */
static __always_inline void dw_fold_v4mapped(struct dw_dest_key *dest)
{
	__u32 *addr = (__u32 *)dest->addr;

	if (dest->family != DW_AF_INET6 || addr[0] || addr[1] || addr[2] != dw_htonl(0xffff))
		return;
	dest->family = DW_AF_INET;
	addr[0] = addr[3];
	addr[2] = 0;
	addr[3] = 0;
}

#endif /* DEPWATCH_ADDR_H */
