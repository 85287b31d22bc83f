/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading an ELF object's symbols for the TLS discovery: which of the
 * names it cares about the object defines (logic/discovery/tlsfind.h's DW_TLS_SYM_*),
 * and the file offsets of the OpenSSL functions the uprobes attach to.
 */
#ifndef DW_TLS_ELFSYMS_H
#define DW_TLS_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>
#include "logic/discovery/tlsfind.h"

/*
 * The functions the uprobes attach to: X(id, symbol, DW_TLS_SYM_* bit or 0).
 * A new one is a line here and its rows in attach.c's dw_tls_probes[]. The
 * inner ones have no symbol: found by decoding the wrappers
 * (logic/discovery/sslinner.h), they take the place of both API forms.
 */
#define DW_TLS_FNS(X)							\
	X(WRITE, "SSL_write", DW_TLS_SYM_SSL_WRITE)			\
	X(WRITE_EX, "SSL_write_ex", DW_TLS_SYM_SSL_WRITE_EX)		\
	X(READ, "SSL_read", DW_TLS_SYM_SSL_READ)			\
	X(READ_EX, "SSL_read_ex", DW_TLS_SYM_SSL_READ_EX)		\
	X(FREE, "SSL_free", DW_TLS_SYM_SSL_FREE)				\
	X(DO_HANDSHAKE, "SSL_do_handshake", 0)				\
	X(WRITE_INNER, NULL, 0)						\
	X(READ_INNER, NULL, 0)

enum dw_tls_fn {
#define DW_TLS_FN_ENUM(id, sym, bit) DW_TLS_FN_##id,
	DW_TLS_FNS(DW_TLS_FN_ENUM)
#undef DW_TLS_FN_ENUM
	DW_TLS_FN_COUNT
};

struct dw_tls_elf {
	unsigned syms;				/* DW_TLS_SYM_* */
	uint64_t offset[DW_TLS_FN_COUNT];	/* in the file, for the uprobe; 0: absent (or taken by an inner one) */
	uint64_t vaddr[DW_TLS_FN_COUNT];	/* the symbol's address as linked */
};

/*
 * Reads path's .dynsym and .symtab (defined functions only), and where both
 * forms of a read (SSL_read, SSL_read_ex) or of a write reach one inner
 * function, puts its offset in WRITE_INNER or READ_INNER and clears the
 * wrappers' (sslinner.h: one uprobe pair on an emulated instruction for
 * two on single-stepped ones). 0, or -errno
 * (-ENOEXEC: not ELF); err gets a line on failure.
 */
int dw_tls_elf_read(const char *path, struct dw_tls_elf *out, char *err, size_t errlen);

#endif /* DW_TLS_ELFSYMS_H */
