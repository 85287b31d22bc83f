// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Go's TLS uprobes on one file (goattach.h). */
#include "discovery/golang/goattach.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tls/go/gotls.h"
#include "discovery/golang/goprobe.h"

/* The layouts put in go_layouts so far (the daemon's one thread): slot i holds lay[i]. */
static struct dw_go_layout lay[DW_GO_LAYOUTS];
static unsigned nlay;

/* The slot of this layout, put in the map if new; -1 when all are taken. */
static int layout_slot(struct bpf_object *obj, const struct dw_go_fdchain *c, char *why, size_t whylen)
{
	struct dw_go_layout l = { .valid = 1, .conn_iface = c->conn_iface, .conn_fd = c->conn_fd,
				  .pfd_sysfd = c->netfd_pfd + c->pfd_sysfd };
	struct bpf_map *m = bpf_object__find_map_by_name(obj, "go_layouts");
	__u32 i;

	for (i = 0; i < nlay; i++)
		if (!memcmp(&lay[i], &l, sizeof(l)))
			return (int)i;
	if (nlay == DW_GO_LAYOUTS) {
		snprintf(why, whylen, "more than %d distinct Go struct layouts (DW_GO_LAYOUTS)", DW_GO_LAYOUTS);
		return -1;
	}
	if (!m || bpf_map_update_elem(bpf_map__fd(m), &i, &l, BPF_ANY)) {
		snprintf(why, whylen, "go_layouts: %s", m ? strerror(errno) : "no such map");
		return -1;
	}
	lay[nlay] = l;
	return (int)nlay++;
}

static int attach_one(struct bpf_object *obj, const char *prog, const char *path, uint64_t off, __u64 cookie,
		      struct dw_tls_links *out, char *why, size_t whylen)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie);
	struct bpf_program *p = bpf_object__find_program_by_name(obj, prog);
	struct bpf_link *link;
	long err;

	if (out->n == DW_TLS_LINKS_MAX) {
		snprintf(why, whylen, "more than %d uprobes for one file (DW_TLS_LINKS_MAX)", DW_TLS_LINKS_MAX);
		return -1;
	}
	if (!p) {
		snprintf(why, whylen, "no program %s in the BPF object", prog);
		return -1;
	}
	/* pid -1: every process running the file, now and later; never a uretprobe (doc/go.md) */
	link = bpf_program__attach_uprobe_opts(p, -1, path, (size_t)off, &opts);
	err = libbpf_get_error(link);
	if (!link || err) {
		err = err ? err : -errno;
		snprintf(why, whylen, "%s at offset 0x%llx: %s", prog, (unsigned long long)off, strerror((int)-err));
		return -1;
	}
	out->l[out->n++] = link;
	return 0;
}

int dw_go_attach_file(struct bpf_object *obj, const char *path, struct dw_tls_links *out, char *why,
		      size_t whylen)
{
	static struct dw_go_probes p;	/* large (the RET lists); one attach at a time */
	int slot, rc = 0;

	out->n = 0;
	if (dw_go_probe_points(path, &p, why, whylen))
		return -1;
	slot = layout_slot(obj, &p.fd, why, whylen);
	if (slot < 0)
		return -1;
	rc |= attach_one(obj, "dw_go_tls_write", path, p.write.probe_off, slot, out, why, whylen);
	/* the exits past the defers: one probe at the closure's stack check, the other RETs as before */
	if (!rc && p.write.defer_off)
		rc |= attach_one(obj, "dw_go_tls_write_defer", path, p.write.defer_off,
				 DW_GO_CK(slot, p.write.defer_result, 0, p.write.size, p.write.defer_lo), out, why, whylen);
	for (unsigned i = 0; !rc && i < p.write.nkeep; i++)
		rc |= attach_one(obj, "dw_go_tls_write_ret", path, p.write.keep_off[i], slot, out, why, whylen);
	if (!rc && p.read.defer_spill) {
		/* Read seen at its return alone: its arguments in its frame; its other exits return nothing */
		rc |= attach_one(obj, "dw_go_tls_read_done", path, p.read.defer_off,
				 DW_GO_CK(slot, p.read.defer_result, p.read.defer_spill, p.read.size, p.read.defer_lo),
				 out, why, whylen);
	} else {
		if (!rc)
			rc |= attach_one(obj, "dw_go_tls_read", path, p.read.probe_off, slot, out, why, whylen);
		if (!rc && p.read.defer_off)
			rc |= attach_one(obj, "dw_go_tls_read_defer", path, p.read.defer_off,
					 DW_GO_CK(slot, p.read.defer_result, 0, p.read.size, p.read.defer_lo), out, why,
					 whylen);
		for (unsigned i = 0; !rc && i < p.read.nkeep; i++)
			rc |= attach_one(obj, "dw_go_tls_read_ret", path, p.read.keep_off[i], slot, out, why, whylen);
	}
	if (!rc && p.shake_off)
		rc |= attach_one(obj, "dw_go_tls_handshake", path, p.shake_off, slot, out, why, whylen);
	if (rc) {
		dw_tls_detach_file(out);
		return -1;
	}
	if (p.read.defer_spill)
		snprintf(why, whylen, "%s, %u RETs in Write (%u exits at its deferred closure), Read at its deferred "
			 "closure alone (%u exits, its arguments in its frame), struct offsets from %s", p.build.version,
			 p.write.nkeep, p.write.defer_exits, p.read.defer_exits,
			 p.fd_source == DW_GO_FD_DWARF ? "DWARF" : "the table");
	else
		snprintf(why, whylen, "%s, %u RETs in Write (%u exits at its deferred closure), %u in Read (%u), "
			 "struct offsets from %s", p.build.version, p.write.nkeep, p.write.defer_exits, p.read.nkeep,
			 p.read.defer_exits, p.fd_source == DW_GO_FD_DWARF ? "DWARF" : "the table");
	return 0;
}
