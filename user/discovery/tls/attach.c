// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The TLS uprobes on one file (attach.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "discovery/tls/attach.h"

/*
 * The one table of the TLS contract (doc/tls.md): the BPF side's programs and
 * the OpenSSL symbol each attaches to. A symbol the file lacks (SSL_write_ex
 * before OpenSSL 1.1.1) is skipped with its programs; SSL_write and SSL_read
 * are required (logic/discovery/tlsfind.h's DW_TLS_SYM_NEEDED) before any attach.
 */
const struct dw_tls_probe dw_tls_probes[] = {
	{ DW_TLS_FN_WRITE, "dw_ssl_write", false },
	{ DW_TLS_FN_WRITE, "dw_ssl_write_ret", true },
	{ DW_TLS_FN_WRITE_EX, "dw_ssl_write_ex", false },
	{ DW_TLS_FN_WRITE_EX, "dw_ssl_write_ex_ret", true },
	{ DW_TLS_FN_READ, "dw_ssl_read", false },
	{ DW_TLS_FN_READ, "dw_ssl_read_ret", true },
	{ DW_TLS_FN_READ_EX, "dw_ssl_read_ex", false },
	{ DW_TLS_FN_READ_EX, "dw_ssl_read_ex_ret", true },
	{ DW_TLS_FN_FREE, "dw_ssl_free", false },
	/* the handshake marks the thread: a session is tied at its hello, before any record-level call */
	{ DW_TLS_FN_DO_HANDSHAKE, "dw_ssl_do_handshake", false },
	{ DW_TLS_FN_DO_HANDSHAKE, "dw_ssl_do_handshake_ret", true },
	/* where both forms reach one inner function (elfsyms.h), it has their place: SSL_read_ex's signature */
	{ DW_TLS_FN_WRITE_INNER, "dw_ssl_write_ex", false },
	{ DW_TLS_FN_WRITE_INNER, "dw_ssl_write_ex_ret", true },
	{ DW_TLS_FN_READ_INNER, "dw_ssl_read_ex", false },
	{ DW_TLS_FN_READ_INNER, "dw_ssl_read_ex_ret", true },
};
const size_t dw_tls_nprobes = sizeof(dw_tls_probes) / sizeof(dw_tls_probes[0]);
_Static_assert(sizeof(dw_tls_probes) / sizeof(dw_tls_probes[0]) <= DW_TLS_LINKS_MAX, "DW_TLS_LINKS_MAX");

int dw_tls_attach_file(struct bpf_object *obj, const char *path, const struct dw_tls_elf *e,
		       struct dw_tls_links *out, char *why, size_t whylen)
{
	out->n = 0;
	for (size_t i = 0; i < dw_tls_nprobes; i++) {
		const struct dw_tls_probe *p = &dw_tls_probes[i];
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = p->is_ret);
		struct bpf_program *prog;
		struct bpf_link *link;
		int err;

		if (!e->offset[p->fn])
			continue;
		prog = bpf_object__find_program_by_name(obj, p->prog);
		if (!prog) {
			snprintf(why, whylen, "no program %s in the BPF object", p->prog);
			dw_tls_detach_file(out);
			return -ENOENT;
		}
		/* pid -1: every process that maps the file, now and later */
		link = bpf_program__attach_uprobe_opts(prog, -1, path, (size_t)e->offset[p->fn], &opts);
		err = libbpf_get_error(link);
		if (!link || err) {
			err = err ? (int)err : -errno;
			snprintf(why, whylen, "%s at offset 0x%llx: %s", p->prog,
				 (unsigned long long)e->offset[p->fn], strerror(-err));
			dw_tls_detach_file(out);
			return err;
		}
		out->l[out->n++] = link;
	}
	return 0;
}
