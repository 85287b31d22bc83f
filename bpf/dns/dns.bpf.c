// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * DNS over UDP as calls (issue 35; the matcher: bpf/dns/dnscall.bpf.h): the
 * cgroup egress and ingress programs, attached to the cgroup v2 root with
 * the enforcement programs, see every datagram of every process in every
 * network namespace, and the release program every socket's close; the
 * sweep (run by the daemon once a poll with BPF_PROG_TEST_RUN, never
 * attached) fails the queries past their dns_timeout. Both backends load
 * them alike.
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
#include "core/count.bpf.h"
#include "dns/maps.bpf.h"
#include "dns/dnscall.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define CGROUP_SKB_PASS 1

SEC("cgroup_skb/egress")
int dw_dns_egress(struct __sk_buff *skb)
{
	dw_on_dns_skb(skb, true);
	return CGROUP_SKB_PASS;
}

SEC("cgroup_skb/ingress")
int dw_dns_ingress(struct __sk_buff *skb)
{
	dw_on_dns_skb(skb, false);
	return CGROUP_SKB_PASS;
}

/*
 * A socket's release (issue 48): glibc closes its socket when its own
 * timeout passes, and a query whose socket is gone is never answered, so
 * it fails here rather than at its dns_timeout. Only UDP sockets, and only
 * while some query is outstanding on the host, look for a record: every
 * other release costs two reads. Loaded only with dw_dns_close_on.
 */
SEC("cgroup/sock_release")
int dw_dns_release(struct bpf_sock *ctx)
{
	if (ctx->protocol == IPPROTO_UDP && *(volatile __u32 *)&dw_dns_live)
		dns_closed(ctx);
	return 1;
}

/* How many queries the last sweep failed (for the daemon's log only). */
__u32 dw_dns_swept __weak;

SEC("raw_tp")
int dw_dns_sweep(void *ctx)
{
	struct dns_sweep_ctx sc = { .now = bpf_ktime_get_ns() };

	bpf_for_each_map_elem(&dns_queries, dns_sweep_one, &sc, 0);
	dw_dns_swept = sc.ended;
	return 0;
}
