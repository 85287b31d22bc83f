/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Attaching Go's crypto/tls uprobes (bpf/tls/go/gotls.bpf.c) to one Go ELF file, for the TLS
 * discovery (user/discovery/tls/scan.c) when a file's kind is Go: the probe points (goprobe.h), the
 * file's struct layout put in a go_layouts slot (one per distinct layout, shared by the
 * files of one Go version), then uprobes at Write's and Read's entries and at every RET
 * of each, the slot as their attach cookie. All or nothing. doc/go.md.
 */
#ifndef DW_GOATTACH_H
#define DW_GOATTACH_H

#include <stddef.h>

/* the links only (tlslinks.h says why not discovery/tls/attach.h): golang/ stays below the discovery in tls/ */
#include "discovery/tlslinks.h"

struct bpf_object;

/* 0: attached (out holds the links); -1: not probed, why[] says why ("go1.16.15: ..."). */
int dw_go_attach_file(struct bpf_object *obj, const char *path, struct dw_tls_links *out, char *why,
		      size_t whylen);

#endif
