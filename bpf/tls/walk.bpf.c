// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The walker of a tied TLS session's plaintext (issue 32), OpenSSL's and
 * Go's alike: the stream layer's walk of HTTP/2 inside TLS
 * (tls/tlsh2.bpf.h), and the request/response model where the bytes are
 * not HTTP/2 (tls/tlsplain.bpf.h). One program, which the uprobes' write
 * and read returns tail-call (tls_bytes(): OpenSSL's in tls/ssl.bpf.c,
 * Go's in tls/go/gotls.bpf.c) with their bytes in tls_jobs, so the walker
 * is verified once, not in each of them. In a file of its own, beside
 * both: neither library's uprobes reach it through the other's file.
 * Attached to no symbol: user space puts it in tls_walkers[0]
 * (user/kernel/loader.c), and loads it only when TLS is on
 * (user/kernel/parts.c).
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
#include "core/call.bpf.h"
#include "core/cascade.bpf.h"
#include "core/bytes.bpf.h"
#include "core/readend.bpf.h"
#include "answer/outcome.bpf.h"
#include "layers/callend.bpf.h"
#include "answer/answer.bpf.h"
#include "answer/goodbye.bpf.h"
#include "h2/maps.bpf.h"
#include "h2/h2conn.bpf.h"
#include "h2/h2detect.bpf.h"
#include "h2/h2stream.bpf.h"
#include "h2/hblock.bpf.h"
#include "h2/h2walk.bpf.h"
#include "tls/maps.bpf.h"
#include "tls/tlslink.bpf.h"
#include "tls/tlsclose.bpf.h"
#include "tls/tlsh2.bpf.h"
#include "tls/tlsplain.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The plaintext a uprobe left in tls_jobs: to the stream layer if HTTP/2, else the request/response model. */
SEC("uprobe")
int dw_tls_walk(struct pt_regs *ctx)
{
	__u32 zero = 0;
	struct dw_tls_job *j = bpf_map_lookup_elem(&tls_jobs, &zero);
	struct dw_tls_key key;
	struct dw_conn *l;

	if (!j)
		return 0;
	key = j->key;
	l = bpf_map_lookup_elem(&tls_links, &key);
	if (l && !tls_h2_bytes(l, &key, j->way, j->addr, j->len, j->seq, j->now))
		tls_plain(l, j->way, j->addr, j->len, j->now);
	return 0;
}
