/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Attaching the TLS uprobes (bpf/tls/ssl.bpf.c) to one ELF file, all of its
 * present symbols or none; the one table of {symbol, program, is_ret}.
 */
#ifndef DW_TLS_ATTACH_H
#define DW_TLS_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include "discovery/tls/elfsyms.h"
#include "discovery/tlslinks.h"

struct bpf_object;

/* The contract's table: the symbol each program attaches to, at its entry or its return. */
struct dw_tls_probe {
	enum dw_tls_fn fn;	/* its symbol (elfsyms.c's names) */
	const char *prog;	/* the program in bpf/tls/ssl.bpf.c */
	bool is_ret;		/* a uretprobe */
};
extern const struct dw_tls_probe dw_tls_probes[];
extern const size_t dw_tls_nprobes;

/*
 * Attaches every program of the table whose symbol path holds (e->offset)
 * to path (a path the daemon can open: /proc/PID/root/...; the kernel
 * keys the uprobe on the inode, so every process that maps it is traced).
 * All or nothing: on failure nothing is left, why says which and why.
 */
int dw_tls_attach_file(struct bpf_object *obj, const char *path, const struct dw_tls_elf *e,
		       struct dw_tls_links *out, char *why, size_t whylen);

#endif /* DW_TLS_ATTACH_H */
