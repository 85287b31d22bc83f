/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The uprobe links of one file's TLS probes, OpenSSL's (discovery/tls/attach.c) or Go's crypto/tls
 * (discovery/golang/goattach.c), kept and destroyed together by the TLS discovery (tls/).
 *
 * Outside both folders on purpose: the discovery (discovery/tls/scan.c) calls the Go attacher
 * (discovery/golang/goattach.h) as it calls the OpenSSL one, so golang/ sits below tls/ and must not
 * include anything of tls/. The one thing both attachers fill, this, is the piece they
 * share from below. (The other way round, golang/ registering its attacher with the
 * discovery, would add a function pointer set at start for no gain: the discovery is what
 * tells a Go file from a libssl, and it alone decides which attacher runs.)
 */
#ifndef DW_TLSLINKS_H
#define DW_TLSLINKS_H

#include "logic/discovery/goret.h"

struct bpf_link;

/* The links made on one file, destroyed together. */
/* OpenSSL: the table (11); Go: three entries and every RET of Write and Read (logic/discovery/goret.h) */
#define DW_TLS_LINKS_MAX (3 + 2 * DW_GO_MAX_RETS)
struct dw_tls_links {
	struct bpf_link *l[DW_TLS_LINKS_MAX];
	unsigned n;
};

/* Destroys every link of l; l is empty after. */
void dw_tls_detach_file(struct dw_tls_links *l);

#endif /* DW_TLSLINKS_H */
