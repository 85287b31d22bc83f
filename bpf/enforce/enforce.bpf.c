// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Enforcement: connect() to a dependency whose breaker is open fails at
 * once with ECONNREFUSED. Fail open on every path that is not a deliberate,
 * leased refusal: no breaker entry, an expired lease (the daemon is gone),
 * a dependency not set to enforce, a failed lookup -- all allow.
 * A destination ejected from its dependency (eject = on: an outlier among
 * its siblings) is refused the same way through its own entry, while the
 * dependency's is closed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "core/maps.bpf.h"
#include "core/conn.bpf.h"
#include "layers/conn.bpf.h"
#include "core/sockread.bpf.h"
#include "core/slots.bpf.h"
#include "dns/maps.bpf.h"
#include "enforce/maps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define IPPROTO_UDP 17

static __always_inline bool dns_port_on(__u32 port)
{
	__u8 *on = bpf_map_lookup_elem(&dns_ports, &port);

	return on && *on;
}
#define CGROUP_ALLOW 1
#define CGROUP_REJECT 0

/* The connecting task's network namespace: the socket's, unless it moved after socket(). */
static __always_inline __u32 current_netns(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return BPF_CORE_READ(task, nsproxy, net_ns, ns.inum);
}

/* family is a constant: a connect4 program may not even read user_ip6. */
static __always_inline void dest_of_connect(struct bpf_sock_addr *ctx, int family,
					    struct dw_dest_key *dest)
{
	__u32 *addr = (__u32 *)dest->addr;

	__builtin_memset(dest, 0, sizeof(*dest));
	dest->netns = current_netns();
	dest->port = bpf_ntohs(ctx->user_port);
	if (family == AF_INET) {
		dest->family = AF_INET;
		addr[0] = ctx->user_ip4;
		return;
	}
	dest->family = AF_INET6;
	addr[0] = ctx->user_ip6[0];
	addr[1] = ctx->user_ip6[1];
	addr[2] = ctx->user_ip6[2];
	addr[3] = ctx->user_ip6[3];
	dw_fold_v4mapped(dest);
}

/* Half-open lets a budget of probes through; the daemon sets it on entering half_open. */
static __always_inline int take_probe(struct dw_breaker_value *b)
{
	for (int i = 0; i < 4; i++) {
		__u32 left = *(volatile __u32 *)&b->probes_left;

		if (!left)
			return 0;
		if (__sync_val_compare_and_swap(&b->probes_left, left, left - 1) == left)
			return 1;
	}
	return 0;
}

static __always_inline void count_rejection(struct dw_dest_key *dest)
{
	__u32 slot = dest_claim(dest);
	struct dw_dest_stats *st = bpf_map_lookup_elem(&dest_stats, &slot);

	if (st)
		st->connects_rejected++;
}

enum verdict { NO_WORD, LET_THROUGH, REFUSE };

/* What one breakers map entry says: nothing (none, lapsed, closed), a probe through, or refuse. */
static __always_inline enum verdict entry_verdict(struct dw_breaker_key *key)
{
	struct dw_breaker_value *b = bpf_map_lookup_elem(&breakers, key);

	if (!b || bpf_ktime_get_ns() > b->lease_expires_ns || b->state == DW_BREAKER_CLOSED)
		return NO_WORD;
	if (b->state == DW_BREAKER_HALF_OPEN && take_probe(b))
		return LET_THROUGH;
	return REFUSE;
}

static __always_inline int dw_enforce_connect(struct bpf_sock_addr *ctx, int family)
{
	struct dw_breaker_key key = {};
	struct dw_dep_cfg *cfg;
	struct dw_dest_key dest;
	enum verdict v;

	if (ctx->type == SOCK_STREAM && ctx->protocol == IPPROTO_TCP) {
		dest_of_connect(ctx, family, &dest);
	} else if (ctx->type == SOCK_DGRAM && ctx->protocol == IPPROTO_UDP) {
		/* a resolver (issue 35): glibc connects its UDP socket, others sendmsg() to it */
		dest_of_connect(ctx, family, &dest);
		if (!dns_port_on(dest.port))
			return CGROUP_ALLOW;
	} else {
		return CGROUP_ALLOW;
	}
	key.dep_id = dep_of(&dest);
	cfg = bpf_map_lookup_elem(&dep_cfg, &key.dep_id);
	if (!cfg || !(cfg->enforce & DW_ENFORCE_CONNECT))
		return CGROUP_ALLOW;
	if (!key.dep_id)
		key.dest = dest;
	v = entry_verdict(&key);
	/* the dependency's breaker first; then the destination's ejection, if any */
	if (v == NO_WORD && key.dep_id) {
		key.dest = dest;
		v = entry_verdict(&key);
	}
	if (v != REFUSE)
		return CGROUP_ALLOW;
	count_rejection(&dest);
	bpf_set_retval(-ECONNREFUSED);
	return CGROUP_REJECT;
}

SEC("cgroup/connect4")
int dw_enforce4(struct bpf_sock_addr *ctx)
{
	return dw_enforce_connect(ctx, AF_INET);
}

SEC("cgroup/connect6")
int dw_enforce6(struct bpf_sock_addr *ctx)
{
	return dw_enforce_connect(ctx, AF_INET6);
}

/* An unconnected UDP socket's sendmsg() to a resolver (issue 35): refused as its connect() would be. */
SEC("cgroup/sendmsg4")
int dw_enforce_send4(struct bpf_sock_addr *ctx)
{
	return dw_enforce_connect(ctx, AF_INET);
}

SEC("cgroup/sendmsg6")
int dw_enforce_send6(struct bpf_sock_addr *ctx)
{
	return dw_enforce_connect(ctx, AF_INET6);
}
