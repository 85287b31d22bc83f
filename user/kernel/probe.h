/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What this kernel can run (probe.c), for loader.c: which backend, which
 * programs to load, and what --without takes away. It reads the kernel
 * (BTF, tracefs) and marks programs not to load; loading, pinning and
 * attaching stay loader.c's, which alone calls these.
 */
#ifndef DW_PROBE_H
#define DW_PROBE_H

#include <stdbool.h>

struct dw_bpf;

/*
 * On a freshly opened skeleton: picks the backend (want: --backend, NULL
 * for the best the kernel has), checks the --without names against it,
 * marks the programs the kernel cannot run (or --without withholds) not
 * to load with why in b->progs, and sizes the maps for the backend.
 * 0, or -ENOTSUP / -EINVAL / -ENOENT once it has logged why.
 */
int dw_bpf_probe(struct dw_bpf *b, const char *want);

/* Whether --without names hook: treat it as absent from this kernel. */
bool dw_bpf_withheld(const struct dw_bpf *b, const char *hook);
/* A program another loaded one stands in for (user/kernel/hooks.c, instead_of): not loaded. */
bool dw_bpf_superseded(const struct dw_bpf *b, const char *name);

/* TLS (issue 32) before load: whether this kernel can take the uprobes (user/discovery/tls/); why not into why. */
bool dw_tls_supported(char *why, size_t len);

/* The program called name is not loaded. */
void dw_bpf_no_autoload(struct dw_bpf *b, const char *name);

#endif /* DW_PROBE_H */
