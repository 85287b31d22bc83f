// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* One file's TLS uprobe links (tlslinks.h). */
#include <bpf/libbpf.h>
#include "discovery/tlslinks.h"

void dw_tls_detach_file(struct dw_tls_links *l)
{
	for (unsigned i = 0; i < l->n; i++)
		bpf_link__destroy(l->l[i]);
	l->n = 0;
}
