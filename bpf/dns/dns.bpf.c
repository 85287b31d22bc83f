// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * DNS over UDP as calls (issue 35; the matcher: bpf/dns/dnscall.bpf.h).
 * Nothing on the packet path (issue 46): the sock backend reads a query at
 * its send's end here (dw_dns_send, on sock_send_length: dns/dnssock.bpf.h)
 * and an answer in sk_data_ready's UDP branch (core/sock.bpf.c); the
 * syscalls backend both in its system calls' programs (core/syscalls.bpf.c,
 * dns/dnssys.bpf.h). Here too: the release program, at every socket's close
 * (cgroup/sock_release on the cgroup v2 root), and the sweep (run by the
 * daemon once a poll with BPF_PROG_TEST_RUN, never attached), which fails
 * the queries past their dns_timeout.
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
#include "dns/dnsuser.bpf.h"
#include "dns/dnssock.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Every send's end, of every socket (sock backend): UDP ones to a DNS port
 * are read. A TCP send pays this program's entry and one compare: the one
 * price DNS puts on TCP on this backend (bench/RESULTS.md, issue 46).
 */
SEC("tp_btf/sock_send_length")
int BPF_PROG(dw_dns_send, struct sock *sk, int ret, int flags)
{
	dns_sock_send(sk, ret);
	return 0;
}

/*
 * A socket's release (issue 48): glibc closes its socket when its own
 * timeout passes, and a query whose socket is gone is never answered, so
 * it fails here rather than at its dns_timeout. Only UDP sockets, and only
 * while some query is outstanding on the host, look for a record: every
 * other release costs two reads. Loaded only with dw_dns_close_on. The
 * context is the struct sock itself: its address names the socket as the
 * sends and receives name it (dnsuser.bpf.h's dns_sock_id), read as a number.
 */
SEC("cgroup/sock_release")
int dw_dns_release(struct bpf_sock *ctx)
{
	if (ctx->protocol == IPPROTO_UDP && *(volatile __u32 *)&dw_dns_live)
		dns_closed((__u64)(unsigned long)ctx);
	return 1;
}

struct dns_sweep_ctx {
	__u64 now;
	__u32 ended;
	__u32 early_left;
};

static long dns_sweep_one(struct bpf_map *map, struct dw_dns_key *key, struct dw_dns_query *val,
			  struct dns_sweep_ctx *ctx)
{
	struct dw_dns_query q = *val;
	struct dw_conn c;

	if (ctx->now - q.start_ns <= q.timeout_ns)
		return 0;
	if (bpf_map_delete_elem(map, key))
		return 0;
	dns_end(&q, DNS_TIMEOUT, ctx->now, &c);
	ctx->ended++;
	return 0;
}


/* An answer that waited for its query's send longer than any send takes: unmatched after all. */
static long dns_early_sweep_one(struct bpf_map *map, struct dw_dns_key *key, struct dw_dns_early *val,
				struct dns_sweep_ctx *ctx)
{
	__u32 quiet;

	if (ctx->now - val->at_ns <= DW_DNS_EARLY_NS) {
		ctx->early_left++;
		return 0;
	}
	quiet = val->quiet;
	if (!bpf_map_delete_elem(map, key) && !quiet)
		global_count(G_dns_unmatched);
	return 0;
}

/* How many queries the last sweep failed (for the daemon's log only). */
__u32 dw_dns_swept __weak;

SEC("raw_tp")
int dw_dns_sweep(void *ctx)
{
	struct dns_sweep_ctx sc = { .now = bpf_ktime_get_ns() };

	bpf_for_each_map_elem(&dns_queries, dns_sweep_one, &sc, 0);
	bpf_for_each_map_elem(&dns_early, dns_early_sweep_one, &sc, 0);
	dw_dns_early_n = sc.early_left;
	dw_dns_swept = sc.ended;
	return 0;
}
