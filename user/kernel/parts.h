/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The object's optional parts (issue 47), one table in parts.c: TLS, the
 * HTTP/2 copy, DNS's close path, DNS, the abort iterator, enforcement.
 * Each is left out of the object before a load when --without withholds
 * it, the probe finds it missing, or the kernel refused it; on a refusal
 * of the object, the next still in it goes, in one order. loader.c alone
 * calls these: it loads, and where it attaches gives a refused part's reason.
 */
#ifndef DW_PARTS_H
#define DW_PARTS_H

#include <stdbool.h>
#include <stddef.h>

struct dw_bpf;

/* In the order a refusal drops them; a bit each in struct dw_bpf's refused. */
enum dw_part {
	DW_PART_TLS,		/* the dw_ssl_* and dw_go_* uprobes, the exec watch */
	DW_PART_H2,		/* the sock backend's HTTP/2 receive program, dw_h2_copy */
	DW_PART_DNS_CLOSE,	/* DNS's close path, dw_dns_release (issue 48) */
	DW_PART_DNS,		/* DNS over UDP (issue 35) */
	DW_PART_ABORT,		/* the abort iterator */
	DW_PART_ENFORCE,	/* the four cgroup refusal programs */
	DW_NPARTS
};

/* After the probe, before the load: each part in or out, and why (b->h2_why, tls_why, abort_why). */
void dw_bpf_parts_decide(struct dw_bpf *b);
/*
 * The kernel refused the object (err): the first part still in it is marked
 * refused, with a warning naming it. false: no optional part is left to drop.
 */
bool dw_bpf_part_drop(struct dw_bpf *b, int err);
/* Whether the kernel refused part; if so its reason, "CAUSE: LOSS" (its hook's, by name), into buf. */
bool dw_bpf_part_refused(const struct dw_bpf *b, enum dw_part part, char *buf, size_t len);

#endif /* DW_PARTS_H */
